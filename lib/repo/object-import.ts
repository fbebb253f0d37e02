// Bringing a sandboxed session's objects into the repository. In the sandbox the repository's
// object store is read-only and the agent's git writes to a private folder (GIT_OBJECT_DIRECTORY,
// the store its alternate: lib/supervisor/sandbox.ts); when the session ends, loop copies in what
// it wrote, each object proven: a loose object is inflated and hashed against its name before it
// is copied, a pack is indexed by git itself (index-pack computes every object's name). An object
// that is not what its name says is never copied: what the agent wrote cannot replace an object of
// the repository, and a rewritten one stays out.
import { closeSync, copyFileSync, existsSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { gitTry } from "./git.ts";

/** Larger loose objects are not inflated in memory: they are refused, named (an agent's 512 MiB blob belongs in a pack). */
const LOOSE_CAP = 512 * 1024 * 1024;

interface ImportResult {
  /** Objects copied into the repository's store. */
  imported: number;
  /** Objects refused, each `objects/ab/cdef… (why)`. */
  refused: string[];
}

function objectFormat(repo: string): "sha1" | "sha256" {
  const r = gitTry(repo, ["rev-parse", "--show-object-format"]);
  return r.code === 0 && r.stdout.trim() === "sha256" ? "sha256" : "sha1";
}

/** Write `from` to `to` whole or not at all: a copy under a temporary name, synced, then linked into place (an existing object is kept). */
function copyInto(from: string, to: string): boolean {
  if (existsSync(to)) return false;
  mkdirSync(join(to, ".."), { recursive: true });
  const tmp = `${to}.import-${process.pid}`;
  copyFileSync(from, tmp);
  const fd = openSync(tmp, "r");
  try {
    fsyncSync(fd);
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

/** Import the objects under `from` (a private object folder) into `repo`'s store. A pack git cannot index is refused, named. */
function importObjects(o: { repo: string; commonDir: string; from: string }): ImportResult {
  const result: ImportResult = { imported: 0, refused: [] };
  if (!existsSync(o.from)) return result;
  const shared = join(o.commonDir, "objects");
  const algo = objectFormat(o.repo);
  const hexLen = algo === "sha256" ? 64 : 40;
  for (const fan of readdirSync(o.from)) {
    const dir = join(o.from, fan);
    if (fan === "pack" || fan === "info") continue;
    if (!/^[0-9a-f]{2}$/.test(fan) || !lstatSync(dir).isDirectory()) {
      result.refused.push(`objects/${fan} (not an object folder)`);
      continue;
    }
    for (const rest of readdirSync(dir)) {
      const name = `objects/${fan}/${rest}`;
      const file = join(dir, rest);
      if (rest.includes(".import-") || rest.startsWith("tmp_obj_")) continue; // a write git or loop did not finish
      if (!new RegExp(`^[0-9a-f]{${hexLen - 2}}$`).test(rest)) {
        result.refused.push(`${name} (not an object's name)`);
        continue;
      }
      const st = lstatSync(file);
      if (!st.isFile()) {
        result.refused.push(`${name} (not a regular file)`);
        continue;
      }
      if (st.size > LOOSE_CAP) {
        result.refused.push(`${name} (a loose object over ${LOOSE_CAP / 1024 / 1024} MiB)`);
        continue;
      }
      let raw: Buffer;
      try {
        raw = inflateSync(readFileSync(file), { maxOutputLength: LOOSE_CAP });
      } catch {
        result.refused.push(`${name} (does not inflate)`);
        continue;
      }
      const hash = new Bun.CryptoHasher(algo).update(raw).digest("hex");
      if (hash !== fan + rest) {
        result.refused.push(`${name} (holds ${hash.slice(0, 12)}…, not the object its name says)`);
        continue;
      }
      if (copyInto(file, join(shared, fan, rest))) result.imported++;
    }
  }
  const packDir = join(o.from, "pack");
  if (existsSync(packDir))
    for (const f of readdirSync(packDir).filter((f) => f.endsWith(".pack"))) {
      // index-pack reads the pack and names every object itself; the agent's .idx is never used.
      const staged = join(shared, "pack", `pack-import-${process.pid}-${crypto.randomUUID().slice(0, 8)}.pack`);
      mkdirSync(join(shared, "pack"), { recursive: true });
      // A pack without its index is one git does not read: the index, written last, makes it count.
      copyFileSync(join(packDir, f), staged);
      const r = gitTry(o.repo, ["index-pack", "--strict", "-o", staged.replace(/\.pack$/, ".idx"), staged]);
      if (r.code !== 0) {
        rmSync(staged, { force: true });
        rmSync(staged.replace(/\.pack$/, ".idx"), { force: true });
        result.refused.push(`objects/pack/${f} (${r.stderr.trim().split("\n").at(-1) || `index-pack exit ${r.code}`})`);
        continue;
      }
      result.imported++;
    }
  return result;
}

/** The session folder's private objects into the repository `repo` (its common git folder found by git). */
export function importSessionObjects(repo: string, sessionDir: string): ImportResult {
  const from = join(sessionDir, "objects");
  if (!existsSync(from)) return { imported: 0, refused: [] };
  const r = gitTry(repo, ["rev-parse", "--path-format=absolute", "--git-common-dir"]);
  if (r.code !== 0) return { imported: 0, refused: [`objects (git cannot name the repository's git folder: ${r.stderr.trim()})`] };
  return importObjects({ repo, commonDir: r.stdout.trim(), from });
}

/** What a refusal says, for a verdict or a warning. */
export function describeRefused(refused: readonly string[]): string {
  return refused.slice(0, 10).join(", ") + (refused.length > 10 ? `, … ${refused.length - 10} more` : "");
}
