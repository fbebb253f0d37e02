// No orphans (docs/cli/loop-ctl.md#verbs): the close path ends every process a session started, including
// one that left the session's process group. The agent here daemonizes a child (a double fork and
// setsid: its own session and process group, reparented away from the wrapper), then hangs or
// exits; each test proves the daemon is outside the group (killGroup alone cannot reach it) and
// that, after the close path ran, no process carries the session's mark (LOOP_SESSION_MARK).
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { markedProcesses, procStat } from "../../lib/shared/process.ts";
import { demoDefinition, pollUntil, type Project, scenario } from "../helpers/project.ts";

const T = 120_000;

/** A runner that starts a daemon (double fork + setsid, its pid in aux/daemon.pid), then runs `then`. */
function daemonizing(p: Project, then: string): { command: string[] } {
  const pidFile = join(p.aux, "daemon.pid");
  return { command: ["sh", "-c", `( setsid sh -c 'echo $$ > "$0"; exec sleep 600' '${pidFile}' & ) ; echo started; ${then}`] };
}

/** Wait for the daemon; check it is alive, outside the session's group, and marked with the session's id. */
async function daemonOf(p: Project, id: string): Promise<{ pid: number; mark: string }> {
  const pidFile = join(p.aux, "daemon.pid");
  await pollUntil(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").endsWith("\n"), "the daemon started");
  const pid = Number(readFileSync(pidFile, "utf8").trim());
  const mark = p.eventsOf("launch_reserved", id).at(-1)!.payload.sessionId as string;
  const stat = procStat(pid)!;
  const group = p.eventsOf("session_started", id).at(-1)?.payload.pid;
  expect(stat[0]).not.toBe("Z");
  if (group !== undefined) expect(Number(stat[2])).not.toBe(group); // it left the session's group
  expect(Number(stat[2])).toBe(pid); // setsid: it leads a group of its own
  expect(markedProcesses([mark]).map((m) => m.pid)).toContain(pid);
  return { pid, mark };
}

const gone = (pid: number) => {
  const s = procStat(pid);
  return s === null || s[0] === "Z" || s[0] === "X";
};

describe("the close path leaves no orphan", () => {
  test.concurrent(
    "`loop ctl stop --yes`: the hanging agent and the daemon it started are both ended",
    () =>
      // Given an agent that daemonized a child and hangs
      scenario(
        (p) => demoDefinition([{ id: "d", prompt: "x", runner: "daemon" }], { runners: { daemon: daemonizing(p, "sleep 600") } }),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          const { pid, mark } = await daemonOf(p, "d");
          // When the operator stops the item
          const r = await p.ctl(["stop", "--work-item", "d", "--yes"]);
          expect(r.code).toBe(0);
          // Then the daemon is gone, the report counts it, and no process carries the mark
          expect(gone(pid)).toBe(true);
          expect(markedProcesses([mark])).toEqual([]);
          expect(JSON.parse(r.stdout).closed[0].swept).toBeGreaterThanOrEqual(1);
          await p.ctl(["skip", "--work-item", "d", "--yes"]);
          await p.runToDrain();
        },
      ),
    T,
  );

  test.concurrent(
    "`loop reset --yes`: the hanging agent and the daemon it started are both ended",
    () =>
      // Given an agent that daemonized a child and hangs
      scenario(
        (p) =>
          demoDefinition([{ id: "d", prompt: "x", runner: "daemon" }], {
            runners: { daemon: daemonizing(p, "sleep 600") },
            control: { requireStartCommand: true },
          }),
        {},
        async (p) => {
          await p.run();
          await p.ctl(["start", "--work-item", "d"]);
          expect((await p.run()).action).toBe("launched");
          const { pid, mark } = await daemonOf(p, "d");
          // When the item is reset
          const r = await p.loop(["reset", "--work-item", "d", "--yes", "--json", "--root", p.root]);
          expect(r.code).toBe(0);
          // Then the daemon is gone and no process carries the mark
          expect(gone(pid)).toBe(true);
          expect(markedProcesses([mark])).toEqual([]);
          expect(JSON.parse(r.stdout).items[0].was_live).toBe(true);
        },
      ),
    T,
  );

  test.concurrent(
    "an agent that exits and leaves a daemon behind: the item passes, and closing its session ends the daemon",
    () =>
      // Given an agent that daemonizes a child, writes its work and exits 0
      scenario(
        (p) =>
          demoDefinition([{ id: "d", prompt: "x", runner: "daemon", verify: "test -s out.txt" }], {
            runners: { daemon: daemonizing(p, "echo done > out.txt") },
          }),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          const { pid, mark } = await daemonOf(p, "d");
          // When the loop runs until it drains (the item passes; its session is closed)
          await p.runToDrain();
          // Then the daemon did not outlive the session
          expect(p.projection().items.d!.status).toBe("passed");
          expect(gone(pid)).toBe(true);
          expect(markedProcesses([mark])).toEqual([]);
        },
      ),
    T,
  );
});
