// Bounded reads of an attempt's files for the item page and its live tail: caps, UTF-8 cut cleanly,
// and nothing but loop's own regular file under the state root is read (a FIFO in the way must not
// block the server, a link an agent planted, to a file or to a folder on the way to it, must not show
// the page's visitors what it points at).
import { afterAll, describe, expect, test } from "bun:test";
import { linkSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
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
      const r = readSlice(path, { root: dir, ...c.o });
      expect(r).toMatchObject({ kind: "ok", text: c.text, size: c.size, from: c.from, total: 19 });
    });

  test("absent, a directory, a FIFO: said, never blocking", () => {
    const root = dir;
    expect(readSlice(join(dir, "nope"), { root, max: 10 })).toEqual({ kind: "absent" });
    mkdirSync(join(dir, "a-folder"));
    expect(readSlice(join(dir, "a-folder"), { root, max: 10 })).toEqual({ kind: "error", message: "not read: it is not a regular file" });
    const fifo = join(dir, "fifo");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    expect(readSlice(fifo, { root, max: 10 })).toEqual({ kind: "error", message: "not read: it is a FIFO, not a regular file" });
    expect(fileStat(fifo, root)).toBeNull();
    expect(fileStat(path, root)).toMatchObject({ size: 19 });
  });

  test("a symbolic or hard link an agent put in a log's place is not read: the secret it points at is shown nowhere", () => {
    const secret = join(dir, "id_ed25519");
    writeFileSync(secret, "PRIVATE KEY\n");
    const soft = join(dir, "soft.log");
    symlinkSync(secret, soft);
    expect(readSlice(soft, { root: dir, max: 100 })).toEqual({ kind: "error", message: "not read: it is a symbolic link" });
    expect(fileStat(soft, dir)).toBeNull();
    const hard = join(dir, "hard.log");
    linkSync(secret, hard);
    expect(readSlice(hard, { root: dir, max: 100 })).toEqual({ kind: "error", message: "not read: it has 2 links (a hard link to another file)" });
    expect(fileStat(hard, dir)).toBeNull();
  });

  test("a session folder replaced by a link to another folder is not followed: that folder's files are shown nowhere", () => {
    const root = join(dir, "state");
    const session = join(root, "sessions", "item", "1");
    mkdirSync(session, { recursive: true });
    writeFileSync(join(session, "output.log"), "the agent's own output\n");
    expect(readSlice(join(session, "output.log"), { root, max: 100 })).toMatchObject({ kind: "ok", text: "the agent's own output\n" });
    const elsewhere = join(dir, "elsewhere");
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, "output.log"), "SECRET OUTPUT\n");
    writeFileSync(join(elsewhere, "handoff.md"), "SECRET HANDOFF\n");
    renameSync(session, `${session}.away`);
    symlinkSync(elsewhere, session);
    expect(readSlice(join(session, "output.log"), { root, max: 100 })).toEqual({
      kind: "error",
      message: "not read: sessions/item/1 is a symbolic link (not followed)",
    });
    expect(readSlice(join(session, "handoff.md"), { root, from: 0, max: 100 })).toEqual({
      kind: "error",
      message: "not read: sessions/item/1 is a symbolic link (not followed)",
    });
    expect(fileStat(join(session, "output.log"), root)).toBeNull();
    // A link higher up (the item's folder) is not followed either; the state root itself may be one (the operator's).
    rmSync(session);
    renameSync(`${session}.away`, session);
    renameSync(join(root, "sessions", "item"), join(dir, "item-away"));
    symlinkSync(join(dir, "item-away"), join(root, "sessions", "item"));
    expect(readSlice(join(session, "output.log"), { root, max: 100 })).toEqual({
      kind: "error",
      message: "not read: sessions/item is a symbolic link (not followed)",
    });
    rmSync(join(root, "sessions", "item"));
    renameSync(join(dir, "item-away"), join(root, "sessions", "item"));
    symlinkSync(root, join(dir, "state-link"));
    expect(readSlice(join(dir, "state-link", "sessions", "item", "1", "output.log"), { root: join(dir, "state-link"), max: 100 })).toMatchObject({
      kind: "ok",
      text: "the agent's own output\n",
    });
    // A path outside the state root is not read at all.
    expect(readSlice(join(elsewhere, "output.log"), { root, max: 100 })).toEqual({ kind: "error", message: `not read: it is not under ${root}` });
  });
});
