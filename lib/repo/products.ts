// What `workspace.setup` made in a checkout (its products: a node_modules, a .venv), as it made it.
// In the sandbox they are read-only to the agent and the verify. Without it the agent can rewrite them
// (a checker script setup installed, a package's code), and the verify would then trust what the
// agent wrote. So each file's identity and times are recorded once setup has run (a change time
// cannot be set back by a process, only moved forward by a write), and compared again before a
// verify and before a checkout is reused: walked with lstat, nothing followed or opened.
import { type BigIntStats, lstatSync, readdirSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { GitError } from "../shared/errors.ts";
import { gitTry } from "./git.ts";

/** Relative path → the stamp of what is there (type, mode, size, inode, modification and change times). */
export type ProductStamps = Record<string, string>;

/** The walk stops here (a bound on a step's time): entries past it are neither stamped nor compared. */
const MAX_ENTRIES = 500_000;

function stamp(st: BigIntStats): string {
  const kind = st.isDirectory() ? "d" : st.isFile() ? "f" : st.isSymbolicLink() ? "l" : "o";
  // A folder's size and times move whenever an entry is added or removed, which the walk sees itself.
  if (kind === "d") return `d:${st.mode}:${st.ino}`;
  return `${kind}:${st.mode}:${st.size}:${st.ino}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** The stamps of every entry at and below each of `paths` (relative to `dir`); an absent one is simply not there. */
export function stampProducts(dir: string, paths: readonly string[]): ProductStamps {
  const out: ProductStamps = {};
  let count = 0;
  const walk = (rel: string): void => {
    if (++count > MAX_ENTRIES) return;
    const st = lstatSync(join(dir, rel), { bigint: true, throwIfNoEntry: false });
    if (!st) return;
    out[rel] = stamp(st);
    if (!st.isDirectory()) return;
    for (const name of readdirSync(join(dir, rel)).sort()) walk(`${rel}/${name}`);
  };
  for (const p of [...paths].sort()) walk(p);
  return out;
}

/** The entries at and below `paths` that are not as recorded: changed, added or removed, sorted. */
export function changedProducts(dir: string, paths: readonly string[], recorded: ProductStamps): string[] {
  const now = stampProducts(dir, paths);
  const changed = new Set<string>();
  for (const [rel, s] of Object.entries(now)) if (recorded[rel] !== s) changed.add(rel);
  for (const rel of Object.keys(recorded)) if (!(rel in now)) changed.add(rel);
  return [...changed].sort();
}

/** What setup's products are made from when loop.json names nothing (`workspace.setupKey`): the manifests and lockfiles at the root, and the `requirements/` folder (as one tree). */
const DEFAULT_INPUTS =
  /^(package\.json|package-lock\.json|npm-shrinkwrap\.json|pnpm-lock\.yaml|yarn\.lock|bun\.lockb?|\.npmrc|pyproject\.toml|setup\.py|setup\.cfg|requirements[^/]*\.txt|requirements|uv\.lock|poetry\.lock|Pipfile(\.lock)?|Cargo\.toml|Cargo\.lock|go\.mod|go\.sum|Gemfile(\.lock)?)$/;

/**
 * The setup key of `commit` (docs/loop-json.md#workspace): a hash of the setup command and the blob
 * ids, at that commit, of what it is made from (`paths`, each a file or folder of the repository,
 * taken literally; without them, the manifests and lockfiles at the root). Read from loop's own git
 * (objects only, no work tree): what an agent wrote in a checkout never counts. Two commits with
 * the same key give setup the same inputs, so what it made for one serves the other.
 */
export function setupKey(o: { repo: string; commit: string; command: string; paths?: readonly string[] }): string {
  const args = o.paths ? ["--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", o.commit, "--", ...o.paths] : ["ls-tree", "-z", "--full-tree", o.commit];
  const r = gitTry(o.repo, args);
  if (r.code !== 0) throw new GitError(args, r.code, r.stderr);
  const inputs = r.stdout
    .split("\0")
    .filter(Boolean)
    .map((line) => {
      const tab = line.indexOf("\t");
      return [line.slice(tab + 1), line.slice(0, tab).split(" ")[2] ?? ""] as const;
    })
    .filter(([path]) => o.paths !== undefined || DEFAULT_INPUTS.test(path))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash("sha256")
    .update(JSON.stringify({ command: o.command, inputs }))
    .digest("hex")
    .slice(0, 32);
}
