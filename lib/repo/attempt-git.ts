// The private git folder of one attempt (docs/threat-model.md#the-airlock). The agent's worktree is
// a plain folder whose `.git` names a git folder made for this attempt alone: its own config, HEAD,
// index, refs and object folder, the repository's store its read-only alternate. Whatever the agent
// does to it (links at COMMIT_EDITMSG or logs/HEAD, a FIFO, hooks, an fsmonitor, ignore rules,
// refs below another item's name) stays in it: loop's own git never runs there. When the attempt
// ends loop takes two things out, each proven: its objects (lib/repo/object-import.ts) and the head
// the seal proposes (lib/supervisor/seal.ts), a value.
//
// The same layout, read-only, gives a verify a git folder of its own at the verified commit.
import { closeSync, constants as fs, lstatSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { GitError } from "../shared/errors.ts";
import { git, gitTry, repoFacts } from "./git.ts";

interface AttemptGitOptions {
  /** The repository: its store becomes the alternate, its identity (user.name/email) is copied. */
  repo: string;
  /** The folder to make (it must not exist). */
  gitDir: string;
  /** The worktree it belongs to: its `.git` is written to name `gitDir`. */
  worktree: string;
  /** The branch HEAD names, and the commit it is at. */
  branch: string;
  head: string;
  /** Other refs shown to the agent as they are now (the base, the landing target, the forge's fetched base): full ref name → commit. */
  refs: Record<string, string>;
  /** Lines for info/exclude: files of the agents, never part of an item's work. */
  excludes: readonly string[];
}

/** The repository's identity (user.name, user.email), as text (reading config runs nothing), in one git call. */
function identity(repo: string): { name: string | null; email: string | null } {
  const r = gitTry(repo, ["config", "--get-regexp", "^user\\.(name|email)$"]);
  const out: { name: string | null; email: string | null } = { name: null, email: null };
  for (const line of r.code === 0 ? r.stdout.split("\n") : []) {
    const m = /^user\.(name|email) (.*)$/i.exec(line);
    if (m) out[m[1]!.toLowerCase() as "name" | "email"] = m[2]!;
  }
  return out;
}

/** A config value written safely: git's quoting of `"` and `\`, and no newline. */
function quoted(value: string): string {
  return `"${value
    .replace(/[\n\r]/g, " ")
    .replace(/\\/g, "\\\\")
    .replace(/"/g, '\\"')}"`;
}

/**
 * Make the attempt's git folder at `gitDir`, its index read from `head` (no work tree is read), and
 * point the worktree's `.git` at it (whatever was there, a link or a folder included, is replaced,
 * never followed). Throws GitError or a system error.
 */
export function makeAttemptGitDir(o: AttemptGitOptions): void {
  const { common, sha256 } = repoFacts(o.repo);
  if (o.gitDir === join(o.worktree, ".git") && lstatSync(o.gitDir, { throwIfNoEntry: false })) rmSync(o.gitDir, { recursive: true, force: true });
  // Made whole under another name, then renamed into place: a step killed half-way leaves no git
  // folder that passes for the attempt's (the close path would try to seal through it).
  const making = `${o.gitDir}.making`;
  rmSync(making, { recursive: true, force: true });
  mkdirSync(making, { mode: 0o755 });
  for (const d of ["objects/info", "objects/pack", "refs/heads", "refs/tags", "info"]) mkdirSync(join(making, d), { recursive: true });
  const lines = [
    "[core]",
    `\trepositoryformatversion = ${sha256 ? 1 : 0}`,
    "\tfilemode = true",
    "\tbare = false",
    "\tlogallrefupdates = true",
    `\tworktree = ${quoted(o.worktree)}`,
  ];
  if (sha256) lines.push("[extensions]", "\tobjectformat = sha256");
  const { name, email } = identity(o.repo);
  if (name !== null || email !== null)
    lines.push("[user]", ...(name !== null ? [`\tname = ${quoted(name)}`] : []), ...(email !== null ? [`\temail = ${quoted(email)}`] : []));
  writeFileSync(join(making, "config"), lines.join("\n") + "\n");
  writeFileSync(join(making, "objects", "info", "alternates"), join(common, "objects") + "\n");
  writeFileSync(join(making, "HEAD"), `ref: refs/heads/${o.branch}\n`);
  mkdirSync(join(making, "refs", "heads", o.branch, ".."), { recursive: true });
  writeFileSync(join(making, "refs", "heads", o.branch), `${o.head}\n`);
  const others = Object.entries(o.refs).filter(([n]) => n !== `refs/heads/${o.branch}` && /^refs\/(heads|remotes)\//.test(n));
  if (others.length)
    writeFileSync(
      join(making, "packed-refs"),
      ["# pack-refs with: peeled fully-peeled sorted", ...others.sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, c]) => `${c} ${n}`)].join("\n") + "\n",
    );
  writeFileSync(join(making, "info", "exclude"), o.excludes.join("\n") + (o.excludes.length ? "\n" : ""));
  // Only this folder's own files are read: GIT_DIR pins it, and read-tree without -u reads no work tree.
  git(o.repo, ["--git-dir", making, "read-tree", o.head]);
  renameSync(making, o.gitDir);
  // A git folder in the checkout itself (a checkout kept for a person) needs no .git file naming it.
  if (o.gitDir !== join(o.worktree, ".git")) pointWorktree(o.worktree, o.gitDir);
}

/** Write `<worktree>/.git` naming `gitDir`: whatever is there (a file, a link, a folder the agent made) is removed first, the new file created exclusively. */
function pointWorktree(worktree: string, gitDir: string): void {
  const dotGit = join(worktree, ".git");
  if (lstatSync(dotGit, { throwIfNoEntry: false })) rmSync(dotGit, { recursive: true, force: true });
  const fd = openSync(dotGit, fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL | fs.O_NOFOLLOW, 0o644);
  try {
    writeSync(fd, `gitdir: ${gitDir}\n`);
  } finally {
    closeSync(fd);
  }
}

/**
 * Give the index of a fresh attempt git folder the stat data of the checkout loop wrote (read-tree
 * leaves it empty): without it every tracked file looks changed to git's plumbing, and an agent's
 * `git apply --index`, `git diff-files` or `git diff-index` fails or lies (`does not match index`)
 * until something ran `git status`. Loop's git reads the checkout's tracked files here (stat, and the
 * content of each whose stat is not recorded yet), with loop's safe config and every driver disabled:
 * nothing the checkout holds is run. A file that differs stays marked changed, as git would have it.
 */
export function refreshAttemptIndex(o: { gitDir: string; worktree: string }): void {
  const args = ["update-index", "-q", "--refresh"];
  const r = gitTry(o.worktree, args, { GIT_DIR: o.gitDir, GIT_WORK_TREE: o.worktree });
  // Exit 1: some file differs from the index (it stays marked); anything else is git failing.
  if (r.code !== 0 && r.code !== 1) throw new GitError(args, r.code, r.stderr);
}
