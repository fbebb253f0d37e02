// `loop backup <file>`: a consistent point-in-time copy of loop.db, made with `VACUUM INTO` from
// the read snapshot the read verbs use (lib/log/snapshot.ts), so the state root stays byte-identical
// and a writer appending meanwhile is neither blocked nor copied half. The copy is written under a
// temporary name beside the target and linked into place, so the target is either absent or whole,
// and an existing file is never replaced.
import { Database, constants } from "bun:sqlite";
import { closeSync, fsyncSync, linkSync, lstatSync, openSync, rmSync, statSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { UsageError } from "../shared/errors.ts";
import { headOf, withReadSnapshot } from "../log/snapshot.ts";

interface BackupReport {
  schema: "loop/backup@1";
  /** The copy, as an absolute path. */
  path: string;
  /** The store it was made from. */
  stateRoot: string;
  bytes: number;
  /** The log head the copy holds: its last event's seq and hash. */
  seq: number;
  hash: string;
}

/** Why `target` cannot be a new backup file, or null. Pure enough to test: it only stats. */
function targetProblem(target: string): string | null {
  if (lstatSync(target, { throwIfNoEntry: false }))
    return `${target} already exists; loop backup never overwrites a file: choose a new name, or remove it first`;
  const dir = dirname(target);
  const st = statSync(dir, { throwIfNoEntry: false });
  if (!st) return `the directory ${dir} does not exist`;
  if (!st.isDirectory()) return `${dir} is not a directory`;
  return null;
}

/**
 * Copy the store under `stateRoot` to `target` (refused with a UsageError when it exists). Reads
 * only: the copy is made from the same read-only snapshot `loop status` takes.
 */
export function backupStore(stateRoot: string, targetPath: string): BackupReport {
  const target = resolve(targetPath);
  const problem = targetProblem(target);
  if (problem) throw new UsageError(problem);
  const tmp = resolve(dirname(target), `.${basename(target)}.partial-${process.pid}-${crypto.randomUUID().slice(0, 8)}`);
  try {
    // withReadSnapshot reads again when a writer moved the files meanwhile: each attempt starts afresh.
    withReadSnapshot(stateRoot, (snap) => {
      rmSync(tmp, { force: true });
      snap.db.run("VACUUM INTO ?", [tmp]);
    });
    const copy = new Database(tmp, constants.SQLITE_OPEN_READONLY);
    let head: { seq: number; hash: string };
    try {
      head = headOf(copy);
    } finally {
      copy.close();
    }
    fsyncFile(tmp);
    try {
      linkSync(tmp, target); // never replaces: a file that appeared meanwhile is refused, not overwritten
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new UsageError(`${target} already exists; loop backup never overwrites a file`);
      throw err;
    }
    fsyncFile(dirname(target));
    return { schema: "loop/backup@1", path: target, stateRoot: resolve(stateRoot), bytes: statSync(target).size, seq: head.seq, hash: head.hash };
  } finally {
    rmSync(tmp, { force: true });
  }
}

function fsyncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
