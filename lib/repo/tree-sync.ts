// A folder made to hold exactly a commit's files, written by loop from the raw blobs of its own
// repository (docs/threat-model.md#the-airlock). Git is never run in the folder: git would read the
// folder's own .gitattributes (conversions, filters), ignore rules and nested repositories, all of
// which the agent writes. Here a file's bytes are the blob's bytes, its mode the tree's, and
// whatever else is found is removed, or reported (what `workspace.setup` made) and kept.
//
// Nothing found in the folder is followed: it is walked with lstat, a link is an entry like any
// other, a file is opened without following links or blocking on a FIFO, and new files are created
// exclusively. What loop wrote is remembered (the stamps: inode, size, times): a file still as loop
// left it is left alone, any other is written again from its blob (its change time cannot be set by
// a process, only moved forward by a write, so a stamp cannot be matched by a file loop did not write).
import {
  closeSync,
  constants as fs,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  rmSync,
  symlinkSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { readJsonOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { StartError } from "../shared/errors.ts";
import { gitBytes } from "./git.ts";

/** One entry of a commit's tree, as `git ls-tree -r -l` gives it. */
export interface TreeEntry {
  mode: "100644" | "100755" | "120000" | "160000";
  oid: string;
  /** The blob's size (0 for a submodule). */
  size: number;
  path: string;
}

/** A commit whose tree holds a path loop will not write (`..`, `.git`, an empty component): refused whole. */
export class TreeRefused extends StartError {
  override name = "TreeRefused";
  constructor(readonly paths: string[]) {
    super(
      `the commit holds ${paths.length === 1 ? "a path" : "paths"} no checkout may have: ${paths
        .slice(0, 5)
        .map((p) => JSON.stringify(p))
        .join(", ")}${paths.length > 5 ? `, … ${paths.length - 5} more` : ""}`,
    );
  }
}

/** Whether a tree path is one a checkout may hold: no empty, `.` or `..` component, no `.git` anywhere (any case). */
function writablePath(path: string): boolean {
  if (path === "" || path.includes("\0") || path.startsWith("/")) return false;
  return path.split("/").every((c) => c !== "" && c !== "." && c !== ".." && c.toLowerCase() !== ".git");
}

/**
 * The trees last read, by repository and commit id: a commit's tree never changes, and the airlock,
 * the checkout and the protected paths read the same one in a step. A few only: `loop run --watch`
 * lives through many items.
 */
const treesRead = new Map<string, readonly TreeEntry[]>();
const TREES_KEPT = 4;

/** Every file of `commit`'s tree, read from loop's own repository (object reads only). Throws TreeRefused, GitError. */
export function readTree(repo: string, commit: string): TreeEntry[] {
  const key = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(commit) ? `${repo}\0${commit}` : null;
  const known = key ? treesRead.get(key) : undefined;
  if (known) return [...known];
  const entries = readTreeOnce(repo, commit);
  if (key) {
    treesRead.set(key, entries);
    if (treesRead.size > TREES_KEPT) treesRead.delete(treesRead.keys().next().value!);
  }
  return [...entries];
}

function readTreeOnce(repo: string, commit: string): TreeEntry[] {
  const out: TreeEntry[] = [];
  const bad: string[] = [];
  for (const line of gitBytes(repo, ["ls-tree", "-r", "-l", "-z", "--full-tree", commit]).toString("utf8").split("\0")) {
    if (!line) continue;
    const tab = line.indexOf("\t");
    const [mode, type, oid, size] = line.slice(0, tab).split(/ +/);
    const path = line.slice(tab + 1);
    if (!writablePath(path) || !["100644", "100755", "120000", "160000"].includes(mode!) || (type !== "blob" && type !== "commit")) {
      bad.push(path);
      continue;
    }
    out.push({ mode: mode as TreeEntry["mode"], oid: oid!, size: size === "-" ? 0 : Number(size), path });
  }
  if (bad.length) throw new TreeRefused(bad);
  return out;
}

/** What loop knows of a file it wrote or read: the blob, and the file's identity and times then. */
type Stamp = [oid: string, ino: string, size: string, mtimeNs: string, ctimeNs: string, mode: number];

interface Stamps {
  version: 1;
  files: Record<string, Stamp>;
}

interface SyncOptions {
  /** Loop's own repository: the blobs are read from it. */
  repo: string;
  /** The folder to make the commit's. Its top-level `.git` is loop's to manage elsewhere and left alone. */
  dir: string;
  commit: string;
  /** Paths (relative, `/`-separated) left exactly as they are: what setup made. */
  keep: readonly string[];
  /** Where loop keeps the stamps of `dir` (never inside it). */
  stampsFile: string;
  /** What to do with a path the commit does not hold and `keep` does not name: remove it, or report it and leave it. */
  untracked: "remove" | "report";
  /** Change nothing: only say what differs (`restored`, `untracked`, `missing`). */
  dryRun?: boolean;
}

interface SyncResult {
  written: number;
  unchanged: number;
  /** Paths removed, because the commit does not hold them or holds something else there. */
  removed: number;
  /** With `untracked: "report"`: the top-most paths the commit does not hold (each a file, link or whole folder). */
  untracked: string[];
  /** Files the commit holds whose working copy was something else (rewritten from the blob). */
  restored: string[];
  /** Files the commit holds that were not there (written). */
  missing: number;
}

/**
 * Record that loop is about to make a folder whose every file is then unknown (stamps of nothing):
 * written before the folder, so that a step killed while filling it leaves a folder loop knows as its
 * own, each file of it written again from its blob next time.
 */
export function claimFolder(stampsFile: string): void {
  mkdirSync(dirname(stampsFile), { recursive: true });
  writeFileAtomic(stampsFile, JSON.stringify({ version: 1, files: {} } satisfies Stamps));
}

const BATCH_BYTES = 64 * 2 ** 20;

/**
 * Make `dir` hold exactly `commit`'s files (and what `keep` names), reading nothing through a link.
 * Throws TreeRefused, GitError, or a system error (the caller names what it was doing).
 */
export function syncTree(o: SyncOptions): SyncResult {
  const entries = readTree(o.repo, o.commit);
  const files = new Map(entries.map((e) => [e.path, e]));
  const dirs = new Set<string>();
  for (const e of entries) {
    if (e.mode === "160000") dirs.add(e.path);
    for (let i = e.path.indexOf("/"); i > 0; i = e.path.indexOf("/", i + 1)) dirs.add(e.path.slice(0, i));
  }
  const keep = new Set(o.keep);
  const prior = readJsonOrNull<Stamps>(o.stampsFile);
  const stamps: Record<string, Stamp> = prior?.version === 1 && prior.files && typeof prior.files === "object" ? prior.files : {};
  const next: Record<string, Stamp> = {};
  const result: SyncResult = { written: 0, unchanged: 0, removed: 0, untracked: [], restored: [], missing: 0 };
  const present = new Set<string>();
  const validDirs = new Set<string>([""]);

  const remove = (abs: string) => {
    if (!o.dryRun) rmSync(abs, { recursive: true, force: true });
    result.removed++;
  };
  const walk = (rel: string) => {
    const abs = rel ? join(o.dir, rel) : o.dir;
    for (const d of readdirSync(abs, { withFileTypes: true })) {
      const path = rel ? `${rel}/${d.name}` : d.name;
      const at = join(abs, d.name);
      if (!rel && d.name === ".git") continue;
      if (keep.has(path)) continue;
      if (dirs.has(path)) {
        if (lstatSync(at).isDirectory()) {
          validDirs.add(path);
          if (files.get(path)?.mode === "160000") {
            // A submodule is an empty folder in a checkout: whatever the agent put inside goes.
            present.add(path);
            for (const inner of readdirSync(at)) remove(join(at, inner));
          } else walk(path);
        } else remove(at);
        continue;
      }
      const want = files.get(path);
      if (!want) {
        if (o.untracked === "report" || o.dryRun) result.untracked.push(path);
        else remove(at);
        continue;
      }
      const st = lstatSync(at, { bigint: true });
      if (matches(want, at, st, stamps[path], o.dryRun === true)) {
        present.add(path);
        next[path] = stampOf(want.oid, st);
        result.unchanged++;
      } else {
        result.restored.push(path);
        remove(at);
      }
    }
  };
  walk("");

  const ensureDir = (rel: string) => {
    if (validDirs.has(rel)) return;
    const slash = rel.lastIndexOf("/");
    ensureDir(slash < 0 ? "" : rel.slice(0, slash));
    const abs = join(o.dir, rel);
    try {
      mkdirSync(abs);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || !lstatSync(abs).isDirectory()) throw err;
    }
    validDirs.add(rel);
  };
  // A path the commit holds at or below one of `keep` (an attempt committed what setup made: its
  // verify fails for it) is left as setup made it, never written over.
  const kept = (path: string) => keep.has(path) || [...path.matchAll(/\//g)].some((m) => keep.has(path.slice(0, m.index)));
  const missing = entries.filter((e) => !present.has(e.path) && !kept(e.path));
  result.missing = missing.length - result.restored.length;
  if (o.dryRun) return result;
  for (const e of missing.filter((m) => m.mode === "160000")) ensureDir(e.path);
  const blobs = missing.filter((m) => m.mode !== "160000");
  for (const batch of batches(blobs)) {
    const contents = catBlobs(
      o.repo,
      batch.map((b) => b.oid),
    );
    for (const e of batch) {
      const slash = e.path.lastIndexOf("/");
      ensureDir(slash < 0 ? "" : e.path.slice(0, slash));
      const abs = join(o.dir, e.path);
      const bytes = contents.get(e.oid)!;
      if (e.mode === "120000") {
        symlinkSync(bytes.toString("utf8"), abs);
        next[e.path] = stampOf(e.oid, lstatSync(abs, { bigint: true }));
      } else {
        const fd = openSync(abs, fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL | fs.O_NOFOLLOW, e.mode === "100755" ? 0o777 : 0o666);
        try {
          for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off);
          next[e.path] = stampOf(e.oid, fstatSync(fd, { bigint: true }));
        } finally {
          closeSync(fd);
        }
      }
      result.written++;
    }
  }
  mkdirSync(dirname(o.stampsFile), { recursive: true });
  writeFileAtomic(o.stampsFile, JSON.stringify({ version: 1, files: next } satisfies Stamps), { sync: false });
  return result;
}

function stampOf(oid: string, st: import("node:fs").BigIntStats): Stamp {
  return [oid, String(st.ino), String(st.size), String(st.mtimeNs), String(st.ctimeNs), Number(st.mode & 0o777n)];
}

/**
 * Whether the entry at `abs` (lstat'ed as `st`) is `want`. A file is, only when it is exactly as
 * loop left it (its stamp): one anything else wrote, even with the right bytes, is written again, so
 * no time or identity it carries (an mtime set to pass a stale compiled file as fresh, a hard link)
 * survives. `byBytes` (a dry run: is anything different?) compares the bytes instead.
 */
function matches(want: TreeEntry, abs: string, st: import("node:fs").BigIntStats, stamp: Stamp | undefined, byBytes: boolean): boolean {
  if (want.mode === "120000") return st.isSymbolicLink() && blobId(want.oid, Buffer.from(readlinkSync(abs, "utf8"))) === want.oid;
  if (!st.isFile()) return false;
  const exec = (st.mode & 0o111n) !== 0n;
  if (exec !== (want.mode === "100755") || Number(st.size) !== want.size) return false;
  if (byBytes) return hashFile(abs, want) === want.oid;
  const now = stampOf(want.oid, st);
  // biome-ignore lint/complexity/useOptionalChain: the chain would make the answer undefined, not false
  return stamp !== undefined && stamp.every((v, i) => i === 5 || v === now[i]) && ((stamp[5] & 0o111) !== 0) === exec;
}

/** The blob id of a working file, read without following a link or blocking; null when it is not a regular file of the size expected. */
function hashFile(abs: string, want: TreeEntry): string | null {
  let fd: number;
  try {
    fd = openSync(abs, fs.O_RDONLY | fs.O_NOFOLLOW | fs.O_NONBLOCK | fs.O_NOCTTY);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== want.size) return null;
    // In pieces: a file the size of the largest blob must not cost its size in memory.
    const h = new Bun.CryptoHasher(want.oid.length === 64 ? "sha256" : "sha1");
    h.update(`blob ${want.size}\0`);
    const buf = Buffer.alloc(Math.min(want.size, 1 << 20));
    for (let off = 0; off < want.size; ) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, want.size - off), off);
      if (n === 0) return null;
      h.update(buf.subarray(0, n));
      off += n;
    }
    return h.digest("hex");
  } finally {
    closeSync(fd);
  }
}

/** Git's id of a blob holding `bytes`, in the hash `like` is (40 hex digits: SHA-1, 64: SHA-256). */
function blobId(like: string, bytes: Buffer): string {
  const h = new Bun.CryptoHasher(like.length === 64 ? "sha256" : "sha1");
  h.update(`blob ${bytes.length}\0`);
  h.update(bytes);
  return h.digest("hex");
}

function* batches(entries: TreeEntry[]): Generator<TreeEntry[]> {
  let cur: TreeEntry[] = [];
  let bytes = 0;
  for (const e of entries) {
    if (cur.length && bytes + e.size > BATCH_BYTES) {
      yield cur;
      cur = [];
      bytes = 0;
    }
    cur.push(e);
    bytes += e.size;
  }
  if (cur.length) yield cur;
}

/** The contents of blobs by id, from one `git cat-file --batch` of loop's own repository (raw bytes: no filter runs). */
function catBlobs(repo: string, oids: string[]): Map<string, Buffer> {
  const unique = [...new Set(oids)];
  const out = gitBytes(repo, ["cat-file", "--batch"], new TextEncoder().encode(unique.join("\n") + "\n"));
  const map = new Map<string, Buffer>();
  let at = 0;
  for (const oid of unique) {
    const nl = out.indexOf(10, at);
    const header = out.subarray(at, nl).toString("utf8").split(" ");
    if (header[0] !== oid || header[1] !== "blob") throw new Error(`object ${oid} is not a blob of the repository (${header.slice(1).join(" ")})`);
    const size = Number(header[2]);
    map.set(oid, out.subarray(nl + 1, nl + 1 + size));
    at = nl + 1 + size + 1;
  }
  return map;
}

/** Of `entries`, the paths whose working copy under `dir` is not the blob's bytes (or mode, or kind), read as syncTree reads. */
export function differingFiles(dir: string, entries: readonly TreeEntry[]): string[] {
  const out: string[] = [];
  for (const e of entries) {
    const abs = join(dir, e.path);
    const st = lstatSync(abs, { bigint: true, throwIfNoEntry: false });
    if (!st || !matches(e, abs, st, undefined, true)) out.push(e.path);
  }
  return out;
}
