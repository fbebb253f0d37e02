// An item's checkout across an attempt, through the airlock (docs/threat-model.md#the-airlock):
//
// - before the agent: the checkout is made to hold the item branch's head, written by loop from the
//   raw blobs (lib/repo/tree-sync.ts); `workspace.setup` runs once per checkout, on the start point's
//   files, on the agent's side of the wall (the sandbox when the item has one, no key), and what it
//   made is recorded (the products: kept, never committed, read-only to the agent and the verify);
//   the attempt gets a private git folder of its own (lib/repo/attempt-git.ts);
// - after the agent: what it left is committed on its side (lib/supervisor/seal.ts), its objects
//   imported, each proven (lib/repo/object-import.ts), the proposed head checked to be a commit whose
//   objects are all there, and loop writes the item branch to it;
// - before the verify: the checkout is made to hold exactly that commit again (whatever the agent
//   left that the commit does not hold is gone), with a read-only git folder of its own.
import { existsSync, lstatSync, mkdirSync, realpathSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { verifyRule } from "../definition/child-environment.ts";
import { FaultError } from "../decisions/faults.ts";
import type { ItemState } from "../log/projection.ts";
import { makeAttemptGitDir } from "../repo/attempt-git.ts";
import { gitTry, revParse } from "../repo/git.ts";
import { describeRefused, importObjects, type Refusal } from "../repo/object-import.ts";
import { readTree, syncTree, TreeRefused } from "../repo/tree-sync.ts";
import { readJsonOrNull, readTextOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { statePaths } from "../shared/paths.ts";
import { probeSandbox } from "../supervisor/sandbox.ts";
import { sandboxRequest, sessionPath } from "./machine-probe.ts";
import { StartError } from "../shared/errors.ts";
import type { SandboxRequest } from "../supervisor/sandbox.ts";
import { sealAttempt } from "../supervisor/seal.ts";
import { runSetup } from "../supervisor/setup-command.ts";
import { SESSION_FILES } from "../supervisor/session-wrapper.ts";
import { repoOf, type StepContext } from "./context.ts";

/** The session folder's private git folders: the agent's, and its verify's (read-only). */
export const ATTEMPT_GIT = "git";
export const VERIFY_GIT = "verify-git";

/** Where the object store's baseline is kept (lib/repo/object-store.ts). */
export function objectProofs(ctx: StepContext): string {
  return join(ctx.options.stateRoot, "object-proofs.json");
}

/** What loop keeps about one item's checkout, in the state root (out of the sandbox's sight). */
function treeFiles(stateRoot: string, item: string): { stamps: string; products: string } {
  const trees = statePaths(stateRoot).trees;
  return { stamps: join(trees, `${item}.json`), products: join(trees, `${item}.products.json`) };
}

/** What `workspace.setup` made in a checkout, and for which command. */
interface ProductsRecord {
  version: 1;
  /** The setup command it ran; another command runs again. */
  command: string;
  /** Top-most paths (relative to the checkout) the start point does not hold. */
  paths: string[];
}

/**
 * What setup made in the item's checkout: null when it has not run there, or (with `command`) ran
 * another command than `command`.
 */
export function checkoutProducts(stateRoot: string, item: string, command?: string): string[] | null {
  const r = readJsonOrNull<ProductsRecord>(treeFiles(stateRoot, item).products);
  if (!r || r.version !== 1 || !Array.isArray(r.paths) || (command !== undefined && r.command !== command)) return null;
  return r.paths.filter((p): p is string => typeof p === "string");
}

/** Forget what loop knew of a checkout (it was removed or moved aside). */
export function forgetCheckout(stateRoot: string, item: string): void {
  const f = treeFiles(stateRoot, item);
  rmSync(f.stamps, { force: true });
  rmSync(f.products, { force: true });
}

/**
 * The checkout's folder as loop made it: a directory (no link) at its place under the worktrees
 * folder. Anything else found there (a link to the operator's checkout, a file) is moved aside,
 * never followed or deleted; returns where.
 */
function claimPlace(worktree: string): string | null {
  mkdirSync(dirname(worktree), { recursive: true });
  const st = lstatSync(worktree, { throwIfNoEntry: false });
  if (!st) return null;
  const place = join(realpathSync(dirname(worktree)), basename(worktree));
  if (st.isDirectory() && realpathSync(worktree) === place) return null;
  const aside = `${worktree}.aside-${new Date().toISOString().replace(/[:.]/g, "-")}`;
  renameSync(worktree, aside);
  return aside;
}

/**
 * A checkout an older version of loop made is a linked worktree of the repository: its registration
 * (`<git dir>/worktrees/<name>`, whose `gitdir` names this checkout) is loop's own to remove, once.
 */
function forgetLinkedWorktree(repo: string, worktree: string): void {
  const common = gitTry(repo, ["rev-parse", "--path-format=absolute", "--git-common-dir"]);
  if (common.code !== 0) return;
  const reg = join(common.stdout.trim(), "worktrees", basename(worktree));
  if (existsSync(reg)) gitTry(repo, ["worktree", "prune"]);
  if (existsSync(reg) && lstatSync(reg).isDirectory()) rmSync(reg, { recursive: true, force: true });
}

interface PrepareOptions {
  repo: string;
  worktree: string;
  /** The item branch. */
  branch: string;
  /** The session folder of the attempt (setup's log goes there). */
  dir: string;
  attempt: number;
  /** The commit the item's branch was made at: setup runs on its files. */
  startCommit: string;
  /** The branch's head now: what the agent starts from. */
  head: string;
  /** The sandbox's request for this checkout, made once the checkout's folder is there (the item runs in it), or null. */
  sandbox: (() => SandboxRequest) | null;
}

export interface Prepared {
  /** Where something found at the checkout's place was moved, or null. */
  movedAside: string | null;
  /** What setup made (kept, never committed). */
  products: string[];
  /** Setup's run, when it ran now. */
  setup: { ms: number; log: string } | null;
  /** Tracked files setup changed (written back from the commit), for a warning. */
  setupChanged: string[];
}

/**
 * Make the item's checkout hold its branch's head for the next attempt, setup having run in it
 * once. Throws FaultError (setup_failed) when setup fails: the checkout stays, the next launch runs
 * setup again. Throws TreeRefused (lib/repo/tree-sync.ts), GitError or a system error otherwise.
 */
export async function prepareCheckout(ctx: StepContext, it: ItemState, o: PrepareOptions): Promise<Prepared> {
  const files = treeFiles(ctx.options.stateRoot, it.id);
  mkdirSync(ctx.paths.trees, { recursive: true });
  const movedAside = claimPlace(o.worktree);
  if (movedAside) forgetCheckout(ctx.options.stateRoot, it.id);
  const existed = existsSync(o.worktree);
  if (existed) forgetLinkedWorktree(o.repo, o.worktree);
  else mkdirSync(o.worktree);
  let products = existed ? checkoutProducts(ctx.options.stateRoot, it.id, ctx.def.setup ?? "") : null;
  let setup: Prepared["setup"] = null;
  let setupChanged: string[] = [];
  const command = ctx.def.setup;
  if (command === undefined) products = [];
  else if (products === null) {
    // On the start point's files, never on what an agent wrote (docs/threat-model.md#the-airlock).
    syncTree({ repo: o.repo, dir: o.worktree, commit: o.startCommit, keep: [], stampsFile: files.stamps, untracked: "remove" });
    rmSync(files.products, { force: true });
    const gitDir = join(o.dir, "setup-git");
    rmSync(gitDir, { recursive: true, force: true });
    makeAttemptGitDir({ repo: o.repo, gitDir, worktree: o.worktree, branch: o.branch, head: o.startCommit, refs: {}, excludes: [] });
    const timeoutMs = it.def.timeouts.setup ?? 10 * 60_000;
    const logPath = join(o.dir, SESSION_FILES.setup);
    ctx.store.assertLease();
    ctx.store.renewLease(ctx.lease, timeoutMs + 10 * 60_000);
    const r = await runSetup({
      command,
      cwd: o.worktree,
      env: { LOOP_ITEM: it.id, LOOP_ATTEMPT: String(o.attempt), LOOP_WORKDIR: o.worktree },
      envRule: verifyRule(ctx.def, { behindGateway: true }),
      logPath,
      timeoutMs,
      sandbox: o.sandbox ? { request: { ...o.sandbox(), gitDir: { path: gitDir, writable: false }, readOnly: [], writable: [], homes: [] }, sessionDir: o.dir } : null,
    });
    if (!r.ok)
      throw new FaultError({
        kind: "setup_failed",
        message: `workspace.setup ${r.reason} in ${o.worktree} (its output: ${logPath}, \`loop logs --setup --work-item ${it.id}\`)`,
        fix: "fix the setup command in loop.json or what it needs on this machine (a registry, a cache, a tool), then `loop ctl resume`",
      });
    // What it made: everything the start point does not hold. A tracked file it changed is written back.
    const surveyed = syncTree({ repo: o.repo, dir: o.worktree, commit: o.startCommit, keep: [], stampsFile: files.stamps, untracked: "report" });
    products = surveyed.untracked;
    setupChanged = surveyed.restored;
    writeFileAtomic(files.products, JSON.stringify({ version: 1, command, paths: products } satisfies ProductsRecord) + "\n");
    setup = { ms: r.ms, log: logPath };
  }
  syncTree({ repo: o.repo, dir: o.worktree, commit: o.head, keep: products, stampsFile: files.stamps, untracked: "remove" });
  return { movedAside, products, setup, setupChanged };
}

/** The attempt's private git folder: made in its session folder, the checkout's `.git` pointed at it. */
export function attemptGitDir(ctx: StepContext, o: { repo: string; worktree: string; dir: string; branch: string; head: string; refs: Record<string, string> }): string {
  const gitDir = join(o.dir, ATTEMPT_GIT);
  rmSync(gitDir, { recursive: true, force: true });
  makeAttemptGitDir({ repo: o.repo, gitDir, worktree: o.worktree, branch: o.branch, head: o.head, refs: o.refs, excludes: AGENT_EXCLUDES });
  return gitDir;
}

/** Files of the agents loop runs, never part of an item's work (the attempt's info/exclude). */
const AGENT_EXCLUDES = [".aider*"];

/** What came out of the airlock: the head loop wrote the item branch to, or why nothing did. */
export type AirlockResult =
  | { kind: "ok"; head: string; committed: boolean; imported: number }
  | { kind: "seal_failed"; reason: string; timedOut: boolean }
  | { kind: "objects_refused"; refused: Refusal[] }
  | { kind: "object_too_large"; refused: Refusal[] }
  | { kind: "head_invalid"; reason: string }
  | { kind: "branch_moved"; found: string | null; expected: string };

/**
 * Where an attempt's git lives: its private git folder in the session folder, or, for an attempt an
 * older version of loop launched, the linked worktree's git folder and the session's private object
 * folder (its objects: lib/repo/object-import.ts).
 */
function attemptLayout(repo: string, worktree: string, sessionDir: string): { gitDir: string; objects: string } | null {
  const own = join(sessionDir, ATTEMPT_GIT);
  if (existsSync(own)) return { gitDir: own, objects: join(own, "objects") };
  const named = readTextOrNull(join(worktree, ".git"), { maxBytes: 4096, noLinks: true });
  const m = named ? /^gitdir: (.+)$/m.exec(named) : null;
  const common = gitTry(repo, ["rev-parse", "--path-format=absolute", "--git-common-dir"]);
  if (!m || common.code !== 0) return null;
  const gitDir = m[1]!.trim();
  // Only a registration of the repository's own: anything else is not loop's to run git in.
  if (dirname(gitDir) !== join(common.stdout.trim(), "worktrees")) return null;
  return { gitDir, objects: join(sessionDir, "objects") };
}

interface AirlockOptions {
  repo: string;
  stateRoot: string;
  env: Record<string, string | undefined>;
  item: string;
  runner: string;
  worktree: string;
  sessionDir: string;
  branch: string;
  /** The head loop gave the attempt (its start-head): the branch is moved from there, never from elsewhere. */
  expected: string;
  /** The item runs in the sandbox: the seal does too, or not at all. */
  sandboxed: boolean;
  message: string;
}

/**
 * After the agent: seal what it left (on its side), import its objects (each proven), check the
 * proposed head, and write the item branch to it (from `expected`, the head loop gave the attempt:
 * a branch someone else moved is not overwritten). Idempotent: a step killed half-way does it again.
 */
export async function airlock(o: AirlockOptions): Promise<AirlockResult> {
  const layout = attemptLayout(o.repo, o.worktree, o.sessionDir);
  if (!layout) return { kind: "seal_failed", reason: `the checkout ${o.worktree} has no git folder of its attempt`, timedOut: false };
  const products = checkoutProducts(o.stateRoot, o.item) ?? [];
  let sandbox: { request: SandboxRequest; sessionDir: string } | null = null;
  if (o.sandboxed) {
    const probe = probeSandbox(sessionPath(o.env));
    if (!probe.ok) return { kind: "seal_failed", reason: `the sandbox it must run in cannot be made (${probe.message}); nothing of the agent's is run outside it`, timedOut: false };
    try {
      const request = sandboxRequest({ bwrap: probe.bwrap, repo: o.repo, worktree: o.worktree, stateRoot: o.stateRoot, runner: o.runner, writable: [], env: o.env });
      sandbox = { request: { ...request, homes: [], gitDir: { path: layout.gitDir, writable: true }, readOnly: products.map((p) => join(o.worktree, p)) }, sessionDir: o.sessionDir };
    } catch (err) {
      if (!(err instanceof StartError)) throw err;
      return { kind: "seal_failed", reason: err.message, timedOut: false };
    }
  }
  const sealed = await sealAttempt({ worktree: o.worktree, gitDir: layout.gitDir, exclude: products, message: o.message, sandbox, env: o.env });
  if (!sealed.ok) return { kind: "seal_failed", reason: sealed.reason, timedOut: sealed.timedOut };
  const imported = await importObjects({ repo: o.repo, from: layout.objects });
  const large = imported.refused.filter((r) => r.kind === "too_large");
  if (large.length) return { kind: "object_too_large", refused: large };
  if (imported.refused.length) return { kind: "objects_refused", refused: imported.refused };
  const head = sealed.head;
  // Every object the attempt's commits reach, there and readable: a head whose history loop cannot read is no head.
  const complete = gitTry(o.repo, ["rev-list", "--objects", "--quiet", head, "--not", o.expected]);
  if (complete.code !== 0 || revParse(o.repo, head) !== head)
    return { kind: "head_invalid", reason: `${head.slice(0, 12)} is not a commit whose history the repository holds (${complete.stderr.trim().split("\n")[0] || `git exited ${complete.code}`})` };
  try {
    readTree(o.repo, head);
  } catch (err) {
    if (!(err instanceof TreeRefused)) throw err;
    return { kind: "head_invalid", reason: `${head.slice(0, 12)}: ${err.message}` };
  }
  const now = revParse(o.repo, `refs/heads/${o.branch}`);
  if (now === head) return { kind: "ok", head, committed: sealed.committed, imported: imported.imported };
  if (now !== o.expected) return { kind: "branch_moved", found: now, expected: o.expected };
  const w = gitTry(o.repo, ["update-ref", "-m", `loop: ${o.item}: the attempt's head`, `refs/heads/${o.branch}`, head, o.expected]);
  if (w.code !== 0) return { kind: "branch_moved", found: revParse(o.repo, `refs/heads/${o.branch}`), expected: o.expected };
  return { kind: "ok", head, committed: sealed.committed, imported: imported.imported };
}

/** What an airlock refusal says, for a verdict. */
export function airlockReason(r: Exclude<AirlockResult, { kind: "ok" }>): string {
  switch (r.kind) {
    case "seal_failed":
      return `committing what the agent left failed on its side: ${r.reason}`;
    case "objects_refused":
      return `the attempt wrote objects that are not what their names say: ${describeRefused(r.refused)}; they were not imported`;
    case "object_too_large":
      return `the attempt made objects larger than loop imports: ${describeRefused(r.refused)}`;
    case "head_invalid":
      return r.reason;
    case "branch_moved":
      return `the item branch was moved while the attempt ran (at ${r.found ? r.found.slice(0, 12) : "nothing"}, loop left it at ${r.expected.slice(0, 12)}): not loop's doing, not overwritten`;
  }
}

/**
 * Before the verify: the checkout made to hold exactly `head` (and what setup made), its `.git`
 * pointed at a fresh git folder of the verify's own. Throws TreeRefused, GitError or a system error.
 */
export function checkoutForVerify(ctx: StepContext, it: ItemState, o: { worktree: string; dir: string; branch: string; head: string; products: string[] }): { gitDir: string } {
  const repo = repoOf(ctx);
  if (claimPlace(o.worktree) !== null || !existsSync(o.worktree)) throw new StartError(`the checkout ${o.worktree} is not the folder loop made`);
  syncTree({ repo, dir: o.worktree, commit: o.head, keep: o.products, stampsFile: treeFiles(ctx.options.stateRoot, it.id).stamps, untracked: "remove" });
  const gitDir = join(o.dir, VERIFY_GIT);
  rmSync(gitDir, { recursive: true, force: true });
  makeAttemptGitDir({ repo, gitDir, worktree: o.worktree, branch: o.branch, head: o.head, refs: {}, excludes: [] });
  return { gitDir };
}


/**
 * Whether a checkout holds anything its branch's head does not (a file changed, added or missing;
 * what setup made aside), read as loop reads a checkout: no git run in it, nothing followed. Null
 * when it cannot tell (the head is not a commit loop can read).
 */
export function checkoutDiffers(o: { repo: string; stateRoot: string; item: string; worktree: string; head: string }): boolean | null {
  try {
    const r = syncTree({ repo: o.repo, dir: o.worktree, commit: o.head, keep: checkoutProducts(o.stateRoot, o.item) ?? [], stampsFile: treeFiles(o.stateRoot, o.item).stamps, untracked: "report", dryRun: true });
    return r.restored.length + r.untracked.length + r.missing + r.removed > 0;
  } catch {
    return null;
  }
}
