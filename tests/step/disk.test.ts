// A full disk (docs/cli/loop-run.md#a-full-disk, lib/shared/disk.ts). Two ways:
//   - everywhere: the pure judgements (which errors a full disk causes, the fault's words), and the
//     session wrapper writing its output to /dev/full (every write refused with ENOSPC, the seam
//     that needs no privilege): it must neither die nor lose the agent's exit status;
//   - where a tmpfs can be mounted (root): the case end to end through `loop run`, the state
//     root on a small tmpfs and an agent printing more than it holds. Skipped elsewhere, saying why.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, openSync, readFileSync, rmSync, statfsSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { diskFullCause, diskSpace, LOW_SPACE_BYTES, RESERVE_FILE } from "../../lib/shared/disk.ts";
import { diskFullFault } from "../../lib/decisions/faults.ts";
import { classifySession } from "../../lib/decisions/session-verdict.ts";
import { CappedLog } from "../../lib/supervisor/output-log.ts";
import { writeWhenRoom } from "../../lib/supervisor/session-wrapper.ts";
import { runLoop } from "../helpers/cli.ts";
import { TempDirs } from "../helpers/fs.ts";
import { demoDefinition, pollUntil, Project } from "../helpers/project.ts";

const temp = new TempDirs();
const T = 120_000;

describe("which errors a full disk causes (diskFullCause)", () => {
  const sqlite = (code: string) => Object.assign(new Error("disk I/O error"), { code });
  const wrapped = (code: string) => Object.assign(new Error("cannot use loop.db: disk I/O error"), { code: "io_error", cause: sqlite(code) });
  const cases: [string, unknown, boolean, boolean][] = [
    ["ENOSPC, whatever the space", Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" }), false, true],
    ["EDQUOT (a quota)", Object.assign(new Error("EDQUOT"), { code: "EDQUOT" }), false, true],
    ["SQLITE_FULL", sqlite("SQLITE_FULL"), false, true],
    ["SQLITE_IOERR_SHMSIZE while space is low (the issue's message)", sqlite("SQLITE_IOERR_SHMSIZE"), true, true],
    ["SQLITE_IOERR_SHMSIZE with room: another I/O problem", sqlite("SQLITE_IOERR_SHMSIZE"), false, false],
    ["a StoreError wrapping SQLite's, while space is low", wrapped("SQLITE_IOERR_WRITE"), true, true],
    ["SQLITE_CANTOPEN while space is low", sqlite("SQLITE_CANTOPEN"), true, true],
    ["EACCES is not a full disk", Object.assign(new Error("EACCES"), { code: "EACCES" }), true, false],
    ["a plain error", new Error("boom"), true, false],
  ];
  test.each(cases)("%s", (_name, err, low, want) => expect(diskFullCause(err, low)).toBe(want));

  test("the fault says the disk is full and where, and what to free", () => {
    const f = diskFullFault({ path: "/srv/api/.loop", mount: "/srv", free: 0 });
    expect(f.kind).toBe("disk_full");
    expect(f.message).toBe("the disk is full: no space left on the filesystem holding the state root /srv/api/.loop (mounted at /srv, 0 bytes free)");
    expect(f.fix).toContain("/srv/api/.loop/sessions");
    expect(f.fix).toContain("then `loop ctl resume`");
  });

  test("diskSpace names the mount point of the nearest existing directory", () => {
    const s = diskSpace("/proc/no/such/dir")!;
    expect(s.mount).toBe("/proc");
    const d = diskSpace(join(temp.make(), "not", "yet"))!;
    expect(d.free).toBe(Number(statfsSync(d.mount).bavail) * Number(statfsSync(d.mount).bsize));
  });

  test("a session's end says the disk refused some of its output, with its real exit status", () => {
    const v = classifySession({
      recordPresent: true,
      exit: { code: 0, signal: null, outputError: "ENOSPC: no space left on device, write" },
      question: null,
      started: true,
      alive: false,
      lastOutputAt: null,
      startedAt: 0,
      reservedAt: 0,
      now: 1,
      timeouts: { launch: 1000, stall: 1000 },
    });
    expect(v).toEqual({ kind: "exited", code: 0, signal: null, reason: "agent exited with code 0; the disk refused some of its output (ENOSPC: no space left on device, write): output.log says where" });
  });
});

describe("the session wrapper on a disk that refuses every write (/dev/full)", () => {
  test("CappedLog drops what the disk refuses and keeps the first error; it never throws", () => {
    const dir = temp.make();
    const path = join(dir, "output.log");
    // Handed in: the wrapper itself never opens its log through a link (tests/step/containment.test.ts).
    const log = new CappedLog(path, 64 * 1024, () => ({ fd: openSync("/dev/full", "a+"), size: 0, replaced: null }));
    for (let i = 0; i < 10; i++) log.write(Buffer.from("x".repeat(10_000)));
    log.close();
    expect(log.writeError).toContain("ENOSPC");
  });

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

// ------------------------------------------------------------------------------------------------
// On a real full disk: a tmpfs, mounted by the test (root only).

function tryMount(dir: string, size: string): boolean {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return false;
  mkdirSync(dir, { recursive: true });
  return Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]).exitCode === 0;
}
function unmount(dir: string): void {
  Bun.spawnSync(["umount", "-l", dir]);
}

const mounts: string[] = [];
let canMount = false;
beforeAll(() => {
  const probe = join(temp.make(), "probe");
  canMount = tryMount(probe, "64k");
  if (canMount) unmount(probe);
  else console.warn("tests/step/disk.test.ts: no tmpfs can be mounted here (not root, or no mount permission): the real-disk tests are skipped; the /dev/full ones above still run");
});
afterAll(() => {
  for (const m of mounts) unmount(m);
  temp.cleanup();
});

function tmpfs(size: string): string {
  const dir = join(temp.make(), "tmpfs");
  if (!tryMount(dir, size)) throw new Error(`cannot mount a tmpfs at ${dir}`);
  mounts.push(dir);
  return dir;
}

describe("a real full disk (a tmpfs)", () => {
  test.skipIf(!process.getuid || process.getuid() !== 0)("writeWhenRoom waits for room, then writes; CappedLog says where output was lost", async () => {
    if (!canMount) return;
    const dir = tmpfs("64k");
    const log = new CappedLog(join(dir, "output.log"), 1 << 20);
    log.write(Buffer.from("before\n"));
    const filler = join(dir, "filler");
    Bun.spawnSync(["sh", "-c", `head -c 200000 /dev/zero > '${filler}'`]);
    log.write(Buffer.alloc(100_000, 0x78));
    expect(log.writeError).toContain("ENOSPC");
    let written = false;
    const w = writeWhenRoom(join(dir, "exit.json"), '{"code":0}\n', 20).then(() => (written = true));
    await Bun.sleep(100);
    expect(written).toBe(false);
    rmSync(filler);
    await w;
    expect(readFileSync(join(dir, "exit.json"), "utf8")).toBe('{"code":0}\n');
    log.write(Buffer.from("after\n"));
    log.close();
    const text = readFileSync(join(dir, "output.log"), "latin1");
    expect(text.startsWith("before\n")).toBe(true);
    expect(text).toMatch(/\n\[loop: \d+ bytes of output lost here: the disk refused them\]\nafter\n$/);
  });

  test.skipIf(!process.getuid || process.getuid() !== 0)(
    "the issue's case through loop run: the state root on a small tmpfs, an agent printing more than it holds; the loop pauses saying the disk is full and where, notify runs, no attempt is spent; freed and resumed, the agent's real exit 0 is recorded and the item passes; with the reserve spent, a full disk is said as such and status is not healthy",
    async () => {
      if (!canMount) return;
      const stateRoot = tmpfs("8m");
      const p = new Project(
        (p) =>
          demoDefinition([{ id: "loud", prompt: "print a lot", runner: "flood", verify: "true" }], {
            runners: { flood: { command: ["sh", "-c", "head -c 16000000 /dev/zero | tr '\\\\0' x; echo; exit 0"] } },
            notify: { command: ["sh", "-c", `cat >> '${join(p.aux, "notify.jsonl")}'`] },
          }),
        { env: { LOOP_STATE_ROOT: stateRoot }, stateRoot },
      );
      try {
        const sent = () => (existsSync(join(p.aux, "notify.jsonl")) ? readFileSync(join(p.aux, "notify.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l)) : []);
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
        expect(JSON.parse(readFileSync(join(p.sessionDir("loud", 1), "exit.json"), "utf8"))).toMatchObject({ code: 0, outputError: expect.stringContaining("ENOSPC") });
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
        p.writeDefinition(demoDefinition([{ id: "loud", prompt: "print a lot", verify: "true" }, { id: "more", prompt: "more" }]));
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
