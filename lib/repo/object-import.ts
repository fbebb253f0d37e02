// Bringing the objects an attempt made into the repository (docs/threat-model.md#the-airlock). The
// agent's git writes to a private git folder of its own (lib/repo/attempt-git.ts), the repository's
// store its read-only alternate; when the attempt ends loop copies in what it wrote, each object
// proven before it is used: what the agent made is read as hashed objects, nothing else.
//
// - Every file is opened without following a link or blocking (a FIFO, a link to /dev/zero), and
//   must be a regular file of a bounded size.
// - A loose object's header is read first: one that says it holds more than MAX_OBJECT_BYTES is
//   refused unread (a few KiB of zeros inflate to gigabytes); the rest is inflated within that bound
//   and hashed against its name.
// - A pack, whatever its name, is indexed by git itself (`index-pack --stdin --strict`, which names
//   every object by its content; the agent's .idx is never read), into a quarantine folder, with a
//   deadline and a memory limit; every object it holds must be within the size bound before the pack
//   joins the store.
// An object that is not what its name says, or is too large, is never copied: the import names it.
import {
  closeSync,
  constants as fs,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { inflateSync, constants as zlib } from "node:zlib";
import { repoFacts } from "./git.ts";

/** The largest object an attempt may add, inflated: 100 MiB (GitHub refuses larger files too). docs/threat-model.md#the-airlock. */
export const MAX_OBJECT_BYTES = 100 * 2 ** 20;
/** The largest pack file imported as it is on disk. */
const MAX_PACK_BYTES = 2 * 2 ** 30;
/** How long git may take to index one pack, and the memory it may take doing so. */
const INDEX_DEADLINE_MS = 120_000;
const INDEX_MEMORY_KIB = 2 * 2 ** 20;

/** Why an object or file was not imported. */
type RefusalKind = "not_regular" | "not_an_object" | "mismatch" | "too_large" | "pack_refused";

export interface Refusal {
  kind: RefusalKind;
  /** Where, relative to the private object folder (`objects/ab/cdef…`, `objects/pack/x.pack`). */
  path: string;
  /** What was wrong, for people. */
  detail: string;
}

interface ImportResult {
  /** Objects (loose) and packs copied into the repository's store. */
  imported: number;
  refused: Refusal[];
}

/** The object format's hash and name length. */
function objectFormat(repo: string): { algo: "sha1" | "sha256"; hex: number } {
  return repoFacts(repo).sha256 ? { algo: "sha256", hex: 64 } : { algo: "sha1", hex: 40 };
}

/** A regular file opened for reading without following a link or blocking; its descriptor and size, or why not. */
function openRegular(path: string): { fd: number; size: number } | { why: string } {
  let fd: number;
  try {
    fd = openSync(path, fs.O_RDONLY | fs.O_NOFOLLOW | fs.O_NONBLOCK | fs.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { why: code === "ELOOP" ? "a symbolic link" : `cannot be opened (${code})` };
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    return { why: st.isFIFO() ? "a FIFO" : st.isCharacterDevice() ? "a device" : st.isSocket() ? "a socket" : "not a regular file" };
  }
  return { fd, size: st.size };
}

function readAll(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  for (let off = 0; off < size; ) {
    const n = readSync(fd, buf, off, size - off, off);
    if (n === 0) return buf.subarray(0, off);
    off += n;
  }
  return buf;
}

/** A loose object's type and inflated size, from the first bytes of its stream; null when it is not one. */
function looseHeader(deflated: Buffer): { type: string; size: number } | null {
  let head: Buffer;
  try {
    head = inflateSync(deflated.subarray(0, 256), { finishFlush: zlib.Z_SYNC_FLUSH });
  } catch {
    return null;
  }
  const nul = head.indexOf(0);
  const m = nul > 0 ? /^(blob|tree|commit|tag) (\d+)$/.exec(head.subarray(0, nul).toString("latin1")) : null;
  return m ? { type: m[1]!, size: Number(m[2]) } : null;
}

/**
 * One loose object file proven against its name: its bytes as stored (to copy), or a refusal.
 * Exported for tests and for the object store's own proof (lib/repo/object-store.ts).
 */
export function proveLoose(
  path: string,
  name: string,
  algo: "sha1" | "sha256",
  max = MAX_OBJECT_BYTES,
): { bytes: Buffer } | { kind: RefusalKind; detail: string } {
  const opened = openRegular(path);
  if ("why" in opened) return { kind: "not_regular", detail: opened.why };
  let stored: Buffer;
  try {
    // Deflated bytes are at most a little larger than what they hold: anything larger is no object within the bound.
    if (opened.size > max + 1024) return { kind: "too_large", detail: `${opened.size} bytes on disk, over the ${max / 2 ** 20} MiB bound` };
    stored = readAll(opened.fd, opened.size);
  } finally {
    closeSync(opened.fd);
  }
  const header = looseHeader(stored);
  if (!header) return { kind: "not_an_object", detail: "not a git object" };
  if (header.size > max) return { kind: "too_large", detail: `a ${header.type} of ${header.size} bytes, over the ${max / 2 ** 20} MiB bound` };
  let raw: Buffer;
  try {
    raw = inflateSync(stored, { maxOutputLength: header.size + 64 });
  } catch {
    return { kind: "not_an_object", detail: "does not inflate to the size its header says" };
  }
  const hash = new Bun.CryptoHasher(algo).update(raw).digest("hex");
  if (hash !== name) return { kind: "mismatch", detail: `holds ${hash.slice(0, 12)}…, not the object its name says` };
  return { bytes: stored };
}

/** Write `bytes` as `to`, whole or not at all, never over an object already there (same name: same content). */
function placeObject(to: string, bytes: Buffer): boolean {
  try {
    lstatSync(to);
    return false;
  } catch {
    // not there yet
  }
  mkdirSync(join(to, ".."), { recursive: true });
  // Named as git names its own temporary objects: one a killed step leaves is git's to prune, not "bad sha1 file".
  const tmp = join(to, "..", `tmp_obj_loop_${process.pid}_${Math.random().toString(36).slice(2, 8)}`);
  const fd = openSync(tmp, fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL | fs.O_NOFOLLOW, 0o444);
  try {
    for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    rmSync(tmp, { force: true });
  }
  return true;
}

/** Index one pack read from `fd` into `quarantine`, check every object's size, and move it into the store. Null when imported, else why not. */
async function importPack(o: { repo: string; shared: string; fd: number; max: number }): Promise<{ kind: RefusalKind; detail: string } | null> {
  const quarantine = mkdtempSync(join(o.shared, "incoming-loop-"));
  try {
    mkdirSync(join(quarantine, "pack"));
    const env = { ...process.env, GIT_OBJECT_DIRECTORY: quarantine, GIT_ALTERNATE_OBJECT_DIRECTORIES: o.shared };
    // Memory bounded (a delta may claim any result size), time bounded, big objects streamed.
    const script = `ulimit -v ${INDEX_MEMORY_KIB}; exec git -c core.bigFileThreshold=16m -c pack.threads=1 -c core.hooksPath=/dev/null index-pack --stdin --strict --max-input-size=${MAX_PACK_BYTES}`;
    const proc = Bun.spawn(["sh", "-c", script], { cwd: o.repo, env, stdin: o.fd, stdout: "pipe", stderr: "pipe", detached: true });
    const timer = setTimeout(() => {
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }, INDEX_DEADLINE_MS);
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    clearTimeout(timer);
    const refused = (detail: string) => ({ kind: "pack_refused" as const, detail });
    if (code !== 0)
      return refused(
        proc.signalCode === "SIGKILL"
          ? `git could not index it within ${INDEX_DEADLINE_MS / 1000} s`
          : stderr.trim().split("\n").at(-1) || `index-pack exit ${code}`,
      );
    // Every object of the pack, by itself (no alternate): each within the bound.
    const sizes = Bun.spawnSync(["git", "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(objectsize)"], {
      cwd: o.repo,
      env: { ...process.env, GIT_OBJECT_DIRECTORY: quarantine, GIT_ALTERNATE_OBJECT_DIRECTORIES: "" },
      stdout: "pipe",
      stderr: "pipe",
    });
    if (sizes.exitCode !== 0) return refused(`its objects could not be listed: ${sizes.stderr.toString().trim()}`);
    for (const line of sizes.stdout.toString().split("\n")) {
      const [id, type, size] = line.split(" ");
      if (size && Number(size) > o.max)
        return { kind: "too_large", detail: `it holds a ${type} of ${size} bytes (${id}), over the ${o.max / 2 ** 20} MiB bound` };
    }
    // The index last: git reads a pack once its .idx is there.
    const made = readdirSync(join(quarantine, "pack"));
    const order = (f: string) => (f.endsWith(".idx") ? 1 : 0);
    for (const f of made.sort((a, b) => order(a) - order(b))) renameSync(join(quarantine, "pack", f), join(o.shared, "pack", f));
    return null;
  } finally {
    rmSync(quarantine, { recursive: true, force: true });
  }
}

/**
 * Import the objects under `from` (a private object folder: loose fan-out folders and `pack/`) into
 * `repo`'s store. Files git leaves while writing (`tmp_obj_*`, `tmp_pack_*`) and the indexes, bitmaps
 * and other companions of a pack (never read: the pack is indexed again) are passed over.
 */
export async function importObjects(o: { repo: string; from: string; max?: number }): Promise<ImportResult> {
  const result: ImportResult = { imported: 0, refused: [] };
  const max = o.max ?? MAX_OBJECT_BYTES;
  const top = lstatSync(o.from, { throwIfNoEntry: false });
  if (!top) return result;
  if (!top.isDirectory()) return { imported: 0, refused: [{ kind: "not_regular", path: "objects", detail: "not a folder" }] };
  const shared = join(repoFacts(o.repo).common, "objects");
  const { algo, hex } = objectFormat(o.repo);
  const nameRe = new RegExp(`^[0-9a-f]{${hex - 2}}$`);
  const refuse = (kind: RefusalKind, path: string, detail: string) => result.refused.push({ kind, path, detail });
  for (const fan of readdirSync(o.from).sort()) {
    if (fan === "pack" || fan === "info") continue;
    const dir = join(o.from, fan);
    if (!/^[0-9a-f]{2}$/.test(fan)) continue; // not an object folder: git never reads it
    if (!lstatSync(dir).isDirectory()) {
      refuse("not_regular", `objects/${fan}`, "not a folder");
      continue;
    }
    for (const rest of readdirSync(dir).sort()) {
      if (!nameRe.test(rest)) continue; // a temporary file of git's, or junk: not an object
      const path = `objects/${fan}/${rest}`;
      const proven = proveLoose(join(dir, rest), fan + rest, algo, max);
      if ("kind" in proven) refuse(proven.kind, path, proven.detail);
      else if (placeObject(join(shared, fan, rest), proven.bytes)) result.imported++;
    }
  }
  const packDir = join(o.from, "pack");
  const st = lstatSync(packDir, { throwIfNoEntry: false });
  if (st && !st.isDirectory()) refuse("not_regular", "objects/pack", "not a folder");
  else if (st)
    for (const f of readdirSync(packDir).sort()) {
      if (!f.endsWith(".pack")) continue;
      const path = `objects/pack/${f}`;
      const opened = openRegular(join(packDir, f));
      if ("why" in opened) {
        refuse("not_regular", path, opened.why);
        continue;
      }
      try {
        if (opened.size > MAX_PACK_BYTES) {
          refuse("too_large", path, `${opened.size} bytes, over the ${MAX_PACK_BYTES / 2 ** 30} GiB bound of a pack`);
          continue;
        }
        mkdirSync(join(shared, "pack"), { recursive: true });
        const why = await importPack({ repo: o.repo, shared, fd: opened.fd, max });
        if (why === null) result.imported++;
        else refuse(why.kind, path, why.detail);
      } finally {
        closeSync(opened.fd);
      }
    }
  return result;
}

/** What a refusal says, for a verdict or a warning. */
export function describeRefused(refused: readonly Refusal[]): string {
  const one = (r: Refusal) => `${r.path} (${r.detail})`;
  return refused.slice(0, 10).map(one).join(", ") + (refused.length > 10 ? `, … ${refused.length - 10} more` : "");
}
