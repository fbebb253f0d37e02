// Bounded reads of an attempt's files for the item page and its live tail: caps, UTF-8 cut cleanly,
// and nothing but loop's own regular file is read (a FIFO in the way must not block the server, a
// link an agent planted must not show the page's visitors the file it points at).
import { afterAll, describe, expect, test } from "bun:test";
import { linkSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileStat, readSlice } from "../../lib/serve/files.ts";

const dir = mkdtempSync(join(tmpdir(), "loop-serve-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("readSlice", () => {
  const path = join(dir, "out.log");
  // "é" is 2 bytes, "😀" is 4: 10 + 2 + 4 + 3 = 19 bytes.
  writeFileSync(path, "0123456789é😀end");

  const cases: { name: string; o: { from?: number; max: number }; text: string; size: number; from: number }[] = [
    { name: "the whole file", o: { max: 100 }, text: "0123456789é😀end", size: 19, from: 0 },
    { name: "the last 5 bytes: the cut 😀 is dropped at the start", o: { max: 5 }, text: "end", size: 19, from: 14 },
    { name: "the last 7 bytes start on 😀's first byte", o: { max: 7 }, text: "😀end", size: 19, from: 12 },
    { name: "from 0, 11 bytes: é cut at the end is left for the next read", o: { from: 0, max: 11 }, text: "0123456789", size: 10, from: 0 },
    { name: "from an offset (a live tail's next read)", o: { from: 10, max: 6 }, text: "é😀", size: 16, from: 10 },
    { name: "from past the end: nothing", o: { from: 50, max: 6 }, text: "", size: 19, from: 19 },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = readSlice(path, c.o);
      expect(r).toMatchObject({ kind: "ok", text: c.text, size: c.size, from: c.from, total: 19 });
    });

  test("absent, a directory, a FIFO: said, never blocking", () => {
    expect(readSlice(join(dir, "nope"), { max: 10 })).toEqual({ kind: "absent" });
    expect(readSlice(dir, { max: 10 })).toEqual({ kind: "error", message: "not read: it is not a regular file" });
    const fifo = join(dir, "fifo");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    expect(readSlice(fifo, { max: 10 })).toEqual({ kind: "error", message: "not read: it is a FIFO, not a regular file" });
    expect(fileStat(fifo)).toBeNull();
    expect(fileStat(path)).toMatchObject({ size: 19 });
  });

  test("a symbolic or hard link an agent put in a log's place is not read: the secret it points at is shown nowhere", () => {
    const secret = join(dir, "id_ed25519");
    writeFileSync(secret, "PRIVATE KEY\n");
    const soft = join(dir, "soft.log");
    symlinkSync(secret, soft);
    expect(readSlice(soft, { max: 100 })).toEqual({ kind: "error", message: "not read: it is a symbolic link" });
    expect(fileStat(soft)).toBeNull();
    const hard = join(dir, "hard.log");
    linkSync(secret, hard);
    expect(readSlice(hard, { max: 100 })).toEqual({ kind: "error", message: "not read: it has 2 links (a hard link to another file)" });
    expect(fileStat(hard)).toBeNull();
  });
});
