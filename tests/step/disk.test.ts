// A full disk (docs/cli/loop-run.md#a-full-disk, lib/shared/disk.ts), in process: the pure
// judgements (which errors a full disk causes, the fault's words), the output log writing to
// /dev/full (every write refused with ENOSPC, the seam that needs no privilege), and, where a tmpfs
// can be mounted (root), waiting for room on a disk that really is full. The session wrapper and
// `loop run` on a full disk: disk.e2e.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openSync, readFileSync, rmSync, statfsSync } from "node:fs";
import { join } from "node:path";
import { diskFullCause, diskSpace } from "../../lib/shared/disk.ts";
import { diskFullFault } from "../../lib/decisions/faults.ts";
import { classifySession } from "../../lib/decisions/session-verdict.ts";
import { CappedLog } from "../../lib/supervisor/output-log.ts";
import { writeWhenRoom } from "../../lib/supervisor/session-wrapper.ts";
import { TempDirs, Tmpfs } from "../helpers/fs.ts";

const temp = new TempDirs();

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
    // Other processes write to this disk meanwhile: its free space is read before and after.
    const dir = temp.make();
    const free = () => Number(statfsSync(dir).bavail) * Number(statfsSync(dir).bsize);
    const before = free();
    const d = diskSpace(join(dir, "not", "yet"))!;
    const after = free();
    expect(d.free).toBeGreaterThanOrEqual(Math.min(before, after));
    expect(d.free).toBeLessThanOrEqual(Math.max(before, after));
    expect(statfsSync(d.mount).type).toBe(statfsSync(dir).type);
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
    expect(v).toEqual({
      kind: "exited",
      code: 0,
      signal: null,
      reason: "agent exited with code 0; the disk refused some of its output (ENOSPC: no space left on device, write): output.log says where",
    });
  });
});

describe("the output log on a disk that refuses every write (/dev/full)", () => {
  test("CappedLog drops what the disk refuses and keeps the first error; it never throws", () => {
    const dir = temp.make();
    const path = join(dir, "output.log");
    // Handed in: the wrapper itself never opens its log through a link (tests/step/containment.e2e.test.ts).
    const log = new CappedLog(path, 64 * 1024, () => ({ fd: openSync("/dev/full", "a+"), size: 0, replaced: null }));
    for (let i = 0; i < 10; i++) log.write(Buffer.from("x".repeat(10_000)));
    log.close();
    expect(log.writeError).toContain("ENOSPC");
  });
});

// ------------------------------------------------------------------------------------------------
// On a real full disk: a tmpfs, mounted by the test (root only).

const tmpfs = new Tmpfs(temp);
beforeAll(() => {
  if (!tmpfs.available())
    console.warn(
      "tests/step/disk.test.ts: no tmpfs can be mounted here (not root, or no mount permission): the real-disk test is skipped; the /dev/full one above still runs",
    );
});
afterAll(() => {
  tmpfs.cleanup();
  temp.cleanup();
});

describe("a real full disk (a tmpfs)", () => {
  test.skipIf(process.getuid?.() !== 0)("writeWhenRoom waits for room, then writes; CappedLog says where output was lost", async () => {
    if (!tmpfs.available()) return;
    const dir = tmpfs.mount("64k");
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
});
