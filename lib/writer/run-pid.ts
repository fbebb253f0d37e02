// run.pid: the one `loop run --watch` of a state root. A second watcher would only take turns with
// the first for the lease, and whichever stopped first removed the other's file, so a watcher
// claims the file exclusively and removes it only while it still names itself. The file holds the
// pid and the process's start time, so a pid reused by an unrelated process (after a crash or a
// reboot) is not mistaken for a live watcher.
import { linkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { BusyError } from "../shared/errors.ts";
import { readTextOrNull } from "../shared/fsutil.ts";
import { pidAlive, processStartTime } from "../shared/process.ts";

export interface RunPid {
  pid: number;
  /** /proc start time of the process, or null where there is no /proc. */
  started: string | null;
}

/** This process, as run.pid records it. */
export function selfRunPid(): RunPid {
  return { pid: process.pid, started: processStartTime(process.pid) };
}

/** Is the watcher a run.pid names still running (the same process, not a later one with its pid)? */
export function watcherAlive(w: RunPid): boolean {
  return pidAlive(w.pid) && (w.started === null || processStartTime(w.pid) === w.started);
}

/**
 * Claim `path` for `me`: created with its content in one step (a hard link to a complete temp file,
 * so nobody ever reads it empty). Held by a live watcher: BusyError (exit 75). Left by a dead one:
 * replaced, then read back, so that of two watchers replacing the same stale file at once the one
 * overwritten stops. (Both can still go on if one reads back before the other replaces; they then
 * only take turns for the lease, which keeps their steps apart.)
 */
export function claimRunPid(path: string, me: RunPid, alive: (w: RunPid) => boolean = watcherAlive): void {
  const tmp = `${path}.tmp-${me.pid}`;
  const text = `${me.pid}${me.started === null ? "" : ` ${me.started}`}\n`;
  // Created afresh, never through whatever (a link) a leftover of that name is.
  rmSync(tmp, { force: true });
  writeFileSync(tmp, text, { flag: "wx" });
  try {
    let created: boolean;
    try {
      linkSync(tmp, path);
      created = true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "";
      if (code === "EEXIST") created = false;
      else if (NO_HARD_LINKS.includes(code)) created = createExclusive(path, text);
      else throw err;
    }
    if (created) return;
    const holder = readRunPid(path);
    if (holder !== null && holder.pid !== me.pid && alive(holder)) throw busy(path, holder);
    renameSync(tmp, path); // stale (or unreadable): replace it
    const now = readRunPid(path);
    if (now?.pid !== me.pid) throw busy(path, now ?? { pid: 0, started: null });
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Remove `path` if it still names `me`. */
export function releaseRunPid(path: string, me: RunPid): void {
  const cur = readRunPid(path);
  if (cur?.pid === me.pid && cur.started === me.started) rmSync(path, { force: true });
}

/** What link(2) says on file systems without hard links (vfat, some network file systems). */
const NO_HARD_LINKS = ["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"];

/** The fallback there: an exclusive create (briefly empty while written). False if the file exists. */
function createExclusive(path: string, text: string): boolean {
  try {
    writeFileSync(path, text, { flag: "wx" });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
}

export function readRunPid(path: string): RunPid | null {
  const text = readTextOrNull(path, { maxBytes: 4096 });
  if (text === null) return null;
  const m = /^(\d+)(?: (\d+))?\n?$/.exec(text);
  return m && Number(m[1]) > 0 ? { pid: Number(m[1]), started: m[2] ?? null } : null;
}

function busy(path: string, holder: RunPid): BusyError {
  return new BusyError(`another \`loop run --watch\` (pid ${holder.pid}, ${path}) is watching this loop`);
}
