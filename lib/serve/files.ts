// Bounded reads of the files an attempt leaves in its session folder (its handoff, the agent's output
// log, the verify log), for the item page and its live tail. Only regular files are read (a FIFO in
// the way would block the server), and never more than a cap: these files are written by agents
// and verify commands, and can be as large as the output cap allows.
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync, statSync } from "node:fs";

export type FileSlice =
  | { kind: "ok"; text: string; size: number; from: number; ino: number; total: number }
  | { kind: "absent" }
  | { kind: "error"; message: string };

/**
 * Bytes [from, min(size, from + max)) of a file (`from` < 0: the last `max` bytes), as UTF-8 text; a
 * sequence cut at the start is dropped, one cut at the end is left for the next read (`from` +
 * bytes actually decoded is where the next read starts: `size` in the result is that end; `total`
 * is the file's size).
 */
export function readSlice(path: string, o: { from?: number; max: number }): FileSlice {
  let fd: number;
  try {
    if (!statSync(path).isFile()) return { kind: "error", message: "not a regular file" };
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return e.code === "ENOENT" ? { kind: "absent" } : { kind: "error", message: e.message };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { kind: "error", message: "not a regular file" };
    const from = o.from === undefined || o.from < 0 ? Math.max(0, st.size - o.max) : Math.min(o.from, st.size);
    const want = Math.min(o.max, st.size - from);
    const buf = Buffer.allocUnsafe(want);
    let n = 0;
    while (n < want) {
      const got = readSync(fd, buf, n, want - n, from + n);
      if (got === 0) break;
      n += got;
    }
    let start = 0;
    // Read from the middle of the file: skip continuation bytes of a character cut in half.
    if (from > 0) while (start < n && start < 4 && (buf[start]! & 0xc0) === 0x80) start++;
    const end = completeEnd(buf, n);
    return { kind: "ok", text: buf.subarray(start, end).toString("utf8"), size: from + end, from, ino: st.ino, total: st.size };
  } catch (err) {
    return { kind: "error", message: (err as Error).message };
  } finally {
    closeSync(fd);
  }
}

/** The end of the last complete UTF-8 character in buf[0, n). */
function completeEnd(buf: Buffer, n: number): number {
  for (let back = 1; back <= Math.min(3, n); back++) {
    const b = buf[n - back]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back for its lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

/** The size and inode of a file, or null when it is not there (a live tail's cheap check). */
export function fileStat(path: string): { size: number; ino: number } | null {
  try {
    const st = statSync(path);
    return st.isFile() ? { size: st.size, ino: st.ino } : null;
  } catch {
    return null;
  }
}
