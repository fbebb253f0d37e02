// A full disk (docs/cli/loop-run.md#a-full-disk): an environment fault, never an item's. A step
// checks the free space of the state root's filesystem before it opens the store; below
// LOW_SPACE_BYTES (or on an error a full disk caused: ENOSPC, SQLITE_FULL, SQLite's I/O errors while
// space is low) it records nothing but the fault. So that the fault can be recorded at all (SQLite
// needs room for its -shm file and WAL frames), a step keeps a reserve file in the state root while
// there is room, and gives it back the moment it finds the disk full. The judgement of what an
// error means is pure (diskFullCause); the rest look at the disk. Recording the fault in a step is
// lib/writer/disk-fault.ts (this module stays light: loop status loads it).
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statfsSync, statSync, writeSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** The reserve: what recording the fault, notifying and writing state.json of a small loop need. */
export const RESERVE_FILE = "disk-reserve";
const RESERVE_BYTES = 1 << 20;
/** Less free space than this on the state root's filesystem is a full disk: a step could not record what it does. */
export const LOW_SPACE_BYTES = 256 << 10;

export interface DiskSpace {
  /** The path asked about (the state root). */
  path: string;
  /** The mount point of the filesystem holding it. */
  mount: string;
  /** Bytes free for this user. */
  free: number;
}

/** The nearest existing directory at or above `path`. */
function existing(path: string): string {
  let d = resolve(path);
  while (!existsSync(d) && dirname(d) !== d) d = dirname(d);
  return d;
}

/** Free space of the filesystem holding `path` and its mount point; null where the system cannot say. */
export function diskSpace(path: string): DiskSpace | null {
  try {
    const at = existing(path);
    const fs = statfsSync(at);
    // The mount point: the highest ancestor on the same device.
    const dev = statSync(at).dev;
    let mount = at;
    while (dirname(mount) !== mount && statSync(dirname(mount)).dev === dev) mount = dirname(mount);
    return { path: resolve(path), mount, free: Number(fs.bavail) * Number(fs.bsize) };
  } catch {
    return null;
  }
}

/** The disk holding `path` when it is full (less than LOW_SPACE_BYTES free), else null. */
export function fullDisk(path: string): DiskSpace | null {
  const s = diskSpace(path);
  return s !== null && s.free < LOW_SPACE_BYTES ? s : null;
}

/** The error codes an error carries, its causes' included (a StoreError wraps SQLite's). */
function codesOf(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") out.push(code);
  }
  return out;
}

/**
 * Whether `err` is a full disk's doing. ENOSPC and EDQUOT say so themselves, and SQLITE_FULL; an I/O
 * error of SQLite (SQLITE_IOERR_SHMSIZE when its -shm cannot grow, SQLITE_IOERR_WRITE, …) or a file it
 * cannot open is one when the disk is low (`lowSpace`), which SQLite does not say. Pure.
 */
export function diskFullCause(err: unknown, lowSpace: boolean): boolean {
  const codes = codesOf(err);
  if (codes.some((c) => c === "ENOSPC" || c === "EDQUOT" || c === "SQLITE_FULL")) return true;
  return lowSpace && codes.some((c) => c.startsWith("SQLITE_IOERR") || c === "SQLITE_CANTOPEN" || c === "EIO");
}

/** Give the reserve back to the disk; true when there was one. */
export function releaseReserve(stateRoot: string): boolean {
  const path = join(stateRoot, RESERVE_FILE);
  if (!existsSync(path)) return false;
  rmSync(path, { force: true });
  return true;
}

/**
 * Make the reserve when it is missing and the disk has room to spare (a step after `loop init`, after
 * the space was freed). A failure only means there is no reserve this time. Returns true when made.
 */
export function ensureReserve(stateRoot: string, space: DiskSpace | null): boolean {
  const path = join(stateRoot, RESERVE_FILE);
  if (!existsSync(stateRoot) || existsSync(path)) return false;
  if (space === null || space.free < 4 * RESERVE_BYTES) return false;
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    // Created afresh: never written through a link (an agent's) found under its name.
    rmSync(tmp, { force: true });
    const fd = openSync(tmp, "wx");
    try {
      // Written, not sparse: a reserve must hold real blocks.
      const zeros = Buffer.alloc(64 << 10);
      for (let done = 0; done < RESERVE_BYTES; done += zeros.length) writeSync(fd, zeros);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    return true;
  } catch {
    rmSync(tmp, { force: true });
    return false;
  }
}
