// The shipped systemd units with `loop run` (deploy/systemd/, docs/operations.md#systemd), through
// the stand-in of tests/helpers/systemd-units.ts (each Exec*= line run as systemd runs it):
//   - A loop waiting for a person is not a failed unit: the step's unit never starts the attention
//     unit for it, and loop.json's notify tells once.
//   - Sessions that cannot have a scope that outlives the step (no manager, a user manager without
//     linger) pause the loop before the launch, naming the fix, instead of dying later.
// The units' own rules (the attention unit, the faults): systemd.test.ts.
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { probeSystemd, scopeLack } from "../../lib/supervisor/scope.ts";
import { demoDefinition, Project, REPO, scenario } from "../helpers/project.ts";
import { execArgv, parseUnit } from "../helpers/systemd-units.ts";

const T = 120_000;

const unit = (name: string) => parseUnit(readFileSync(join(REPO, "deploy", "systemd", name), "utf8"), name);
const STEP = unit("loop@.service");

/** What the manager makes of an exit status: success per SuccessExitStatus= (and 0), else a failed unit. */
function unitResult(u: ReturnType<typeof unit>, code: number): "success" | "exit-code" {
  const ok = new Set(["0", ...(u.Service!.SuccessExitStatus ?? []).flatMap((v) => v.split(/\s+/))]);
  return ok.has(String(code)) ? "success" : "exit-code";
}

describe("a loop waiting for a person", () => {
  test.concurrent(
    "is not a failed unit: every step of a paused loop exits 1, which the step's unit takes as success, so the attention unit never starts; notify tells once",
    () =>
      scenario(
        (p) =>
          demoDefinition([{ id: "asks", prompt: "@demo ask Which license?" }], {
            notify: { command: ["sh", "-c", `cat >> ${join(p.aux, "notified")}`] },
          }),
        {},
        async (p) => {
          // The unit's own command line (loop run --json), run in the project as each tick runs it.
          const { argv } = execArgv(STEP.Service!.ExecStart![0]!, { i: "api" });
          expect(argv.slice(1)).toEqual(["run", "--json"]);
          const results: string[] = [];
          let paused = 0;
          for (let i = 0; i < 60 && paused < 4; i++) {
            const r = await p.loop(["run", "--json", "--root", p.root]);
            results.push(unitResult(STEP, r.code));
            if (JSON.parse(r.stdout).action === "paused") paused++;
            else await Bun.sleep(100);
          }
          expect(paused).toBe(4);
          expect(results.filter((r) => r !== "success")).toEqual([]);
          // The news went out once, through loop.json's notify.
          const sent = readFileSync(join(p.aux, "notified"), "utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l).kind);
          expect(sent).toEqual(["question"]);
          // What still fails the unit: an invalid loop.json (exit 2).
          writeFileSync(join(p.root, "loop.json"), "{ not json");
          expect(unitResult(STEP, (await p.loop(["run", "--json", "--root", p.root])).code)).toBe("exit-code");
        },
      ),
    T,
  );
});

describe("sessions need a scope that outlives the step (LOOP_SESSION_SCOPE=systemd, as the units set it)", () => {
  // Where this machine has no scope to give (a container, a user without linger), `loop run` under the
  // units' setting must pause before it reserves anything; where it has one, there is nothing to refuse.
  const lack = scopeLack(probeSystemd(process.env));
  if (!lack) console.warn("skipping the scope refusal through loop run: this machine gives sessions a scope");
  test.concurrent.skipIf(!lack)(
    "through loop run: paused before the reservation with the fault, no attempt spent; with LOOP_SESSION_SCOPE=auto after a resume, the item runs",
    () =>
      scenario(
        demoDefinition([{ id: "a", prompt: "@demo write A.md a", verify: "test -s A.md", maxAttempts: 1 }]),
        { env: { LOOP_SESSION_SCOPE: "systemd" } },
        async (p) => {
          const r = await p.run([1]);
          expect(r.action).toBe("paused");
          expect(r.loop.reason).toContain("environment fault launching a: sessions must run in a systemd scope of their own, but");
          expect(r.transitions.map((t) => t.type)).toEqual(["definition_imported", "loop_started", "environment_fault"]);
          expect(p.eventsOf("launch_reserved")).toEqual([]);
          expect((await p.ctl(["resume"])).code).toBe(0);
          const cli = (args: string[]) => p.loop(args, { LOOP_SESSION_SCOPE: "auto" });
          for (let i = 0; i < 100; i++) {
            const s = JSON.parse((await cli(["run", "--json", "--root", p.root])).stdout);
            if (s.action === "drained") break;
            await Bun.sleep(100);
          }
          expect(p.projection().items.a!.status).toBe("passed");
          expect(p.projection().items.a!.failures).toBe(0);
        },
      ),
    T,
  );

  test.concurrent(
    "an invalid LOOP_SESSION_SCOPE is a fault before the reservation too (it used to fail the launch and spend the attempt)",
    async () => {
      const p = new Project(demoDefinition([{ id: "a", prompt: "@demo write A.md a", verify: "test -s A.md" }]), { env: { LOOP_SESSION_SCOPE: "yes" } });
      try {
        const r = await p.run([1]);
        expect(r.loop.reason).toContain('LOOP_SESSION_SCOPE must be auto, systemd or off, not "yes"');
        expect(p.eventsOf("launch_reserved")).toEqual([]);
      } finally {
        p.dispose();
      }
    },
    T,
  );
});
