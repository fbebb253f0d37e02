// Nothing deleted on the critical path (docs/state.md#the-trash): a folder loop is done with (a
// passed item's checkout, with its thousands of dependency files) is moved aside by one rename into
// a trash folder on the same file system, and deleted later, a bounded piece per step, by `sweepTrash`.
// A crash between the two strands nothing: what is in the trash is deleted by whichever step comes
// next. What the trash holds was written by an agent: it is walked without following a link, and a
// folder the agent made unreadable is made readable (it is loop's own now) before it is read.
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The trash beside the folders it takes (`<worktrees>/.trash`): a rename never crosses a file system. */
export function trashOf(parent: string): string {
  return join(parent, ".trash");
}

/** What an entry held when it was moved, as far as loop knew (the files it wrote and setup made). */
const SIZE_SUFFIX = ".bytes";

/**
 * Move `path` into `trash` (one rename). `bytes`: what it holds as far as the caller knows, kept
 * beside it for `loop status`. Returns false when the rename cannot be done (another file system:
 * EXDEV), for the caller to delete it at once as before; true when moved or when there was nothing.
 */
export function moveToTrash(path: string, trash: string, name: string, bytes: number | null): boolean {
  if (!lstatSync(path, { throwIfNoEntry: false })) return true;
  mkdirSync(trash, { recursive: true });
  const entry = `${name}-${Date.now().toString(36)}-${process.pid}`;
  // The size first: an entry without one is still swept, and counted as unknown.
  if (bytes !== null) writeFileSync(join(trash, entry + SIZE_SUFFIX), String(bytes));
  for (let tries = 0; ; tries++) {
    try {
      renameSync(path, join(trash, entry));
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A sweep that found the trash empty removed it between the two: made again, once.
      if (code === "ENOENT" && tries === 0 && lstatSync(path, { throwIfNoEntry: false })) {
        mkdirSync(trash, { recursive: true });
        if (bytes !== null) writeFileSync(join(trash, entry + SIZE_SUFFIX), String(bytes));
        continue;
      }
      rmSync(join(trash, entry + SIZE_SUFFIX), { force: true });
      if (code === "EXDEV") return false;
      throw err;
    }
  }
}

interface TrashReport {
  /** Folders (or files) waiting to be deleted. */
  entries: number;
  /** What they held when moved, as far as loop knew (bytes); entries of unknown size are not in it. */
  bytes: number;
  /** Entries whose size is not known. */
  unknown: number;
}

/** What waits in `trash` to be deleted: one directory read and a small file per entry, never a walk. */
export function trashReport(trash: string): TrashReport {
  const out: TrashReport = { entries: 0, bytes: 0, unknown: 0 };
  let names: string[];
  try {
    names = readdirSync(trash);
  } catch {
    return out;
  }
  for (const n of names) {
    if (n.endsWith(SIZE_SUFFIX)) continue;
    out.entries++;
    if (!names.includes(n + SIZE_SUFFIX)) {
      out.unknown++;
      continue;
    }
    const b = Number(safeRead(join(trash, n + SIZE_SUFFIX)));
    if (Number.isFinite(b) && b >= 0) out.bytes += b;
    else out.unknown++;
  }
  return out;
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, "utf8").slice(0, 32);
  } catch {
    return "";
  }
}

interface SweepResult {
  /** Files, links and folders deleted in this sweep. */
  deleted: number;
  /** Whether the trash is empty now. */
  done: boolean;
}

/**
 * Delete what `trash` holds until it is empty, `deadline` (ms, performance.now()) passes or
 * `budget` entries are deleted: a step's share, so that no step waits on a large folder. What is left
 * is the next sweep's. Never follows a link; a failure to delete one entry is thrown (named).
 */
export function sweepTrash(trash: string, o: { deadline: number; budget: number }): SweepResult {
  const state = { deleted: 0, stop: false };
  const over = () => state.deleted >= o.budget || performance.now() >= o.deadline;
  let names: string[];
  try {
    names = readdirSync(trash);
  } catch {
    return { deleted: 0, done: true };
  }
  for (const n of names.sort()) {
    if (n.endsWith(SIZE_SUFFIX)) continue;
    if (!removeTree(join(trash, n), state, over)) return { deleted: state.deleted, done: false };
    rmSync(join(trash, n + SIZE_SUFFIX), { force: true });
  }
  // Sizes whose entry is gone (a sweep cut short between the two).
  for (const n of names)
    if (n.endsWith(SIZE_SUFFIX) && !lstatSync(join(trash, n.slice(0, -SIZE_SUFFIX.length)), { throwIfNoEntry: false })) rmSync(join(trash, n), { force: true });
  // Empty: the folder goes too (one moved in meanwhile keeps it: rmdir refuses a folder that is not empty).
  try {
    rmdirSync(trash);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "ENOENT") throw err;
  }
  return { deleted: state.deleted, done: true };
}

/** Remove `path` and what is below it, depth first; false when `over()` stopped it first. */
function removeTree(path: string, state: { deleted: number }, over: () => boolean): boolean {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st) return true;
  if (st.isDirectory()) {
    // A folder the agent made unreadable or unwritable: loop's own now (lstat said a folder, not a link).
    if ((st.mode & 0o700) !== 0o700) chmodSync(path, 0o700);
    const names = readdirSync(path);
    for (const n of names) if (!removeTree(join(path, n), state, over)) return false;
    if (over()) return false;
    try {
      rmdirSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  } else {
    if (over()) return false;
    try {
      unlinkSync(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return true;
      throw err;
    }
  }
  state.deleted++;
  return true;
}
