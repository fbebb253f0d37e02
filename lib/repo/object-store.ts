// The repository's object store after an attempt without the sandbox (docs/threat-model.md#the-object-store).
// In the sandbox the store is read-only to the agent, and what it made comes in through the
// import alone (lib/repo/object-import.ts). Without it the agent can write the store: replace an
// object file with other content under the same name, or add a pack (under any name git reads) whose
// objects every reader then gets. Object files are named by their content, so a change can be
// proven, and the proof costs what the attempt could change:
//
// - a loose object written since the attempt's reservation is hashed against its name (its header
//   read first: one over the size bound is named, not inflated);
// - every file of `objects/pack/` is known by its content (a SHA-256 of its bytes, kept with its
//   inode, size and times in the state root, `object-proofs.json`): one whose stat is as recorded is
//   not read at all; one whose stat moved is hashed again, and the same bytes are only a pack git
//   freshened (it touches a pack whenever an object in it is written again); other bytes are a
//   rewrite. A pack or index not seen before is verified by git (`verify-pack`), whatever its name
//   (a pack with no index is read by no git: it is verified once one appears);
// - a link, a FIFO or anything but a regular file there is named, never opened;
// - a written `objects/info/alternates`, and a multi-pack index or commit-graph that does not verify.
import { closeSync, constants as fs, fstatSync, lstatSync, openSync, readdirSync, readSync } from "node:fs";
import { join, resolve } from "node:path";
import { readJsonOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { gitTry, repoFacts } from "./git.ts";
import { proveLoose } from "./object-import.ts";

/** Slack for file systems whose change times are coarser than the clock that stamped the reservation. */
const SLACK_MS = 2_000;

/** What is known of a file of `objects/pack/`: its identity and times, and the hash of its bytes. */
type Known = [ino: string, size: string, mtimeNs: string, ctimeNs: string, sha256: string];

interface Proofs {
  version: 1;
  files: Record<string, Known>;
}

function objectsDir(repo: string): string {
  return resolve(repo, repoFacts(repo).objects);
}

/** A regular file's SHA-256 and stat, read without following a link or blocking; a string saying what it is otherwise. */
function hashRegular(path: string): { known: Known } | { not: string } {
  let fd: number;
  try {
    fd = openSync(path, fs.O_RDONLY | fs.O_NOFOLLOW | fs.O_NONBLOCK | fs.O_NOCTTY);
  } catch (err) {
    return { not: (err as NodeJS.ErrnoException).code === "ELOOP" ? "a symbolic link" : `unreadable (${(err as NodeJS.ErrnoException).code})` };
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile()) return { not: st.isFIFO() ? "a FIFO" : "not a regular file" };
    const h = new Bun.CryptoHasher("sha256");
    const buf = Buffer.alloc(1 << 20);
    for (let off = 0; ; ) {
      const n = readSync(fd, buf, 0, buf.length, off);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
      off += n;
    }
    return { known: [String(st.ino), String(st.size), String(st.mtimeNs), String(st.ctimeNs), h.digest("hex")] };
  } finally {
    closeSync(fd);
  }
}

function sameStat(a: Known, path: string): boolean {
  const st = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  return Boolean(st?.isFile() && String(st.ino) === a[0] && String(st.size) === a[1] && String(st.mtimeNs) === a[2] && String(st.ctimeNs) === a[3]);
}

/**
 * Record what `objects/pack/` holds now (hashing only what is new or moved since the last record):
 * the baseline an attempt's proof compares with. Returns the files that are not regular files.
 */
export function recordObjectStore(o: { repo: string; proofs: string }): string[] {
  const pack = join(objectsDir(o.repo), "pack");
  const prior = readJsonOrNull<Proofs>(o.proofs);
  const known = prior?.version === 1 ? prior.files : {};
  const files: Record<string, Known> = {};
  const odd: string[] = [];
  for (const f of safeList(pack)) {
    const path = join(pack, f);
    const was = known[f];
    if (was && sameStat(was, path)) files[f] = was;
    else {
      const h = hashRegular(path);
      if ("known" in h) files[f] = h.known;
      else odd.push(`objects/pack/${f} is ${h.not}`);
    }
  }
  writeFileAtomic(o.proofs, JSON.stringify({ version: 1, files } satisfies Proofs), { sync: false });
  return odd;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/**
 * What in the object store of `repo` changed since `since` (ms) and does not hold what its name
 * says, one line each (empty: nothing), against the baseline in `proofs` (recordObjectStore), which
 * it brings up to date. Throws GitError when git cannot say where the store is.
 */
export function tamperedObjects(o: { repo: string; since: number; proofs: string }): string[] {
  const objects = objectsDir(o.repo);
  const after = o.since - SLACK_MS;
  const algo = repoFacts(o.repo).sha256 ? "sha256" : "sha1";
  const changed = (path: string) => {
    const st = lstatSync(path);
    return st.ctimeMs >= after || st.mtimeMs >= after || !st.isFile();
  };
  const out: string[] = [];
  const verify = (what: string, args: string[]) => {
    const r = gitTry(o.repo, args);
    if (r.code !== 0) out.push(`${what} does not verify (${r.stderr.trim().split("\n")[0] ?? `git exited ${r.code}`})`);
  };
  for (const dir of safeList(objects)) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue;
    // A fan-out folder replaced by a link would have its objects read from elsewhere, unseen here.
    const fan = lstatSync(join(objects, dir));
    if (!fan.isDirectory()) {
      out.push(`objects/${dir} is ${fan.isSymbolicLink() ? "a symbolic link" : "not a directory"}`);
      continue;
    }
    for (const file of safeList(join(objects, dir))) {
      const path = join(objects, dir, file);
      if (!lstatSync(path, { throwIfNoEntry: false }) || !changed(path)) continue;
      if (!/^[0-9a-f]+$/.test(file)) continue; // git's own temporary files (tmp_obj_*)
      const proven = proveLoose(path, dir + file, algo);
      if ("bytes" in proven) continue;
      if (proven.kind === "mismatch") out.push(`objects/${dir}/${file} does not hold the object its name says`);
      else out.push(`objects/${dir}/${file} ${proven.kind === "not_regular" ? `is ${proven.detail}` : `could not be checked: ${proven.detail}`}`);
    }
  }
  const pack = join(objects, "pack");
  const prior = readJsonOrNull<Proofs>(o.proofs);
  const known = prior?.version === 1 ? prior.files : {};
  const files: Record<string, Known> = {};
  const fresh = new Set<string>();
  for (const f of safeList(pack)) {
    const path = join(pack, f);
    const was = known[f];
    if (was && sameStat(was, path)) {
      files[f] = was;
      continue;
    }
    const h = hashRegular(path);
    if ("not" in h) {
      out.push(`objects/pack/${f} is ${h.not}`);
      continue;
    }
    files[f] = h.known;
    // The multi-pack index is git's to rewrite (a repack does): it is verified whenever it moved.
    if (f === "multi-pack-index") verify("objects/pack/multi-pack-index", ["multi-pack-index", "verify"]);
    // Moved since the baseline: the same bytes are a pack git freshened, others a rewrite.
    else if (was) {
      if (was[4] !== h.known[4]) out.push(`objects/pack/${f} was rewritten (its bytes are not those it held before the attempt)`);
    } else if (f.endsWith(".pack") || f.endsWith(".idx")) fresh.add(f.replace(/\.(pack|idx)$/, ""));
  }
  // A pack not seen before, whatever its name git reads it by: verified by git through its index.
  // A pack with no index is read by no git (an import cut short between its two renames leaves
  // one): nothing to prove until an index appears, and then both are verified.
  for (const p of fresh) if (files[`${p}.idx`]) verify(`objects/pack/${p}`, ["verify-pack", join(pack, `${p}.idx`)]);
  const info = join(objects, "info");
  const alternates = join(info, "alternates");
  if (lstatSync(alternates, { throwIfNoEntry: false }) && changed(alternates))
    out.push("objects/info/alternates was written: git would read objects from elsewhere");
  const graphs = [join(info, "commit-graph"), join(info, "commit-graphs")].filter((p) => lstatSync(p, { throwIfNoEntry: false }));
  if (graphs.some(changed)) verify("objects/info/commit-graph", ["commit-graph", "verify"]);
  // What was found is the next baseline only when it is sound: a rewrite stays named until it is put right.
  if (out.length === 0) writeFileAtomic(o.proofs, JSON.stringify({ version: 1, files } satisfies Proofs), { sync: false });
  return out;
}
