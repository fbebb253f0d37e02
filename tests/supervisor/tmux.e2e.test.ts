// Sessions in tmux (`"sessions": {"tmux": true}`, docs/loop-json.md#sessions), with the real tmux on a private
// socket per test ($LOOP_TMUX_SOCKET): the agent runs in a named tmux session an operator can
// attach to, its output is teed to the pane and to output.log, and every way a session ends (it
// exits, it stalls, `loop ctl skip`) leaves no tmux session and no process behind.
import { worktreesOf } from "../helpers/env.ts";
import { afterEach, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkDrained, cleanupDir, loop, LoopUnderTest, makeRepo, readEvents, shq, sleep, waitNoProcesses, writeLoopJson } from "../helpers/project.ts";

const HAVE_TMUX = spawnSync("tmux", ["-V"], { encoding: "utf8" }).status === 0;
if (!HAVE_TMUX) console.warn("tests/supervisor/tmux.e2e.test.ts: SKIPPED — `tmux -V` failed (tmux is not installed); CI installs tmux");

const sockets: string[] = [];
const dirs: string[] = [];
let counter = 0;

/** Where tmux keeps the socket of `-L name` (the server does not always remove it when killed). */
const socketPath = (name: string) => join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid!()}`, name);

afterEach(() => {
  for (const s of sockets.splice(0)) {
    spawnSync("tmux", ["-L", s, "kill-server"], { stdio: "ignore" });
    rmSync(socketPath(s), { force: true });
  }
  for (const d of dirs.splice(0)) cleanupDir(d);
});

function tmux(sock: string, ...args: string[]) {
  return spawnSync("tmux", ["-L", sock, ...args], { encoding: "utf8" });
}

const hasSession = (sock: string, name: string) => tmux(sock, "has-session", "-t", `=${name}`).status === 0;

async function until(what: string, cond: () => boolean, boundMs = 30_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(50);
  }
}

/** A loop with tmux sessions on its own socket; `gate` is a file the gated agent waits for. */
function setup(items: unknown[], runners: Record<string, { command: string[] }>, failpoint: string | null = null) {
  const { dir, root } = makeRepo("loop-tmux-");
  dirs.push(dir);
  const sock = `loop-test-${process.pid}-${++counter}`;
  sockets.push(sock);
  const l = new LoopUnderTest(dir, root, { env: { LOOP_TMUX_SOCKET: sock }, failpoint });
  writeLoopJson(root, { name: "tmuxed", sessions: { tmux: true }, defaults: { timeouts: { launch: "2m", stall: "30m", verify: "2m" } }, runners, items });
  return { dir, root, sock, l };
}

/** Prints a marker, then waits (silently) until the gate file exists, then does its work. */
function gatedRunner(gate: string, marker: string) {
  return { command: ["sh", "-c", `echo ${marker}-$LOOP_ITEM; while [ ! -e ${shq(gate)} ]; do sleep 0.1; done; echo done > DONE.md`] };
}

const TEST_TIMEOUT = 180_000; // a bound for real processes on 2 cores, not an expectation

describe.skipIf(!HAVE_TMUX)(HAVE_TMUX ? "tmux sessions" : "tmux sessions (SKIPPED: `tmux -V` failed, tmux is not installed)", () => {
  test(
    "the agent runs in a named tmux session, its output is teed to the pane, and the item passes",
    async () => {
      const { dir, root, sock, l } = setup([], {});
      const gate = join(dir, "gate");
      writeLoopJson(root, {
        name: "tmuxed",
        sessions: { tmux: true },
        defaults: { timeouts: { launch: "2m", stall: "30m", verify: "2m" } },
        runners: { gated: gatedRunner(gate, "TMUX-AGENT-OUTPUT") },
        items: [{ id: "in-tmux", prompt: "work in tmux", runner: "gated", verify: "test -s DONE.md" }],
      });
      const r = await l.step();
      expect(r.action).toBe("launched");
      const name = "loop-tmuxed-in-tmux-1";
      expect(hasSession(sock, name)).toBe(true);

      const st = await loop(["status", "--json", "--root", root], l.o.env);
      expect(st.code).toBe(0);
      const s = st.json.items[0].session;
      expect(s.tmux).toBe(name);
      expect(s.alive).toBe(true);

      await until("the agent's output in the tmux pane", () =>
        (tmux(sock, "capture-pane", "-p", "-t", name).stdout ?? "").includes("TMUX-AGENT-OUTPUT-in-tmux"),
      );
      await until("the agent's output in output.log", () => {
        try {
          return readFileSync(join(l.stateRoot, "sessions", "in-tmux", "1", "output.log"), "utf8").includes("TMUX-AGENT-OUTPUT-in-tmux");
        } catch {
          return false;
        }
      });

      writeFileSync(gate, "go\n");
      await l.untilDrained();
      expect(hasSession(sock, name)).toBe(false);
      await checkDrained(l, { outcome: "Succeeded", items: { "in-tmux": "passed" } }, { ignoreTmuxServers: true, everyStartRan: false });
    },
    TEST_TIMEOUT,
  );

  test(
    "a stalled tmux session is ended through the close path: tmux session gone, no process left",
    async () => {
      const { dir, sock, l } = setup(
        [{ id: "stuck", prompt: "never finishes", runner: "stuck", maxAttempts: 1, verify: "true", timeouts: { launch: "2m", stall: "1s", verify: "2m" } }],
        { stuck: { command: ["sh", "-c", "echo STUCK-START; exec sleep 600"] } },
      );
      const r = await l.step();
      expect(r.action).toBe("launched");
      const name = "loop-tmuxed-stuck-1";
      expect(hasSession(sock, name)).toBe(true);
      // Step (as cron would) until the stall deadline passes and the loop drains.
      let last: any = r;
      const deadline = Date.now() + 60_000;
      while (last.action !== "drained") {
        if (Date.now() > deadline) throw new Error(`never drained: ${l.trace()}`);
        await sleep(300);
        last = await l.step();
      }
      expect(hasSession(sock, name)).toBe(false);
      const events = readEvents(l.stateRoot);
      const ended = events.filter((e) => e.type === "session_ended" && e.item === "stuck").map((e) => JSON.parse(e.payload));
      expect(ended.map((e) => e.verdict)).toEqual(["stalled"]);
      const closed = events.filter((e) => e.type === "session_closed" && e.item === "stuck").map((e) => JSON.parse(e.payload));
      expect(closed.length).toBe(1);
      expect(["tmux_killed", "terminated", "killed"]).toContain(closed[0].how);
      expect(await waitNoProcesses(dir, 20_000, { ignoreTmuxServers: true })).toEqual([]);
      await checkDrained(l, { outcome: "Failed", items: { stuck: "failed" } }, { ignoreTmuxServers: true, everyStartRan: false });
    },
    TEST_TIMEOUT,
  );

  test(
    "`loop ctl skip --yes` kills a live tmux session",
    async () => {
      const { dir, root, sock, l } = setup([], {});
      const gate = join(dir, "gate");
      writeLoopJson(root, {
        name: "tmuxed",
        sessions: { tmux: true },
        defaults: { timeouts: { launch: "2m", stall: "30m", verify: "2m" } },
        runners: { gated: gatedRunner(gate, "SKIP-ME") },
        items: [
          { id: "skipped-one", prompt: "waits forever", runner: "gated", verify: "test -s DONE.md" },
          { id: "after", prompt: "plain\n@demo write A.md a", verify: "test -s A.md" },
        ],
      });
      const r = await l.step();
      expect(r.item).toBe("skipped-one");
      const name = "loop-tmuxed-skipped-one-1";
      expect(hasSession(sock, name)).toBe(true);
      await until("the agent to print", () => (tmux(sock, "capture-pane", "-p", "-t", name).stdout ?? "").includes("SKIP-ME-skipped-one"));

      const c = await l.ctl(["skip", "--yes", "--work-item", "skipped-one"]);
      expect(c.json.closed.length).toBe(1);
      expect(["tmux_killed", "terminated", "killed"]).toContain(c.json.closed[0].how);
      expect(hasSession(sock, name)).toBe(false);
      // Nothing of the skipped session is left (the next item's session may be running later on).
      expect(await waitNoProcesses(join(l.stateRoot, "sessions", "skipped-one"), 20_000, { ignoreTmuxServers: true })).toEqual([]);
      expect(await waitNoProcesses(join(worktreesOf(l.stateRoot), "skipped-one"), 20_000, { ignoreTmuxServers: true })).toEqual([]);

      await l.untilDrained();
      await checkDrained(l, { outcome: "Succeeded", items: { "skipped-one": "skipped", after: "passed" } }, { ignoreTmuxServers: true, everyStartRan: false });
    },
    TEST_TIMEOUT,
  );

  test(
    "a step killed after spawning a tmux session: the next step adopts it with its tmux target",
    async () => {
      const { dir, root, sock, l } = setup([], {}, "launch:after_spawn");
      const gate = join(dir, "gate");
      writeLoopJson(root, {
        name: "tmuxed",
        sessions: { tmux: true },
        defaults: { timeouts: { launch: "2m", stall: "30m", verify: "2m" } },
        runners: { gated: gatedRunner(gate, "ADOPT-ME") },
        items: [{ id: "adopted", prompt: "work", runner: "gated", verify: "test -s DONE.md" }],
      });
      expect(await l.step()).toBeNull(); // killed by the failpoint, after the spawn
      const name = "loop-tmuxed-adopted-1";
      expect(hasSession(sock, name)).toBe(true);
      const r = await l.step();
      expect(r.action).toBe("waiting");
      const st = await loop(["status", "--json", "--root", root], l.o.env);
      expect(st.json.items[0].status).toBe("running");
      expect(st.json.items[0].session.tmux).toBe(name);
      expect(st.json.items[0].session.alive).toBe(true);
      writeFileSync(gate, "go\n");
      await l.untilDrained();
      expect(hasSession(sock, name)).toBe(false);
      await checkDrained(l, { outcome: "Succeeded", items: { adopted: "passed" } }, { ignoreTmuxServers: true, everyStartRan: false });
    },
    TEST_TIMEOUT,
  );
});
