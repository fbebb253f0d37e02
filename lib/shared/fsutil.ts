// Small file helpers shared by the effectful modules.
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { isAbsolute, join, relative, resolve, sep } from "node:path";

/**
 * Write a file so that readers see either the old or the new content, never a torn one. The
 * temporary file is created afresh (never opened through a link or a FIFO planted under its name),
 * and the rename replaces whatever entry `path` was, a link included, never what it points to.
 */
export function writeFileAtomic(path: string, text: string, o: { sync?: boolean } = {}): void {
  const tmp = `${path}.tmp-${process.pid}`;
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o644);
  try {
    writeFileSync(fd, text);
    // `sync: false`: a record any whole version of which will do (a cache), never torn, not durable.
    if (o.sync !== false) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/**
 * A regular file's text, or null when it is absent, unreadable, too large or not a regular file.
 * `noLinks` (files under the state root): see readRegularFile.
 */
export function readTextOrNull(path: string, o?: { maxBytes?: number; truncate?: boolean; noLinks?: boolean }): string | null {
  const r = readRegularFile(path, o);
  return r.kind === "ok" ? r.bytes.toString("utf8") : null;
}

/** A JSON file under the state root (never read through a link; see readRegularFile's noLinks), or null. */
// biome-ignore lint/suspicious/noExplicitAny: the caller names the document's type and checks it
export function readJsonOrNull<T = any>(path: string): T | null {
  const t = readTextOrNull(path, { noLinks: true });
  if (t === null) return null;
  try {
    return JSON.parse(t) as T;
  } catch {
    return null;
  }
}

/** The last `lines` lines of a text, at most `maxChars` characters. */
export function tail(text: string, lines = 30, maxChars = 4000): string {
  const parts = text.replace(/\s+$/, "").split("\n");
  const out = parts.slice(-lines).join("\n");
  return out.length > maxChars ? sliceText(out, out.length - maxChars) : out;
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/**
 * `text.slice(start, end)` that never cuts a surrogate pair in half (it keeps the pair out). Half a
 * pair is not text: canonical JSON refuses it, so an event carrying it could never be recorded and
 * the item would be stuck. Use it wherever text from outside (agent output, prompts) is cut.
 */
export function sliceText(text: string, start: number, end = text.length): string {
  if (start > 0 && isLow(text.charCodeAt(start)) && isHigh(text.charCodeAt(start - 1))) start++;
  if (end < text.length && isHigh(text.charCodeAt(end - 1)) && isLow(text.charCodeAt(end))) end--;
  return text.slice(start, end);
}

type FileRead = { kind: "absent" } | { kind: "error"; message: string } | { kind: "ok"; bytes: Buffer };

/**
 * A file loop reads but does not own the content of (state files, what an agent leaves in its
 * session directory), as bytes. Only a regular file is read: a FIFO or a device in its place would
 * block or never end. It is checked before opening (opening a FIFO, even non-blocking, would release
 * a writer waiting on it) and again on the descriptor, so it cannot be swapped for one in between.
 * A file over `maxBytes` is an error, unless the caller takes its first `maxBytes` (`truncate`).
 *
 * `noLinks`, for a file someone else writes for loop to record (the agent's ask file): the file
 * itself must not be a symbolic link (opened with O_NOFOLLOW), nor a hard link to another file
 * (one link), and must belong to this user; the descriptor must be the file that was checked.
 * Otherwise an agent could have loop record, say, /etc/passwd as its question. `owner` names the
 * uid the file must belong to instead of this user's: a report run by root over a loop that runs as
 * another user reads that user's files, and only theirs.
 */
export function readRegularFile(path: string, o: { maxBytes?: number; truncate?: boolean; noLinks?: boolean; owner?: number } = {}): FileRead {
  const maxBytes = o.maxBytes ?? 256 * 2 ** 20;
  const notRegular: FileRead = { kind: "error", message: "not a regular file" };
  let fd: number;
  let checked: import("node:fs").Stats;
  try {
    checked = o.noLinks ? lstatSync(path) : statSync(path);
    if (checked.isSymbolicLink()) return { kind: "error", message: "it is a symbolic link" };
    if (!checked.isFile()) return notRegular;
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY | (o.noLinks ? fsConstants.O_NOFOLLOW : 0));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === "ELOOP") return { kind: "error", message: "it is a symbolic link" };
    return e.code === "ENOENT" ? { kind: "absent" } : { kind: "error", message: e.message };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return notRegular;
    if (o.noLinks) {
      if (st.dev !== checked.dev || st.ino !== checked.ino) return { kind: "error", message: "it was replaced while it was being opened" };
      if (st.nlink !== 1) return { kind: "error", message: `it has ${st.nlink} links (a hard link to another file)` };
      const uid = o.owner ?? process.getuid?.();
      if (uid !== undefined && st.uid !== uid)
        return {
          kind: "error",
          message:
            o.owner === undefined
              ? `it belongs to uid ${st.uid}, not to this user (uid ${uid})`
              : `it belongs to uid ${st.uid}, not to the owner of the state folder (uid ${uid})`,
        };
    }
    if (st.size > maxBytes && !o.truncate) return { kind: "error", message: `larger than ${maxBytes} bytes (${st.size})` };
    const size = Math.min(st.size, maxBytes);
    const bytes = Buffer.allocUnsafe(size);
    let n = 0;
    while (n < size) {
      const got = readSync(fd, bytes, n, size - n, n);
      if (got === 0) break;
      n += got;
    }
    return { kind: "ok", bytes: bytes.subarray(0, n) };
  } catch (err) {
    return { kind: "error", message: (err as Error).message };
  } finally {
    closeSync(fd);
  }
}

/** Who owns `dir` (not followed), for reading the files a loop run by that user wrote; undefined when it cannot be told. */
export function ownerOf(dir: string): number | undefined {
  try {
    return lstatSync(dir).uid;
  } catch {
    return undefined;
  }
}

// Files loop owns under the state root (docs/state.md#files): opened without following a link,
// without blocking on a FIFO, and only when what was opened is a regular file with one link that
// belongs to this user. Anything else in its place (an agent's link to a file outside, a FIFO that
// would hang every step) is never read through nor written through.

const NO_FOLLOW = fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY;

/** Why `st` is not a file of loop's own (null when it is): not regular, linked elsewhere, or another user's. */
function notOwnFile(st: Stats): string | null {
  if (st.isSymbolicLink()) return "it is a symbolic link";
  if (!st.isFile()) return st.isFIFO() ? "it is a FIFO, not a regular file" : "it is not a regular file";
  if (st.nlink !== 1) return `it has ${st.nlink} links (a hard link to another file)`;
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return `it belongs to uid ${st.uid}, not to this user (uid ${uid})`;
  return null;
}

type OwnOpen = { kind: "ok"; fd: number; size: number } | { kind: "absent" } | { kind: "error"; message: string };

/**
 * Open an existing file of loop's own under the state root (`flags`: O_RDONLY or O_RDWR): checked
 * with lstat before opening (so a FIFO is never opened) and on the descriptor after (so it cannot
 * have been swapped in between). The caller closes the descriptor.
 */
export function openOwnFile(path: string, flags: number = fsConstants.O_RDONLY): OwnOpen {
  let before: Stats;
  let fd: number;
  try {
    before = lstatSync(path);
    const why = notOwnFile(before);
    if (why) return { kind: "error", message: why };
    fd = openSync(path, flags | NO_FOLLOW);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === "ENOENT") return { kind: "absent" };
    if (e.code === "ELOOP") return { kind: "error", message: "it is a symbolic link" };
    return { kind: "error", message: e.message };
  }
  const st = fstatSync(fd);
  const why = st.dev !== before.dev || st.ino !== before.ino ? "it was replaced while it was being opened" : notOwnFile(st);
  if (why) {
    closeSync(fd);
    return { kind: "error", message: why };
  }
  return { kind: "ok", fd, size: st.size };
}

/**
 * openOwnFile for a file at `path` under `root` (the state root), following no link on the way:
 * every folder between the root and the file must be a folder, not a link to one (an agent that
 * replaces `sessions/<item>/1` by a link to another folder must not get that folder's files shown).
 * The root itself is resolved (it is the operator's). Where /proc says which file a descriptor
 * holds (Linux), that is the check: the file opened must be the one at the expected path, so a
 * folder swapped for a link at any moment is caught; each folder is looked at (lstat) only to say
 * which one is a link, or where there is no /proc.
 */
export function openOwnFileBeneath(root: string, path: string, flags: number = fsConstants.O_RDONLY): OwnOpen {
  const rel = relative(root, path);
  if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return { kind: "error", message: `it is not under ${root}` };
  const parts = rel.split(sep);
  // Opening never blocks nor follows the file's own link (openOwnFile); a linked folder is found next.
  const opened = openOwnFile(path, flags);
  let held: string | null = null;
  if (opened.kind === "ok")
    try {
      held = readlinkSync(`/proc/self/fd/${opened.fd}`);
    } catch {
      // No /proc here: the folders are looked at instead.
    }
  // The kernel names the file at the very path asked: no link anywhere on the way, the root's included.
  if (opened.kind === "ok" && held === join(resolve(root), ...parts)) return opened;
  let base: string;
  try {
    base = realpathSync.native(root);
  } catch (err) {
    if (opened.kind === "ok") closeSync(opened.fd);
    const e = err as NodeJS.ErrnoException;
    return e.code === "ENOENT" ? { kind: "absent" } : { kind: "error", message: e.message };
  }
  if (opened.kind !== "ok") return linkOnTheWay(base, parts) ?? opened;
  if (held === join(base, ...parts)) return opened;
  const link =
    linkOnTheWay(base, parts) ?? (held === null ? null : { kind: "error" as const, message: "a folder on its path was replaced while it was being opened" });
  if (link === null) return opened;
  closeSync(opened.fd);
  return link;
}

/** The first folder between `base` and the file `parts` name that is not a folder (a link to one), as an error; null when none is. */
function linkOnTheWay(base: string, parts: string[]): OwnOpen | null {
  let at = base;
  for (const [i, part] of parts.slice(0, -1).entries()) {
    at = join(at, part);
    let st: Stats;
    try {
      st = lstatSync(at);
    } catch {
      return null; // gone: the caller's own answer (absent) says it
    }
    const shown = parts.slice(0, i + 1).join("/");
    if (st.isSymbolicLink()) return { kind: "error", message: `${shown} is a symbolic link (not followed)` };
    if (!st.isDirectory()) return { kind: "error", message: `${shown} is not a folder` };
  }
  return null;
}

/**
 * Open a file of loop's own for appending (read and write), creating it when absent. Something
 * else in its place (a link, a FIFO, another user's file) is removed, never followed, and the file
 * is created afresh: `replaced` says what was there. A directory in its place is an error.
 */
export function openOwnForAppend(path: string): { fd: number; size: number; replaced: string | null } {
  const found = openOwnFile(path, fsConstants.O_RDWR | fsConstants.O_APPEND);
  if (found.kind === "ok") return { fd: found.fd, size: found.size, replaced: null };
  const replaced = found.kind === "error" ? found.message : null;
  if (replaced) unlinkSync(path);
  const fd = openSync(path, fsConstants.O_RDWR | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_EXCL | NO_FOLLOW, 0o644);
  return { fd, size: 0, replaced };
}

/** Read `length` bytes at `start` of an open file (fewer at its end). */
export function readAt(fd: number, start: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(Math.max(0, length));
  let n = 0;
  while (n < buf.length) {
    const got = readSync(fd, buf, n, buf.length - n, start + n);
    if (got === 0) break;
    n += got;
  }
  return buf.subarray(0, n);
}

/** One buffer for every hash of a file: reading a large file whole would touch a fresh page per 4 KiB. */
let hashChunk: Buffer | null = null;

/** The sha256 (hex) of an open file's bytes, read in chunks into one reused buffer. */
function hashFd(fd: number): string {
  const chunk = (hashChunk ??= Buffer.allocUnsafe(256 * 1024));
  const h = new Bun.CryptoHasher("sha256");
  for (let at = 0; ; ) {
    const got = readSync(fd, chunk, 0, chunk.length, at);
    if (got === 0) break;
    h.update(chunk.subarray(0, got));
    at += got;
  }
  return h.digest("hex");
}

/**
 * The sha256 (hex) of a regular file's bytes (a link is followed, as readRegularFile does), or null
 * when it is absent, not a regular file (a FIFO would hang the reader) or cannot be read: a step
 * checks loop.json this way every tick, whatever its size.
 */
export function hashFile(path: string): string | null {
  let fd: number;
  try {
    if (!statSync(path).isFile()) return null;
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY);
  } catch {
    return null;
  }
  try {
    return fstatSync(fd).isFile() ? hashFd(fd) : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** hashFile for a file of loop's own under the state root (openOwnFile: never through a link); null when it is not one. */
export function hashOwnFile(path: string): string | null {
  const opened = openOwnFile(path);
  if (opened.kind !== "ok") return null;
  try {
    return hashFd(opened.fd);
  } catch {
    return null;
  } finally {
    closeSync(opened.fd);
  }
}
