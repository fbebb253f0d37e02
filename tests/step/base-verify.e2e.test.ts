// The verify on the base (docs/cli/loop-run.md#the-verify-on-the-base) on a real `loop run`: before the
// first launch, and again when the default verify or workspace.setup change, setup and the default
// verify run once on the base tree. Failing there, the loop waits for a person (base_verify_failed)
// with the telling line quoted and no attempt spent; `loop ctl resume` runs it again, `resume --yes`
// accepts it for that verify and setup. A step killed during it is taken over by the next.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, scenario } from "../helpers/project.ts";

/** Fails until DONE.md lands, saying so on an error line among others. */
const VERIFY = "echo checking; echo 'Error: DONE.md is missing' >&2; echo one more line; test -s DONE.md";

describe("the verify on the base", () => {
  test.concurrent(
    "failing on the base: the loop waits with base_verify_failed quoting the error line, nothing is launched; resume runs it again, resume --yes accepts it once for that verify",
    () =>
      scenario(
        demoDefinition([{ id: "a", prompt: "@demo write DONE.md done" }], { defaults: { verify: VERIFY, maxAttempts: 1 }, workspace: { baseVerify: true } }),
        {},
        async (p) => {
          const r = await p.runUntil((x) => x.action === "paused", { codes: [0, 1], what: "paused" });
          expect(r.reason).toContain("failed on the base main");
          const finished = p.eventsOf("base_verify_finished");
          expect(finished).toHaveLength(1);
          expect(finished[0]!.payload).toMatchObject({ code: "failed", exitCode: 1 });
          expect(String(finished[0]!.payload.quote)).toContain("Error: DONE.md is missing");
          const fault = p.eventsOf("environment_fault")[0]!;
          expect(fault.item).toBeNull();
          expect(fault.payload).toMatchObject({ kind: "base_verify_failed", attempt: null });
          expect(String(fault.payload.reason)).toContain("Error: DONE.md is missing");
          expect(String(fault.payload.fix)).toContain("loop ctl resume --yes");
          // No attempt spent: nothing reserved, the item pending with none.
          expect(p.eventsOf("launch_reserved")).toHaveLength(0);
          expect(p.projection().items.a).toMatchObject({ status: "pending", failures: 0, attempts: [] });
          // The base's checkout is gone from the worktrees folder; its log stays.
          expect(existsSync(join(p.worktrees, "_base"))).toBe(false);
          expect(readFileSync(String(finished[0]!.payload.log), "utf8")).toContain("DONE.md is missing");
          // Status: the cause and the base verify's record, JSON and text.
          const st = JSON.parse((await p.loop(["status", "--json"])).stdout);
          expect(st.loop.cause).toMatchObject({ kind: "fault", fault: "base_verify_failed", item: null });
          expect(st.loop.baseVerify).toMatchObject({ status: "failed", verify: VERIFY, setup: null, code: "failed", exitCode: 1 });
          expect((await p.loop(["status", "--text"])).stdout).toContain("verify on the base: failed (checking / Error: DONE.md is missing / one more line)");

          // A plain resume runs it again (a person fixed something, or not): paused again.
          await p.ctl(["resume"]);
          await p.runUntil((x) => x.action === "paused", { codes: [0, 1], what: "paused again" });
          expect(p.eventsOf("base_verify_started")).toHaveLength(2);
          expect(p.eventsOf("launch_reserved")).toHaveLength(0);

          // --yes accepts it, recorded with who; the item then runs and passes, the base verify not run again.
          const acc = await p.ctl(["resume", "--yes"]);
          expect(acc.code, acc.stderr).toBe(0);
          expect(p.eventsOf("base_verify_accepted")).toHaveLength(1);
          expect(p.eventsOf("base_verify_accepted")[0]!.actor).toBe("alice@test");
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          expect(p.eventsOf("base_verify_started")).toHaveLength(2);
          expect(p.projection().loop.baseVerify).toMatchObject({ status: "accepted", acceptedBy: "alice@test" });
          expect(p.projection().items.a!.attempts).toHaveLength(1);
        },
      ),
    240_000,
  );

  test.concurrent(
    "passing on the base (setup first, its product there for the verify): items proceed, the base verify runs once; a changed verify runs it again before the next launch",
    () =>
      scenario(
        demoDefinition(
          [
            { id: "a", prompt: "@demo write a.txt a" },
            { id: "b", prompt: "@demo write b.txt b" },
          ],
          {
            defaults: { verify: "test -s prepared.txt" },
            workspace: { baseVerify: true, setup: "echo yes > prepared.txt" },
          },
        ),
        {},
        async (p) => {
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          const started = p.eventsOf("base_verify_started");
          expect(started).toHaveLength(1);
          expect(started[0]!.payload).toMatchObject({ verify: "test -s prepared.txt", setup: "echo yes > prepared.txt", base: "main" });
          expect(p.eventsOf("base_verify_finished")[0]!.payload).toMatchObject({ code: "passed", exitCode: 0 });
          // Before the first launch.
          const seqOf = (type: string) => p.events().find((e) => e.type === type)!.seq;
          expect(seqOf("base_verify_finished")).toBeLessThan(seqOf("launch_reserved"));
          expect(p.projection().loop.baseVerify).toMatchObject({ status: "passed" });

          // A new item and a changed default verify: run again on the base before the new item's launch.
          const def = JSON.parse(readFileSync(join(p.root, "loop.json"), "utf8"));
          def.defaults.verify = "test -s prepared.txt && test -f README.md";
          def.items.push({ id: "c", prompt: "@demo write c.txt c" });
          writeFileSync(join(p.root, "loop.json"), JSON.stringify(def));
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          expect(p.eventsOf("base_verify_started")).toHaveLength(2);
          expect(p.eventsOf("base_verify_started")[1]!.payload.verify).toBe("test -s prepared.txt && test -f README.md");
          const last = p
            .events()
            .filter((e) => e.type === "base_verify_finished")
            .at(-1)!;
          const launchC = p.events().find((e) => e.type === "launch_reserved" && e.item === "c")!;
          expect(last.seq).toBeLessThan(launchC.seq);
        },
      ),
    240_000,
  );

  if (Bun.which("bwrap"))
    test.concurrent(
      "in the sandbox: setup and the verify run there (the state root hidden from them), a verify that needs no network passes, the item proceeds",
      () =>
        scenario(
          (p) =>
            demoDefinition([{ id: "a", prompt: "@demo write a.txt a" }], {
              defaults: { verify: `test -s prepared.txt && test ! -e ${p.stateRoot}/loop.db`, sandbox: "bwrap" },
              workspace: { baseVerify: true, setup: `test ! -e ${p.stateRoot}/loop.db && echo yes > prepared.txt` },
            }),
          {},
          async (p) => {
            expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
            expect(p.eventsOf("base_verify_finished").map((e) => e.payload.code)).toEqual(["passed"]);
          },
        ),
      240_000,
    );

  test.concurrent.each([
    ["base_verify:before_commit", 0],
    ["base_verify:after_commit", 1],
    ["base_verify:after_start", 1],
  ] as const)(
    "a step killed at %s is taken over: the next step runs the base verify (again) and the items proceed",
    (fp, recorded) =>
      scenario(
        demoDefinition([{ id: "a", prompt: "@demo write a.txt a" }], { defaults: { verify: "test -f README.md" }, workspace: { baseVerify: true } }),
        {},
        async (p) => {
          let killed = false;
          for (let i = 0; i < 20 && !killed; i++) {
            const r = await p.loop(["run", "--json"], { LOOP_FAILPOINT: fp });
            if (r.code === 137) killed = true;
          }
          expect(killed).toBe(true);
          expect(p.eventsOf("base_verify_started")).toHaveLength(recorded);
          expect(p.eventsOf("base_verify_finished")).toHaveLength(0);
          if (recorded) expect(p.projection().loop.baseVerify).toMatchObject({ status: "running" });
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          expect(p.eventsOf("base_verify_started")).toHaveLength(recorded + 1);
          expect(p.eventsOf("base_verify_finished").map((e) => e.payload.code)).toEqual(["passed"]);
          expect(p.eventsOf("launch_reserved")).toHaveLength(1);
        },
      ),
    240_000,
  );
});
