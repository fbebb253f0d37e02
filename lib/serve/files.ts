// Bounded reads of the files an attempt leaves in its session folder (its handoff, the agent's output
// log, the verify log), for the item page and its live tail. Only loop's own regular files under the
// state root are read, never through a link (the file's, or a folder's on the way to it), a hard
// link or a FIFO an agent put in their place (lib/shared/fsutil.ts openOwnFileBeneath: the page must
// not show `~/.ssh/id_ed25519` to whoever opens it, nor block on a FIFO), and never more than a cap:
// these files are written by agents and verify commands, and can be as large as the output cap allows.
import { closeSync, fstatSync } from "node:fs";
import { openOwnFileBeneath, readAt } from "../shared/fsutil.ts";

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
export function readSlice(path: string, o: { root: string; from?: number; max: number }): FileSlice {
  const opened = openOwnFileBeneath(o.root, path);
  if (opened.kind !== "ok") return opened.kind === "absent" ? opened : { kind: "error", message: `not read: ${opened.message}` };
  const fd = opened.fd;
  try {
    const st = fstatSync(fd);
    const from = o.from === undefined || o.from < 0 ? Math.max(0, st.size - o.max) : Math.min(o.from, st.size);
    const buf = readAt(fd, from, Math.min(o.max, st.size - from));
    const n = buf.length;
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

/** The size and inode of a file of loop's own under `root`, or null when it is not there or is not one (a live tail's check). */
export function fileStat(path: string, root: string): { size: number; ino: number } | null {
  const opened = openOwnFileBeneath(root, path);
  if (opened.kind !== "ok") return null;
  try {
    const st = fstatSync(opened.fd);
    return { size: st.size, ino: st.ino };
  } finally {
    closeSync(opened.fd);
  }
}
