// What the working files of a checkout are, byte for byte, against a commit's tree: each path's
// bytes hashed as they are on disk (no filter, no conversion) beside the blob the commit holds, and
// the conversion attributes git applies to it. The verify runs the working files; loop records and
// lands the commit; an agent that makes the two differ (working-tree-encoding, eol, ident, a filter)
// would have the verify pass on bytes nothing lands (docs/threat-model.md#what-the-verify-runs).
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { GitError } from "../shared/errors.ts";
import { gitTry } from "./git.ts";

/** One file of a commit's tree: its mode, blob and path from the top level. */
interface TreeFile {
  mode: string;
  blob: string;
  path: string;
}

/** A path whose working file is not the commit's: what is on disk, and the attributes that convert it. */
interface WorkingFact {
  path: string;
  /** "missing", "not a regular file", "mode 100644 on disk, 100755 in the commit", or the bytes' hash differs ("bytes"). */
  differs: string;
  /** The conversion attributes set on the path (`working-tree-encoding=UTF-7`, `eol=crlf`, …). */
  attributes: string[];
}

const CONVERSIONS = ["text", "eol", "working-tree-encoding", "ident", "filter", "crlf"];

function run(cwd: string, args: string[], input?: string): string {
  const r = gitTry(cwd, args, {}, input);
  if (r.code !== 0) throw new GitError(args, r.code, r.stderr);
  return r.stdout;
}

/** Every file of `commit`'s tree (links and submodules included, as their modes say). */
export function treeFiles(cwd: string, commit: string): TreeFile[] {
  return run(cwd, ["ls-tree", "-r", "-z", "--full-tree", commit])
    .split("\0")
    .filter(Boolean)
    .map((line) => {
      const tab = line.indexOf("\t");
      const [mode, , blob] = line.slice(0, tab).split(" ");
      return { mode: mode!, blob: blob!, path: line.slice(tab + 1) };
    });
}

/**
 * The files of `files` whose working copy under `worktree` is not, byte for byte, the commit's
 * blob. Regular files are hashed raw (`git hash-object --no-filters`); a link or a submodule in
 * the commit is only checked to be one on disk.
 */
export function workingDiffers(worktree: string, files: readonly TreeFile[]): WorkingFact[] {
  const out: { path: string; differs: string }[] = [];
  const hash: TreeFile[] = [];
  for (const f of files) {
    const st = lstatSync(join(worktree, f.path), { throwIfNoEntry: false });
    if (!st) out.push({ path: f.path, differs: "missing" });
    else if (f.mode === "120000") {
      if (!st.isSymbolicLink()) out.push({ path: f.path, differs: "not a link, as in the commit" });
    } else if (f.mode === "160000") continue;
    else if (!st.isFile()) out.push({ path: f.path, differs: "not a regular file" });
    else if (/\n|\r/.test(f.path)) out.push({ path: f.path, differs: "a name git cannot hash from a list" });
    else {
      const exec = (st.mode & 0o111) !== 0 ? "100755" : "100644";
      if (exec !== f.mode) out.push({ path: f.path, differs: `mode ${exec} on disk, ${f.mode} in the commit` });
      else hash.push(f);
    }
  }
  if (hash.length) {
    const got = run(worktree, ["hash-object", "--no-filters", "--stdin-paths"], hash.map((f) => f.path).join("\n") + "\n").split("\n");
    hash.forEach((f, i) => {
      if (got[i] !== f.blob) out.push({ path: f.path, differs: "bytes" });
    });
  }
  if (!out.length) return [];
  const attrs = new Map<string, string[]>();
  const listed = run(worktree, ["check-attr", "-z", ...CONVERSIONS, "--", ...out.map((o) => o.path)]).split("\0");
  for (let i = 0; i + 2 < listed.length; i += 3) {
    const [path, attr, value] = [listed[i]!, listed[i + 1]!, listed[i + 2]!];
    if (value === "unspecified") continue;
    attrs.set(path, [...(attrs.get(path) ?? []), value === "set" ? attr : value === "unset" ? `-${attr}` : `${attr}=${value}`]);
  }
  return out.map((o) => ({ ...o, attributes: attrs.get(o.path) ?? [] }));
}
