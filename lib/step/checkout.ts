// An item's checkout before and after an attempt, through the airlock (docs/threat-model.md#the-airlock):
//
// - before the agent: the checkout is made to hold the item branch's head, written by loop from the
//   raw blobs (lib/repo/tree-sync.ts); `workspace.setup` runs once per checkout, on the start point's
//   files, on the agent's side of the wall (the sandbox when the item has one, no key), and what it
//   made is recorded (the products: kept, never committed, read-only to the agent and the verify);
//   the attempt gets a private git folder of its own (lib/repo/attempt-git.ts);
// - after the agent: the passage itself (lib/writer/airlock.ts);
// - before the verify: the checkout is made to hold exactly that commit again (whatever the agent
//   left that the commit does not hold is gone), with a read-only git folder of its own.
import { existsSync, lstatSync, mkdirSync, readdirSync, realpathSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { verifyRule } from "../definition/child-environment.ts";
import { setupAllowList } from "../definition/network.ts";
import type { ItemState } from "../log/projection.ts";
import { makeAttemptGitDir, refreshAttemptIndex } from "../repo/attempt-git.ts";
import { changedProducts, setupKey, stampProducts } from "../repo/products.ts";
import { keepProducts, reuseProducts } from "./kept-products.ts";
import { takeSpare } from "../writer/spare-checkout.ts";
import { claimFolder, syncTree } from "../repo/tree-sync.ts";
import { linkedWorktreeRegistration } from "../repo/workspace.ts";
import { readJsonOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { FaultError, StartError } from "../shared/errors.ts";
import type { SandboxRequest } from "../supervisor/sandbox.ts";
import { runSetup } from "../supervisor/setup-command.ts";
import { SESSION_FILES } from "../supervisor/session-wrapper.ts";
import {
  ATTEMPT_GIT,
  checkoutProducts,
  forgetCheckout,
  productsPlaceOf,
  productsRecordOf,
  productStampsOf,
  type ProductsRecord,
  treeFiles,
} from "../writer/airlock.ts";
import { relocateProducts } from "../repo/product-place.ts";
import { repoOf, type StepContext } from "./context.ts";
import { checkoutPlace } from "./checkout-place.ts";
import { BASE_DIR } from "../shared/paths.ts";

/** The verify's own git folder in the session folder (read-only to it). */
export const VERIFY_GIT = "verify-git";

/** Where the object store's baseline is kept (lib/repo/object-store.ts). */
export function objectProofs(ctx: StepContext): string {
  return join(ctx.options.stateRoot, "object-proofs.json");
}

/**
 * The checkout's folder as loop made it: a directory (no link) at its place under the worktrees
 * folder. Anything else found there (a link to the operator's checkout, a file) is moved aside,
 * never followed or deleted; returns where.
 */
function claimPlace(worktree: string, moveAnyway = false): string | null {
  mkdirSync(dirname(worktree), { recursive: true });
  const st = lstatSync(worktree, { throwIfNoEntry: false });
  if (!st) return null;
  const place = join(realpathSync(dirname(worktree)), basename(worktree));
  if (st.isDirectory() && realpathSync(worktree) === place && !moveAnyway) return null;
  // An empty folder is just taken.
  if (st.isDirectory() && !st.isSymbolicLink() && readdirSync(worktree).length === 0) return null;
  const aside = `${worktree}.aside-${new Date().toISOString().replace(/[:.]/g, "-")}`;
  renameSync(worktree, aside);
  return aside;
}

/**
 * A checkout an older version of loop made is a linked worktree of the repository: its registration
 * is loop's own to remove, once.
 */
function forgetLinkedWorktree(repo: string, worktree: string): void {
  const reg = linkedWorktreeRegistration(repo, worktree);
  if (reg) rmSync(reg, { recursive: true, force: true });
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

interface Prepared {
  /** Where something found at the checkout's place was moved, or null. */
  movedAside: string | null;
  /** What setup made (kept, never committed). */
  products: string[];
  /** Setup's run, when it ran now, or the copy of what an earlier item's setup made (`reusedFrom`: that item). */
  setup: { ms: number; log: string; reusedFrom: string | null } | null;
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
  // A checkout loop has no record of writing (one kept for a person after a reset, one an older
  // version made) is moved aside with the rest of what is not the folder loop made: never overwritten.
  const unknown = existsSync(o.worktree) && !existsSync(files.stamps);
  const movedAside = claimPlace(o.worktree, unknown);
  if (movedAside) forgetCheckout(ctx.options.stateRoot, it.id);
  forgetLinkedWorktree(o.repo, o.worktree);
  // What setup's products are made from at this start point (workspace.setupKey, else the lockfiles).
  const key =
    ctx.def.setup === undefined
      ? null
      : setupKey({ repo: o.repo, commit: o.startCommit, command: ctx.def.setup, ...(ctx.def.setupKey ? { paths: ctx.def.setupKey } : {}) });
  let existed = existsSync(o.worktree);
  // A passed item's checkout, kept as the spare: only the files that differ are written, and what
  // setup made comes with it (lib/writer/spare-checkout.ts; its products already compared there).
  const spareOf = existed
    ? null
    : takeSpare({ stateRoot: ctx.options.stateRoot, worktrees: ctx.worktrees, worktree: o.worktree, item: it.id, command: ctx.def.setup, key });
  // Its products were compared as the spare was taken; moved here, they are compared again below only if the move failed.
  let compared = false;
  if (spareOf !== null) {
    existed = true;
    compared = moveSpareProducts(ctx, it, o.worktree);
  } else if (!existed) {
    // Claimed before it is made: cut short while loop fills it, it is not taken for a stranger's.
    claimFolder(files.stamps);
    mkdirSync(o.worktree);
  }
  let products: string[] | null = existed ? checkoutProducts(ctx.options.stateRoot, it.id, ctx.def.setup ?? "", key) : null;
  // What setup made is reused only as setup left it: one an earlier attempt changed (without the
  // sandbox it can) is removed and made again, never handed to the next agent or verify.
  const stamps = products && !compared ? productStampsOf(ctx.options.stateRoot, it.id) : null;
  if (products && stamps && changedProducts(o.worktree, products, stamps).length) {
    for (const p of products) rmSync(join(o.worktree, p), { recursive: true, force: true });
    products = null;
  }
  let setup: Prepared["setup"] = spareOf !== null && ctx.def.setup !== undefined ? spareSetup(o, spareOf, products ?? []) : null;
  let setupChanged: string[] = [];
  const command = ctx.def.setup;
  if (command === undefined) products = [];
  else if (products === null) {
    // On the start point's files, never on what an agent wrote (docs/threat-model.md#the-airlock).
    syncTree({ repo: o.repo, dir: o.worktree, commit: o.startCommit, keep: [], stampsFile: files.stamps, untracked: "remove" });
    rmSync(files.products, { force: true });
    const reused = key ? reuseKept(ctx, it, { ...o, key, command, files }) : null;
    if (reused) {
      products = reused.products;
      setup = reused.setup;
    } else {
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
        // Its own environment: nothing of the operator's active one, its venv's and node_modules' bin first (docs/runners.md#the-items-own-environment).
        envRule: { ...verifyRule(ctx.def, { behindGateway: true }), place: checkoutPlace(ctx, o.worktree, { forSetup: true }) },
        logPath,
        timeoutMs,
        sandbox: o.sandbox ? setupSandbox(ctx, o.sandbox(), { gitDir, sessionDir: o.dir }) : null,
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
      // With which of its files name this checkout's path, to be written again if they move (once, here).
      const { record, place } = productsRecordOf({ worktree: o.worktree, command, paths: products, key });
      const stamps = record.stamps!;
      writeFileAtomic(files.products, JSON.stringify(record) + "\n");
      setup = { ms: r.ms, log: logPath, reusedFrom: null };
      // Kept for the next items with the same key, copied before the agent starts (lib/step/kept-products.ts).
      // Only a saving: when it cannot be made, the next item runs setup.
      if (key) {
        let why: string | null;
        try {
          why = keepProducts({
            stateRoot: ctx.options.stateRoot,
            worktrees: ctx.worktrees,
            worktree: o.worktree,
            key,
            command,
            item: it.id,
            paths: products,
            stamps,
            place,
          });
        } catch (err) {
          why = (err as Error).message;
        }
        if (why) ctx.options.log.info(`${it.id}: what workspace.setup made is not kept for the next items (${why}); setup runs in each checkout`);
      }
    }
  }
  syncTree({ repo: o.repo, dir: o.worktree, commit: o.head, keep: products, stampsFile: files.stamps, untracked: "remove" });
  return { movedAside, products, setup, setupChanged };
}

/**
 * The spare taken at another item's path: what setup made that names the old path is written again
 * naming this one, and the products record says so (new stamps, the new place). A failure leaves the
 * record as it was, which no longer matches: the products are removed and made again below.
 */
function moveSpareProducts(ctx: StepContext, it: ItemState, worktree: string): boolean {
  const files = treeFiles(ctx.options.stateRoot, it.id);
  const place = productsPlaceOf(ctx.options.stateRoot, it.id);
  const record = readJsonOrNull<ProductsRecord>(files.products);
  if (!record || !place || place.files.length === 0) return true;
  try {
    const moved = relocateProducts(place, worktree);
    writeFileAtomic(files.products, JSON.stringify({ ...record, stamps: stampProducts(worktree, record.paths), place: moved } satisfies ProductsRecord) + "\n");
    return true;
  } catch (err) {
    ctx.options.log.warn(`${it.id}: what workspace.setup made could not be moved to ${worktree} (${(err as Error).message}); setup runs again`);
    return false;
  }
}

/** Setup not run: what it made came with the spare checkout `from` left; said in the setup log. */
function spareSetup(o: PrepareOptions, from: string, products: readonly string[]): NonNullable<Prepared["setup"]> {
  const log = join(o.dir, SESSION_FILES.setup);
  const whose = from === BASE_DIR ? "the verify on the base ran in" : `${from} passed in`;
  writeFileAtomic(log, `loop: workspace.setup not run: this checkout is the one ${whose}, kept with what setup made there: ${products.join(", ")}\n`);
  return { ms: 0, log, reusedFrom: from };
}

/**
 * What an earlier item's setup made for the same setup key, copied into the checkout from loop's
 * kept copy (lib/step/kept-products.ts) and recorded as this checkout's products; null when there
 * is none to take (setup runs). A copy that fails is removed and setup runs.
 */
function reuseKept(
  ctx: StepContext,
  it: ItemState,
  o: PrepareOptions & { key: string; command: string; files: { stamps: string; products: string } },
): { products: string[]; setup: NonNullable<Prepared["setup"]> } | null {
  const started = performance.now();
  let got: ReturnType<typeof reuseProducts>;
  try {
    got = reuseProducts({ stateRoot: ctx.options.stateRoot, worktrees: ctx.worktrees, worktree: o.worktree, key: o.key, command: o.command });
  } catch (err) {
    ctx.options.log.warn(`${it.id}: copying what workspace.setup made for an earlier item failed (${(err as Error).message}); setup runs`);
    syncTree({ repo: o.repo, dir: o.worktree, commit: o.startCommit, keep: [], stampsFile: o.files.stamps, untracked: "remove" });
    return null;
  }
  if (!got) return null;
  const record: ProductsRecord = {
    version: 1,
    command: o.command,
    paths: got.paths,
    stamps: stampProducts(o.worktree, got.paths),
    key: o.key,
    place: got.place,
  };
  writeFileAtomic(o.files.products, JSON.stringify(record) + "\n");
  const log = join(o.dir, SESSION_FILES.setup);
  writeFileAtomic(
    log,
    `loop: workspace.setup not run: what it made for ${got.madeBy} (setup key ${o.key}) was copied into this checkout: ${got.paths.join(", ")}\n`,
  );
  return { products: got.paths, setup: { ms: Math.round(performance.now() - started), log, reusedFrom: got.madeBy } };
}

/**
 * The sandbox setup runs in: the agent's, with a read-only git folder of its own, no home and no
 * writable path outside the checkout, and its own network (workspace.setupNetwork: by default the
 * registries, reached through a proxy-only gateway).
 */
function setupSandbox(
  ctx: StepContext,
  agent: SandboxRequest,
  o: { gitDir: string; sessionDir: string },
): { request: SandboxRequest; sessionDir: string; allow?: string[] } {
  const allow = setupAllowList(ctx.def.setupNetwork, ctx.options.env);
  const request: SandboxRequest = {
    ...agent,
    gitDir: { path: o.gitDir, writable: false },
    readOnly: [],
    writable: [],
    homes: [],
    ...(allow === "none" ? { noNetwork: true } : {}),
  };
  return { request, sessionDir: o.sessionDir, ...(Array.isArray(allow) ? { allow } : {}) };
}

/**
 * The attempt's private git folder: made in its session folder, the checkout's `.git` pointed at it.
 * What setup made (`products`) is in its info/exclude: an agent's `git add -A` leaves it out, as a
 * project's .gitignore leaves out its node_modules (one that adds it anyway fails setup_output_committed).
 */
export function attemptGitDir(
  ctx: StepContext,
  o: { repo: string; worktree: string; dir: string; branch: string; head: string; refs: Record<string, string>; products: readonly string[] },
): string {
  const gitDir = join(o.dir, ATTEMPT_GIT);
  rmSync(gitDir, { recursive: true, force: true });
  const excludes = [...AGENT_EXCLUDES, ...o.products.flatMap((p) => (/[\n\r]/.test(p) ? [] : [`/${p.replace(/[\\*?[\]!# ]/g, "\\$&")}`]))];
  makeAttemptGitDir({ repo: o.repo, gitDir, worktree: o.worktree, branch: o.branch, head: o.head, refs: o.refs, excludes });
  // The checkout is loop's (its files written from the head, what setup made excluded): the agent's index says so.
  refreshAttemptIndex({ gitDir, worktree: o.worktree });
  return gitDir;
}

/** Files of the agents loop runs, never part of an item's work (the attempt's info/exclude). */
const AGENT_EXCLUDES = [".aider*"];

/**
 * Before the verify: the checkout made to hold exactly `head` (and what setup made), its `.git`
 * pointed at a fresh git folder of the verify's own. Throws TreeRefused, GitError or a system error.
 */
export function checkoutForVerify(
  ctx: StepContext,
  it: ItemState,
  o: { worktree: string; dir: string; branch: string; head: string; products: string[] },
): { gitDir: string } {
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
    const r = syncTree({
      repo: o.repo,
      dir: o.worktree,
      commit: o.head,
      keep: checkoutProducts(o.stateRoot, o.item) ?? [],
      stampsFile: treeFiles(o.stateRoot, o.item).stamps,
      untracked: "report",
      dryRun: true,
    });
    return r.restored.length + r.untracked.length + r.missing + r.removed > 0;
  } catch {
    return null;
  }
}
