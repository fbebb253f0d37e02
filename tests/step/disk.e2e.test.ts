// A full disk end to end (docs/cli/loop-run.md#a-full-disk): the session wrapper (`loop __session`)
// writing its output where every write is refused must neither die nor lose the agent's exit status;
// where a tmpfs can be mounted (root), the case through `loop run`, the state root on a small tmpfs
// and an agent printing more than it holds (skipped elsewhere, saying why). The rules: disk.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { diskSpace, LOW_SPACE_BYTES, RESERVE_FILE } from "../../lib/shared/disk.ts";
import { runLoop } from "../helpers/cli.ts";
import { TempDirs, Tmpfs } from "../helpers/fs.ts";
import { demoDefinition, pollUntil, Project } from "../helpers/project.ts";

const temp = new TempDirs();
const tmpfs = new Tmpfs(temp);
const T = 120_000;
beforeAll(() => {
  if (!tmpfs.available())
    console.warn(
      "tests/step/disk.e2e.test.ts: no tmpfs can be mounted here (not root, or no mount permission): the real-disk test is skipped; the /dev/full one still runs",
    );
});
afterAll(() => {
  tmpfs.cleanup();
  temp.cleanup();
});

describe("the session wrapper on a disk that refuses every write (/dev/full)", () => {
  test(
    "loop __session: output.log planted as a link to /dev/full is replaced, never written through; the agent's exit status (3) is in exit.json",
    async () => {
      // The wrapper on a disk that really is full is tested below, on a tmpfs (root).
      const dir = temp.make();
      symlinkSync("/dev/full", join(dir, "output.log"));
      writeFileSync(join(dir, "launch.json"), JSON.stringify({ argv: ["sh", "-c", "seq 1 100000; echo done >&2; exit 3"], cwd: dir, env: {}, tee: false }));
      const r = await runLoop(["__session", dir]);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      const exit = JSON.parse(readFileSync(join(dir, "exit.json"), "utf8"));
      expect(exit).toMatchObject({ code: 3, signal: null, error: null });
      expect(exit.outputError).toBeUndefined();
      expect(lstatSync(join(dir, "output.log")).isFile()).toBe(true);
      expect(readFileSync(join(dir, "output.log"), "utf8")).toContain("done");
      expect(existsSync(join(dir, "started.json"))).toBe(true);
    },
    T,
  );
});

describe("a real full disk (a tmpfs)", () => {
  test.skipIf(process.getuid?.() !== 0)(
    "the issue's case through loop run: the state root on a small tmpfs, an agent printing more than it holds; the loop pauses saying the disk is full and where, notify runs, no attempt is spent; freed and resumed, the agent's real exit 0 is recorded and the item passes; with the reserve spent, a full disk is said as such and status is not healthy",
    async () => {
      if (!tmpfs.available()) return;
      const stateRoot = tmpfs.mount("8m");
      const p = new Project(
        (p) =>
          demoDefinition([{ id: "loud", prompt: "print a lot", runner: "flood", verify: "true" }], {
            runners: { flood: { command: ["sh", "-c", "head -c 16000000 /dev/zero | tr '\\\\0' x; echo; exit 0"] } },
            notify: { command: ["sh", "-c", `cat >> '${join(p.aux, "notify.jsonl")}'`] },
          }),
        { env: { LOOP_STATE_ROOT: stateRoot }, stateRoot },
      );
      try {
        const sent = () =>
          existsSync(join(p.aux, "notify.jsonl"))
            ? readFileSync(join(p.aux, "notify.jsonl"), "utf8")
                .trim()
                .split("\n")
                .map((l) => JSON.parse(l))
            : [];
        const first = await p.run();
        expect(first.action).toBe("launched");
        expect(existsSync(join(stateRoot, RESERVE_FILE))).toBe(true);
        // The agent fills the disk (its wrapper drops what is refused, and keeps its exit status for later).
        await pollUntil(() => diskSpace(stateRoot)!.free < LOW_SPACE_BYTES, "the disk filled up");

        const paused = await p.run([1]);
        expect({ action: paused.action, item: paused.item, errors: paused.errors }).toEqual({ action: "paused", item: "loud", errors: [] });
        expect(paused.loop.reason).toBe(
          `environment fault: the disk is full: no space left on the filesystem holding the state root ${stateRoot} (mounted at ${stateRoot}, ${paused.loop.reason!.match(/, (\d+) bytes free/)![1]} bytes free). To fix: free space on it (agents' output logs under ${stateRoot}/sessions and old worktrees under ${stateRoot}/workspaces are the usual suspects), then \`loop ctl resume\``,
        );
        expect(paused.transitions.map((t) => t.type)).toEqual(["environment_fault", "notified"]);
        expect(paused.attention).toEqual([{ kind: "environment", item: null, reason: paused.loop.reason! }]);
        expect(sent().map((d) => [d.kind, d.reason])).toEqual([["environment", paused.loop.reason]]);
        expect(existsSync(join(stateRoot, RESERVE_FILE))).toBe(false);
        const loud = p.projection().items.loud!;
        expect({ status: loud.status, failures: loud.failures }).toEqual({ status: "running", failures: 0 });
        // Cron ticks on: nothing more recorded, said once (quiet), status shows the paused loop.
        const head = p.head();
        const quiet = await p.loop(["run", "--quiet"]);
        expect({ code: quiet.code, stdout: quiet.stdout, head: p.head() }).toEqual({ code: 1, stdout: "", head });

        // Space freed (the runaway log removed), resumed: the wrapper wrote the agent's real exit, the verify decides.
        rmSync(join(p.sessionDir("loud", 1), "output.log"));
        await pollUntil(() => existsSync(join(p.sessionDir("loud", 1), "exit.json")), "the wrapper wrote exit.json once there was room");
        expect(JSON.parse(readFileSync(join(p.sessionDir("loud", 1), "exit.json"), "utf8"))).toMatchObject({
          code: 0,
          outputError: expect.stringContaining("ENOSPC"),
        });
        expect((await p.ctl(["resume"])).code).toBe(0);
        await p.runToDrain();
        const done = p.projection().items.loud!;
        expect({ status: done.status, attempts: done.attempts.length, failures: done.failures, end: done.attempts[0]!.end!.reason }).toEqual({
          status: "passed",
          attempts: 1,
          failures: 0,
          end: expect.stringContaining("agent exited with code 0; the disk refused some of its output (ENOSPC"),
        });
        expect(existsSync(join(stateRoot, RESERVE_FILE))).toBe(true); // made again once there was room

        // The reserve spent by hand and the disk filled by something else: the step can record
        // nothing, and says the disk is full instead of SQLite's words; status is not healthy.
        rmSync(join(stateRoot, RESERVE_FILE));
        Bun.spawnSync(["sh", "-c", `head -c 16000000 /dev/zero > '${join(stateRoot, "filler")}'`]);
        p.writeDefinition(
          demoDefinition([
            { id: "loud", prompt: "print a lot", verify: "true" },
            { id: "more", prompt: "more" },
          ]),
        );
        const stuck = await p.loop(["run", "--json"]);
        expect(stuck.code).toBe(1);
        const err = JSON.parse(stuck.stderr).error;
        expect(err.code).toBe("io_error");
        expect(err.message).toStartWith(`the disk is full: no space left on the filesystem holding the state root ${stateRoot}`);
        expect(err.message).toContain("this step could record nothing");
        const status = await p.loop(["status", "--json"]);
        expect(status.code).toBe(1);
        expect(JSON.parse(status.stdout)).toMatchObject({ healthy: false, findings: [{ code: "disk_full" }] });
        // loop ctl and loop reset say it in the same words, naming themselves, and change nothing.
        const unchanged = p.head();
        for (const [args, who] of [
          [["ctl", "pause", "--json"], "`loop ctl pause` could record nothing"],
          [["reset", "--work-item", "loud", "--yes", "--json"], "`loop reset` could record nothing"],
        ] as const) {
          const refused = await p.loop([...args]);
          expect(refused.code).toBe(1);
          const e = JSON.parse(refused.stderr).error;
          expect(e.code).toBe("io_error");
          expect(e.message).toStartWith(`the disk is full: no space left on the filesystem holding the state root ${stateRoot}`);
          expect(e.message).toContain(who);
        }
        expect(p.head()).toBe(unchanged);
        rmSync(join(stateRoot, "filler"));
        await p.runToDrain();
        await p.finish();
      } finally {
        p.dispose();
      }
    },
    T,
  );
});
