// Worktrees, branches and landing, as git effects. Each function is idempotent, so a step that
// was killed half-way can call it again.
import { startPointFault } from "../decisions/faults.ts";
import { existsSync, lstatSync, readdirSync, realpathSync, renameSync, rmSync, statSync } from "node:fs";
import { readRegularFile, readTextOrNull } from "../shared/fsutil.ts";
import { basename, dirname, join, relative, resolve } from "node:path";
import { branchExists, commonGitDir, git, gitTry, revParse, symbolicBranchTarget } from "./git.ts";
import { disarmRefTraps } from "./ref-traps.ts";
import { FaultError, GitError } from "../shared/errors.ts";
import type { LandingCode } from "../log/vocabulary.ts";

/**
 * An item's checkout, or a branch loop owns, that is not what loop made (checkWorktree; a branch made
 * a symbolic ref), typed: what it means is read from `replaced`, never from the message, which is a
 * sentence for people. A GitError, as callers expect of a commit or a worktree git could not make.
 */
export class ReplacedError extends GitError {
  constructor(
    readonly replaced: "worktree_replaced" | "branch_replaced",
    args: string[],
    message: string,
  ) {
    super(args, null, "");
    this.message = message;
  }
}

/** Git identity for commits loop makes itself, used only when the repository has none. */
function identity(cwd: string): string[] {
  const has = gitTry(cwd, ["config", "user.email"]).code === 0 && gitTry(cwd, ["config", "user.name"]).code === 0;
  return has ? [] : ["-c", "user.name=loop", "-c", "user.email=loop@localhost"];
}

export function repoTop(root: string): string {
  return git(root, ["rev-parse", "--show-toplevel"]);
}

/**
 * Make sure `path` is a worktree of `branch`, creating the branch from `startPoint` if needed.
 * Anything else found at `path` (a checkout the close path kept because its changes could not be
 * committed, one on another branch, a half-made one) is moved aside to `movedAside`, never deleted:
 * it may hold the only copy of someone's work. An empty directory is just removed.
 */
export function ensureWorktree({ repo, path, branch, startPoint }: { repo: string; path: string; branch: string; startPoint: string }): {
  created: boolean;
  branchCreated: boolean;
  movedAside: string | null;
} {
  // Reused only as the checkout loop made (checkWorktree, read without running git in it, which
  // also refuses a symbolic branch): an earlier attempt's agent, or a verify running its code, may
  // have rewritten its .git, and a sandbox built from that would make another repository writable.
  if (existsSync(path) && checkWorktree({ repo, worktree: path, branch }).ok) return { created: false, branchCreated: false, movedAside: null };
  // A branch name loop owns made a symbolic ref (an earlier agent's doing): an agent working on it
  // would commit onto its target. Refused, and said how to put it right; nothing is moved or created.
  const target = symbolicBranchTarget(repo, branch);
  if (target !== null)
    throw new ReplacedError(
      "branch_replaced",
      ["worktree", "add", path, branch],
      `branch_replaced: refs/heads/${branch} is a symbolic ref to ${target}, not a branch loop made; remove it (git symbolic-ref --delete refs/heads/${branch}), then \`loop ctl resume\``,
    );
  // Anything else found there is moved aside.
  let movedAside: string | null = null;
  if (existsSync(path)) {
    if (readdirSync(path).length === 0) rmSync(path, { recursive: true, force: true });
    else {
      movedAside = `${path}.aside-${new Date().toISOString().replace(/[:.]/g, "-")}`;
      renameSync(path, movedAside);
    }
  }
  git(repo, ["worktree", "prune"]);
  let branchCreated = false;
  if (!branchExists(repo, branch)) {
    if (!revParse(repo, startPoint)) throw new FaultError(startPointFault({ startPoint, repo }));
    git(repo, ["branch", branch, startPoint]);
    branchCreated = true;
  }
  git(repo, ["worktree", "add", "--force", path, branch]);
  return { created: true, branchCreated, movedAside };
}

/**
 * Make sure the item branch exists (made at `startPoint` when missing) and is a branch. Refs found
 * below its name (`<branch>/x`: another agent's, which would keep the branch from being made) are
 * renamed under `aside` first, and returned. Throws ReplacedError (branch_replaced), FaultError (base_missing),
 * GitError.
 */
export function ensureBranch(o: { repo: string; branch: string; startPoint: string; aside: string }): { created: boolean; head: string; movedBelow: string[] } {
  const target = symbolicBranchTarget(o.repo, o.branch);
  if (target !== null)
    throw new ReplacedError(
      "branch_replaced",
      ["symbolic-ref", `refs/heads/${o.branch}`],
      `branch_replaced: refs/heads/${o.branch} is a symbolic ref to ${target}, not a branch loop made; remove it (git symbolic-ref --delete refs/heads/${o.branch}), then \`loop ctl resume\``,
    );
  const below = listBranches(o.repo, [`${o.branch}/`]);
  const movedBelow: string[] = [];
  if (below.size) {
    disarmRefTraps({
      commonDir: commonGitDir(o.repo),
      refs: [...below.keys()].flatMap((name) => [`refs/heads/${name}`, `refs/heads/${o.aside}/${name.slice(o.branch.length + 1)}`]),
    });
    const input = [...below]
      .map(([name, head]) => `create refs/heads/${o.aside}/${name.slice(o.branch.length + 1)} ${head}\ndelete refs/heads/${name} ${head}\n`)
      .join("");
    const r = gitTry(o.repo, ["update-ref", "-m", "loop: refs below an item branch's name, moved aside", "--stdin"], {}, input);
    if (r.code !== 0) throw new GitError(["update-ref", "--stdin"], r.code, r.stderr);
    movedBelow.push(...below.keys());
  }
  const head = revParse(o.repo, `refs/heads/${o.branch}`);
  if (head !== null) return { created: false, head, movedBelow };
  const start = revParse(o.repo, o.startPoint);
  if (start === null) throw new FaultError(startPointFault({ startPoint: o.startPoint, repo: o.repo }));
  disarmRefTraps({ commonDir: commonGitDir(o.repo), refs: [`refs/heads/${o.branch}`] });
  git(o.repo, ["update-ref", "--no-deref", "-m", "loop: the item branch, at its start point", `refs/heads/${o.branch}`, start, ""]);
  return { created: true, head: start, movedBelow };
}

/**
 * Rename `branch` to `aside` if it is still at `head` (one ref transaction: a branch that moved
 * meanwhile is left alone and GitError says so); a checkout of it is removed first, so the
 * branch can be made again. Nothing of its commits is deleted.
 */
export function moveBranchAside(o: { repo: string; branch: string; aside: string; head: string; worktree: string }): void {
  const at = checkedOut(o.repo).find((w) => w.branch === o.branch);
  if (at && realpathOrSelf(at.path) !== realpathOrSelf(o.worktree))
    throw new GitError(["update-ref", "--stdin"], null, `${o.branch} is checked out at ${at.path}, not in the item's worktree; loop does not move it`);
  if (at) removeWorktree(o.repo, o.worktree);
  disarmRefTraps({ commonDir: commonGitDir(o.repo), refs: [`refs/heads/${o.aside}`, `refs/heads/${o.branch}`] });
  const input = `create refs/heads/${o.aside} ${o.head}\ndelete refs/heads/${o.branch} ${o.head}\n`;
  const r = gitTry(o.repo, ["update-ref", "-m", "loop: a branch no session of this item worked on, moved aside", "--stdin"], {}, input);
  if (r.code !== 0) throw new GitError(["update-ref", "--stdin"], r.code, r.stderr);
}

/**
 * Move `branch` from `from` to `to` (one compare-and-swap: a branch that moved meanwhile is left
 * alone and GitError says so). For a branch holding nothing `to` does not (lib/decisions/branch.ts restart).
 */
export function restartBranch(o: { repo: string; branch: string; from: string; to: string }): void {
  disarmRefTraps({ commonDir: commonGitDir(o.repo), refs: [`refs/heads/${o.branch}`] });
  const r = gitTry(o.repo, [
    "update-ref",
    "--no-deref",
    "-m",
    "loop: the item branch, started again at its start point",
    `refs/heads/${o.branch}`,
    o.to,
    o.from,
  ]);
  if (r.code !== 0) throw new GitError(["update-ref", `refs/heads/${o.branch}`], r.code, r.stderr);
}

function realpathOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/** Whether `ancestor` is in the history of `rev` (throws GitError when git cannot tell). */
export function isAncestor(repo: string, ancestor: string, rev: string): boolean {
  const r = gitTry(repo, ["merge-base", "--is-ancestor", ancestor, rev]);
  if (r.code === 0) return true;
  if (r.code === 1) return false;
  throw new GitError(["merge-base", "--is-ancestor", ancestor, rev], r.code, r.stderr);
}

function removeWorktree(repo: string, path: string): boolean {
  if (!existsSync(path)) {
    gitTry(repo, ["worktree", "prune"]);
    return false;
  }
  gitTry(repo, ["worktree", "remove", "--force", "--force", path]);
  if (existsSync(path)) rmSync(path, { recursive: true, force: true });
  gitTry(repo, ["worktree", "prune"]);
  return true;
}

/**
 * Is `worktree` still the checkout loop made, before loop commits in it or merges there? The agent
 * can replace it: a link to the operator's checkout in its place, or its `.git` file rewritten to
 * the main git dir, would have loop's `git add -A` commit the operator's uncommitted work onto the
 * operator's branch. Checked without following links: the folder itself is no link and resolves to
 * its place under the state root; its `.git` is a regular file naming a git dir
 * `<common git dir>/worktrees/<name>` whose `gitdir` names this checkout back and whose `commondir`
 * is the repository's; that git dir's HEAD is `branch`. Returns the git dir and the common one, or why not.
 */
export function checkWorktree(o: {
  repo: string;
  worktree: string;
  branch: string;
}): { ok: true; gitDir: string; commonDir: string } | { ok: false; why: string } {
  const no = (why: string) => ({ ok: false as const, why: `worktree_replaced: ${o.worktree} is not the checkout loop made (${why}); nothing committed` });
  // The agent writes these files: each read bounded, never through a link, only a regular file (a
  // FIFO in HEAD's place must not hang the step that holds the lease).
  const small = (path: string): string => {
    const r = readRegularFile(path, { maxBytes: 4096, noLinks: true });
    if (r.kind !== "ok") throw new Error(`${path}: ${r.kind === "absent" ? "missing" : r.message}`);
    return r.bytes.toString("utf8");
  };
  try {
    const st = lstatSync(o.worktree);
    if (st.isSymbolicLink()) return no(`it is a symbolic link to ${realpathSync(o.worktree)}`);
    if (!st.isDirectory()) return no("it is not a directory");
    // The folder holding the workspaces is the state root's own, not a link to elsewhere.
    const place = join(realpathSync(dirname(dirname(o.worktree))), relative(dirname(dirname(o.worktree)), o.worktree));
    if (realpathSync(o.worktree) !== place) return no(`it resolves to ${realpathSync(o.worktree)}`);
    const dotGit = join(o.worktree, ".git");
    if (!existsSync(dotGit) && !isLinkAt(dotGit)) return no("its .git is missing: not a git checkout of its own");
    const dg = lstatSync(dotGit);
    if (!dg.isFile())
      return no(`its .git is ${dg.isDirectory() ? "a directory: a repository of its own" : dg.isSymbolicLink() ? "a symbolic link" : "not a regular file"}`);
    const named = /^gitdir: (.+)$/m.exec(small(dotGit))?.[1]?.trim();
    if (!named) return no("its .git names no git dir");
    const common = realpathSync(resolve(o.repo, git(o.repo, ["rev-parse", "--git-common-dir"])));
    const gitDir = realpathSync(resolve(o.worktree, named));
    if (dirname(gitDir) !== join(common, "worktrees")) return no(`its .git names ${gitDir}, not a worktree of ${common}`);
    const back = small(join(gitDir, "gitdir")).trim();
    if (realpathSync(dirname(resolve(gitDir, back))) !== realpathSync(o.worktree)) return no(`${gitDir} belongs to ${dirname(back)}`);
    const commondir = small(join(gitDir, "commondir")).trim();
    if (realpathSync(resolve(gitDir, commondir)) !== common) return no(`${gitDir}/commondir names another repository`);
    const head = small(join(gitDir, "HEAD")).trim();
    if (head !== `ref: refs/heads/${o.branch}`) return no(`its HEAD is ${JSON.stringify(head)}, not the branch ${o.branch}`);
    // The branch itself must be a branch: made a symbolic ref (to main, say), a commit on it would land there.
    const target = symbolicBranchTarget(o.repo, o.branch);
    if (target !== null) return no(`its branch ${o.branch} was made a symbolic ref to ${target}`);
    return { ok: true, gitDir, commonDir: common };
  } catch (err) {
    return no((err as Error).message);
  }
}

function isLinkAt(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Commits on `branch` that are not on `base` (throws GitError when git cannot count them). */
export function commitsAhead({ repo, base, branch }: { repo: string; base: string; branch: string }): number {
  return Number(git(repo, ["rev-list", "--count", `${base}..${branch}`]));
}

/** The commit where `b` forked off `a` (their merge base), or null when they share no history. Throws GitError on any other failure. */
export function forkPoint({ repo, a, b }: { repo: string; a: string; b: string }): string | null {
  const r = gitTry(repo, ["merge-base", a, b]);
  if (r.code === 0) return r.stdout.trim();
  if (r.code === 1 && r.stderr.trim() === "") return null; // no common ancestor
  throw new GitError(["merge-base", a, b], r.code, r.stderr);
}

/**
 * The paths that differ between two commits, as git prints them from the repository's top level:
 * edits, additions, deletions, mode and type changes; a rename is its old path and its new one.
 */
export function changedPaths({ repo, from, to }: { repo: string; from: string; to: string }): string[] {
  // diff-tree compares the two trees only: it reads no work tree, so no driver can run and gitTry
  // need not look them up first (each lookup is one more git process in the verify start tick).
  const args = ["diff-tree", "-r", "--no-renames", "--name-only", "-z", from, to, "--"];
  const r = gitTry(repo, args);
  if (r.code !== 0) throw new GitError(args, r.code, r.stderr);
  return r.stdout.split("\0").filter(Boolean);
}

/** Where an item branch starts: the landing target once it exists (merge landing), else the base. */
export function startPointFor({ repo, landing, base, target }: { repo: string; landing: string; base: string; target: string }): string {
  if (landing === "merge" && branchExists(repo, target)) return target;
  return base;
}

/** Worktrees and the branch each has checked out. */
function checkedOut(repo: string): { path: string; branch: string | null }[] {
  const out: { path: string; branch: string | null }[] = [];
  let cur: { path: string; branch: string | null } | null = null;
  for (const line of git(repo, ["worktree", "list", "--porcelain"]).split("\n")) {
    if (line.startsWith("worktree ")) {
      cur = { path: line.slice(9), branch: null };
      out.push(cur);
    } else if (line.startsWith("branch ") && cur) cur.branch = line.slice(7).replace(/^refs\/heads\//, "");
  }
  return out;
}

/** How a local merge ended: the outcome, why (its code), and a sentence for people. */
export type MergeResult = { outcome: "merged" | "already_contained" | "conflict" | "failed"; code: MergeCode; commit: string | null; reason: string };
type MergeCode = Extract<
  LandingCode,
  "merged" | "already_contained" | "conflict" | "branch_moved" | "target_checked_out" | "landing_replaced" | "merge_failed" | "target_moved"
>;

/**
 * Merge `branch` into the loop-owned `target` inside a landing worktree under the state root,
 * never in a worktree the operator has checked out. Already merged by this very landing (the
 * target's head is the merge of exactly this commit: a step killed after the merge) → "merged"
 * again (idempotent). Already in the target otherwise (an earlier attempt's merge, kept by a
 * reset; the branch started from the target and added nothing) → "already_contained": nothing merged.
 */
interface LandMergeOptions {
  repo: string;
  /** The loop's own landing worktree (under the state root). */
  landingDir: string;
  /** The branch merged into, created from `base` the first time. */
  target: string;
  base: string;
  /** The item branch merged. */
  branch: string;
  /**
   * The commit its verify ran on (verify_reserved's `head`): exactly this is merged, and nothing
   * when the branch has moved since. Without it (a verify from before it was recorded, or
   * `verify: false`), the branch as it is.
   */
  commit?: string | null;
  /** The merge commit's message. */
  message: string;
  /** Called with where something found at `landingDir` (not a checkout of `target`) was moved. */
  onMovedAside?: (path: string) => void;
}

export function landMerge({ repo, landingDir, target, base, branch, commit = null, message, onMovedAside = () => {} }: LandMergeOptions): MergeResult {
  if (commit) {
    const now = revParse(repo, `refs/heads/${branch}`);
    if (now !== commit)
      return {
        outcome: "failed",
        code: "branch_moved",
        commit: null,
        reason: `branch ${branch} moved since its verify (verified ${commit.slice(0, 12)}, now ${now ? now.slice(0, 12) : "gone"}); nothing merged`,
      };
  }
  for (const w of checkedOut(repo))
    if (w.branch === target && w.path !== landingDir)
      return {
        outcome: "failed",
        code: "target_checked_out",
        commit: null,
        reason: `target branch ${target} is checked out in ${w.path}; loop never merges into it`,
      };
  // Creates the target branch from base the first time.
  const ws = ensureWorktree({ repo, path: landingDir, branch: target, startPoint: base });
  if (ws.movedAside) onMovedAside(ws.movedAside);
  // The landing checkout is loop's own, under the state root the agent can write: checked like an
  // item's (a link to the operator's checkout here would have `reset --hard` wipe their work).
  const checked = checkWorktree({ repo, worktree: landingDir, branch: target });
  if (!checked.ok) return { outcome: "failed", code: "landing_replaced", commit: null, reason: checked.why.replace("nothing committed", "nothing merged") };
  const pin = { GIT_DIR: checked.gitDir, GIT_WORK_TREE: landingDir };
  disarmRefTraps({ commonDir: checked.commonDir, refs: [`refs/heads/${target}`], worktreeGitDirs: [checked.gitDir] });
  // A merge left half-done by a killed step is abandoned and redone.
  if (existsSync(join(checked.gitDir, "MERGE_HEAD"))) gitTry(landingDir, ["merge", "--abort"], pin);
  gitTry(landingDir, ["reset", "-q", "--hard", "HEAD"], pin);
  const what = commit ?? branch;
  const before = git(landingDir, ["rev-parse", "HEAD"], pin);
  const r = gitTry(landingDir, [...identity(landingDir), "merge", "--no-ff", "--no-edit", "-m", message, what], pin);
  if (r.code === 0) {
    const after = git(landingDir, ["rev-parse", "HEAD"], pin);
    if (after !== before) return { outcome: "merged", code: "merged", commit: after, reason: "merged" };
    // Nothing new: a merge of exactly this commit (this landing's, by a killed step), or a target that held it already.
    const merged = gitTry(landingDir, ["rev-parse", "--verify", "-q", `${after}^2`], pin).stdout.trim();
    const tip = git(landingDir, ["rev-parse", `${what}^{commit}`], pin);
    if (merged === tip) return { outcome: "merged", code: "merged", commit: after, reason: "merged" };
    return {
      outcome: "already_contained",
      code: "already_contained",
      commit: after,
      reason: `already contained in ${target} (at ${after.slice(0, 12)}): nothing was merged, nothing changed`,
    };
  }
  const conflicted = gitTry(landingDir, ["diff", "--no-ext-diff", "--name-only", "--diff-filter=U"], pin).stdout.trim().split("\n").filter(Boolean);
  gitTry(landingDir, ["merge", "--abort"], pin);
  if (conflicted.length) return { outcome: "conflict", code: "conflict", commit: null, reason: `merge conflict in ${conflicted.join(", ")}` };
  return {
    outcome: "failed",
    code: "merge_failed",
    commit: null,
    reason: `git merge failed: ${(r.stderr || r.stdout).trim().split("\n").slice(-2).join(" / ")}`,
  };
}

/** Branches under the given prefixes (`loop/x/item/`) or with the given names, and the commit each points at. */
export function listBranches(repo: string, patterns: string[]): Map<string, string> {
  const out = new Map<string, string>();
  if (patterns.length === 0) return out;
  const text = git(repo, ["for-each-ref", "--format=%(objectname) %(refname)", ...patterns.map((p) => `refs/heads/${p}`)]);
  for (const line of text.split("\n")) {
    const sp = line.indexOf(" ");
    if (sp > 0) out.set(line.slice(sp + 1).replace(/^refs\/heads\//, ""), line.slice(0, sp));
  }
  return out;
}

/**
 * The branch a checkout has checked out, read from its files (no git process): `<path>/.git` names
 * the worktree's git dir, whose HEAD names the branch. Null when it is not a checkout, or detached.
 */
/**
 * The registration of a checkout an older version of loop made as a linked worktree of the
 * repository (`<git dir>/worktrees/<name>`, whose `gitdir` names this checkout's `.git`), or null
 * (loop's checkouts now have a git folder of their own per attempt and are no worktrees of it).
 */
export function linkedWorktreeRegistration(repo: string, worktree: string): string | null {
  let common: string;
  try {
    common = commonGitDir(repo);
  } catch {
    return null;
  }
  const reg = join(common, "worktrees", basename(worktree));
  if (!lstatSync(reg, { throwIfNoEntry: false })?.isDirectory()) return null;
  const named = readTextOrNull(join(reg, "gitdir"), { maxBytes: 4096, noLinks: true })?.trim();
  return named === join(worktree, ".git") ? reg : null;
}

export function checkoutBranch(path: string): string | null {
  let gitDir = join(path, ".git");
  try {
    // Bounded reads of regular files only: the agent writes these (a FIFO must not hang the reader).
    const text = (p: string) => readTextOrNull(p, { maxBytes: 4096 });
    if (!statSync(gitDir).isDirectory()) {
      const m = /^gitdir: (.+)$/m.exec(text(gitDir) ?? "");
      if (!m) return null;
      gitDir = resolve(path, m[1]!.trim());
    }
    const head = text(join(gitDir, "HEAD"));
    if (head === null) return null;
    return /^ref: refs\/heads\/(.+)\n?$/.exec(head)?.[1]?.trim() ?? null;
  } catch {
    return null;
  }
}

/**
 * Rename branches to archive names, never deleting a commit: all in one ref transaction (one git
 * process, all or nothing), each checked against the commit it was seen at. A branch checked out
 * in a checkout goes through `git branch -m`, which moves that checkout's HEAD along. When the
 * transaction fails, each is tried alone, so one bad rename does not hold the others back.
 * Returns the error of each rename that failed, by its `from`.
 */
export function archiveBranches(repo: string, renames: { from: string; to: string; head: string; checkedOut: boolean }[]): Map<string, string> {
  const failed = new Map<string, string>();
  if (renames.length) disarmRefTraps({ commonDir: commonGitDir(repo), refs: renames.flatMap((r) => [`refs/heads/${r.from}`, `refs/heads/${r.to}`]) });
  const one = (r: (typeof renames)[number]) => {
    const res = r.checkedOut
      ? gitTry(repo, ["branch", "-m", r.from, r.to])
      : gitTry(
          repo,
          ["update-ref", "-m", `loop reset: archive ${r.from}`, "--stdin"],
          {},
          `create refs/heads/${r.to} ${r.head}\ndelete refs/heads/${r.from} ${r.head}\n`,
        );
    if (res.code !== 0)
      failed.set(r.from, new GitError(r.checkedOut ? ["branch", "-m", r.from, r.to] : ["update-ref", "--stdin"], res.code, res.stderr).message);
  };
  const batch = renames.filter((r) => !r.checkedOut);
  if (batch.length > 1) {
    const input = batch.map((r) => `create refs/heads/${r.to} ${r.head}\ndelete refs/heads/${r.from} ${r.head}\n`).join("");
    const res = gitTry(repo, ["update-ref", "-m", "loop reset: archive item branches", "--stdin"], {}, input);
    if (res.code !== 0) batch.forEach(one);
  } else batch.forEach(one);
  renames.filter((r) => r.checkedOut).forEach(one);
  return failed;
}
