// Who holds the store's locks (lib/log/locks.ts): /proc/locks parsed as plain text, and a real
// process holding SQLite's write lock named by `loop ctl` (store_locked) and by `loop status`.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { blockingLocks, parseProcLocks } from "../../lib/log/locks.ts";
import { BUN, demoDefinition, scenario } from "../helpers/project.ts";

const FILES = new Map([
  ["fe:00:100", "loop.db"],
  ["fe:00:101", "loop.db-shm"],
]);

describe("parseProcLocks and blockingLocks", () => {
  const text = [
    "1: POSIX  ADVISORY  READ 31257 fe:00:101 124 124", // a reader's read mark
    "2: POSIX  ADVISORY  WRITE 5074 fe:00:101 120 120", // SQLite's WAL write lock
    "3: POSIX  ADVISORY  READ 5074 fe:00:101 128 128", // every connection's DMS lock
    "4: POSIX  ADVISORY  READ 5074 fe:00:100 1073741826 1073742335", // a shared lock on the database
    "5: POSIX  ADVISORY  WRITE 6000 fe:00:100 1073741824 1073741824", // an exclusive (rollback or locking_mode) lock
    "6: -> POSIX  ADVISORY  WRITE 7000 fe:00:101 120 120", // a waiter, not a holder
    "7: POSIX  ADVISORY  WRITE 8000 fe:00:999 0 EOF", // another file
    "8: OFDLCK ADVISORY  WRITE -1 fe:00:100 0 EOF", // no pid to name
    "9: POSIX  ADVISORY  WRITE 9000 fe:00:101 123 123", // a writer's brief read-mark update: not the write lock
    "10: POSIX  ADVISORY  WRITE 9100 fe:00:101 0 EOF", // a whole-file lock covers the writer bytes
    "",
  ].join("\n");

  test("only holders of the files asked about, waiters and pid-less locks left out", () => {
    expect(parseProcLocks(text, FILES).map((l) => [l.pid, l.file, l.write])).toEqual([
      [31257, "loop.db-shm", false],
      [5074, "loop.db-shm", true],
      [5074, "loop.db-shm", false],
      [5074, "loop.db", false],
      [6000, "loop.db", true],
      [9000, "loop.db-shm", true],
      [9100, "loop.db-shm", true],
    ]);
  });

  test("what stops a writer: a write lock on loop.db, or on the writer bytes (120-122) of loop.db-shm", () => {
    expect(blockingLocks(parseProcLocks(text, FILES)).map((l) => l.pid)).toEqual([5074, 6000, 9100]);
  });
});

describe("a process holding the store's write lock", () => {
  test.concurrent(
    "is named: by `loop ctl` (store_locked, exit 1, nothing written) and by `loop status` (not healthy)",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "a" }]), {}, async (p) => {
        await p.runToDrain();
        const db = join(p.stateRoot, "loop.db");
        const script = `import { Database } from "bun:sqlite"; const db = new Database(${JSON.stringify(db)}); (globalThis as any).keep = db; db.run("BEGIN IMMEDIATE"); db.run("DELETE FROM lease"); console.log("locked"); await Bun.sleep(120000); db.close();`;
        const holder = Bun.spawn([BUN, "-e", script], { stdout: "pipe", stderr: "inherit" });
        try {
          const reader = holder.stdout.getReader();
          expect(new TextDecoder().decode((await reader.read()).value)).toContain("locked");
          const before = p.head();
          const ctl = await p.ctl(["pause"]);
          expect(ctl.code).toBe(1);
          const err = JSON.parse(ctl.stderr).error;
          expect(err.code).toBe("store_locked");
          expect(err.message).toContain(`process ${holder.pid} (`);
          expect(err.message).toContain("holds a write lock on loop.db-shm");
          expect(p.head()).toBe(before);
          const status = await p.loop(["status", "--json"]);
          expect(status.code).toBe(1);
          const doc = JSON.parse(status.stdout);
          expect(doc.healthy).toBe(false);
          expect(doc.findings).toEqual([{ code: "store_locked", message: expect.stringContaining(`process ${holder.pid} (`) }]);
        } finally {
          holder.kill("SIGKILL");
          await holder.exited;
        }
        // Once it is gone, the store is writable again and status healthy.
        expect((await p.ctl(["pause"])).code).toBe(0);
        expect((await p.ctl(["resume"])).code).toBe(0);
      }),
    120_000,
  );
});
