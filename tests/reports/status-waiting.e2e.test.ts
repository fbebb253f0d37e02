// `loop status` says why each waiting item waits and where to look at the one in flight, through the
// real entry points: a dependency (named, with its status), a hold by stop, an explicit start that
// control.requireStartCommand asks for, the loop's pause; the item in flight's log, worktree and
// the exact `tmux attach` command, on the socket its session really runs on.
import { afterEach, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, pollUntil, type Project, scenario, shq } from "../helpers/project.ts";

const HAVE_TMUX = spawnSync("tmux", ["-V"], { encoding: "utf8" }).status === 0;
const TIMEOUT = 120_000; // a bound for real processes on 2 cores, not an expectation

/** A runner that prints a line, then waits for the file `gate` before it finishes its work. */
const gated = (gate: string) => ({
  command: ["sh", "-c", `echo working on $LOOP_ITEM; while [ ! -e ${shq(gate)} ]; do sleep 0.1; done; echo done > DONE-$LOOP_ITEM.md`],
});

async function status(p: Project, extra: string[] = []) {
  const json = await p.loop(["status", "--json", "--root", p.root, ...extra]);
  const text = await p.loop(["status", "--text", "--root", p.root, ...extra]);
  expect(json.code).toBe(0);
  expect(text.code).toBe(0);
  return { doc: JSON.parse(json.stdout), text: text.stdout };
}
const byId = (doc: any) => Object.fromEntries(doc.items.map((it: any) => [it.id, it]));

describe("why items wait", () => {
  test(
    "a dependency with its status, a hold by stop, the loop's pause; the item in flight's log and worktree",
    async () => {
      await scenario(
        (p) =>
          demoDefinition(
            [
              { id: "a", prompt: "p", runner: "gated" },
              { id: "b", prompt: "p", dependsOn: ["a"] },
              { id: "c", prompt: "p" },
              { id: "d", prompt: "p" },
            ],
            { runners: { gated: gated(join(p.aux, "gate")) } },
          ),
        {},
        async (p) => {
          // Before any step: the first item launches next, the others wait their turn.
          await p.run();
          // a launched; now hold c.
          expect((await p.ctl(["stop", "--work-item", "c", "--yes"])).code).toBe(0);
          let { doc, text } = await status(p);
          let it = byId(doc);
          expect(doc.loop.current).toBe("a");
          expect(it.a.waiting).toBeNull();
          expect(it.b.waiting).toEqual({ reason: "dependency", detail: "waits for a (running)", dependencies: [{ id: "a", status: "running" }] });
          expect(it.c.waiting).toEqual({ reason: "held", detail: "held by `loop ctl stop`: release it with `loop ctl start --work-item c`", dependencies: [] });
          expect(it.d.waiting).toEqual({ reason: "queued", detail: "waits for the item in flight, a (running)", dependencies: [] });
          expect(it.a.session.log).toBe(join(p.sessionDir("a", 1), "output.log"));
          expect(it.a.session.attach).toBeNull(); // not in tmux
          expect(text).toContain("in flight: a (running, attempt 1");
          expect(text).toContain(`  log:      ${join(p.sessionDir("a", 1), "output.log")}  (\`loop logs a --follow\`)`);
          expect(text).toContain(`  worktree: ${it.a.worktree}`);
          expect(text).not.toContain("attach:");
          expect(text).toContain(
            "waiting:\n  b: waits for a (running)\n  c: held by `loop ctl stop`: release it with `loop ctl start --work-item c`\n  d: waits for the item in flight, a (running)",
          );
          // --work-item narrows the report, not the reasons: b still names a.
          ({ doc } = await status(p, ["--work-item", "b"]));
          expect(doc.items.map((x: any) => x.waiting.detail)).toEqual(["waits for a (running)"]);

          // Pause: the launchable item now waits for the loop, with the loop's reason.
          expect((await p.ctl(["pause", "--reason", "maintenance window"])).code).toBe(0);
          ({ doc } = await status(p));
          it = byId(doc);
          expect(it.d.waiting).toEqual({
            reason: "loop_paused",
            detail: "the loop is paused: maintenance window (`loop ctl resume` goes on)",
            dependencies: [],
          });
          expect(it.c.waiting.detail).toEndWith("(and the loop is paused)");
          expect((await p.ctl(["resume"])).code).toBe(0);

          writeFileSync(join(p.aux, "gate"), "");
          await p.runUntil((r) => r.action === "launched" && r.item === "b", { what: "b launched" });
          ({ doc } = await status(p));
          it = byId(doc);
          expect(it.a.waiting).toBeNull();
          expect(it.a.status).toBe("passed");
          expect(it.d.waiting.reason).toBe("queued");
          expect(it.c.waiting.reason).toBe("held");
          expect((await p.ctl(["start", "--work-item", "c"])).code).toBe(0);
          await p.runToDrain();
          ({ doc } = await status(p));
          expect(doc.items.map((x: any) => x.waiting)).toEqual([null, null, null, null]);
        },
      );
    },
    TIMEOUT,
  );

  test(
    "control.requireStartCommand: every item waits for its start until it gets one",
    async () => {
      await scenario(
        demoDefinition(
          [
            { id: "x", prompt: "p" },
            { id: "y", prompt: "p" },
          ],
          { control: { requireStartCommand: true } },
        ),
        {},
        async (p) => {
          const r = await p.run();
          expect(r.action).toBe("idle");
          let { doc, text } = await status(p);
          expect(byId(doc).x.waiting).toEqual({
            reason: "awaiting_start",
            detail: "control.requireStartCommand is on: start it with `loop ctl start --work-item x`",
            dependencies: [],
          });
          expect(text).toContain("  y: control.requireStartCommand is on: start it with `loop ctl start --work-item y`");
          expect((await p.ctl(["start", "--work-item", "y"])).code).toBe(0);
          ({ doc } = await status(p));
          expect(byId(doc).y.waiting.reason).toBe("next");
          expect(byId(doc).x.waiting.reason).toBe("awaiting_start");
          // The step agrees: it launches y, the one status called next.
          expect(await p.run()).toMatchObject({ action: "launched", item: "y" });
          expect((await p.ctl(["skip", "--work-item", "x", "--yes"])).code).toBe(0);
          await p.runToDrain();
        },
      );
    },
    TIMEOUT,
  );
});

describe.skipIf(!HAVE_TMUX)("the tmux attach command", () => {
  let sock = "";
  afterEach(() => {
    if (sock) spawnSync("tmux", ["-L", sock, "kill-server"], { stdio: "ignore" });
  });

  test(
    "names the socket the session runs on (-S, from the pane's $TMUX), and attaching to it works",
    async () => {
      sock = `loop-status-${process.pid}`;
      await scenario(
        (p) => demoDefinition([{ id: "a", prompt: "p", runner: "gated" }], { sessions: { tmux: true }, runners: { gated: gated(join(p.aux, "gate")) } }),
        { env: { LOOP_TMUX_SOCKET: sock } },
        async (p) => {
          await p.run();
          await pollUntil(() => existsSync(join(p.sessionDir("a", 1), "started.json")), "the wrapper started");
          const { doc, text } = await status(p);
          const s = byId(doc).a.session;
          expect(s.tmux).toBe("loop-t-a-1");
          const m = /^tmux -S (\S+) attach -t '=loop-t-a-1'$/.exec(s.attach);
          expect(m, s.attach).not.toBeNull();
          expect(m![1]!.endsWith(`/${sock}`)).toBe(true);
          expect(text).toContain(`  attach:   ${s.attach}`);
          // The command's socket is the real one: a client on it finds the session.
          expect(spawnSync("tmux", ["-S", m![1]!, "has-session", "-t", "=loop-t-a-1"]).status).toBe(0);
          // Whoever asks, with or without $LOOP_TMUX_SOCKET: the socket comes from the session itself.
          const bare = await p.loop(["status", "--json", "--root", p.root], { LOOP_TMUX_SOCKET: undefined });
          expect(JSON.parse(bare.stdout).items[0].session.attach).toBe(s.attach);
          writeFileSync(join(p.aux, "gate"), "");
          await p.runToDrain();
          rmSync(join(p.aux, "gate"));
        },
      );
    },
    TIMEOUT,
  );
});
