// The default verify on the base tree (docs/cli/loop-run.md#the-verify-on-the-base): before the
// loop's first launch, and again when `defaults.verify` or `workspace.setup` change, setup and the
// verify run once on the base's files as an item's would (a checkout written from blobs, the item's
// own environment, its sandbox), so that a verify that cannot pass there is a person's question, not
// an attempt spent. Passed, or accepted once by `loop ctl resume --yes`, it holds for its key: no time
// per item. It runs within the step (bounded by `timeouts.setup` and `timeouts.verify`, the lease
// renewed for them), after `base_verify_started` is recorded; a step killed during it leaves that
// run "running", and the next step ends what it left (its process group, recorded in `spawned.json`)
// and runs it again: repeating it spends nothing.
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { verifyRule } from "../definition/child-environment.ts";
import { setupAllowList } from "../definition/network.ts";
import { canonicalJson, sha256Hex } from "../log/canonical.ts";
import type { ItemState } from "../log/projection.ts";
import { baseVerifyFault, baseVerifyNeed } from "../decisions/base-verify.ts";
import { launchErrorFault } from "../decisions/faults.ts";
import { revParse } from "../repo/git.ts";
import { makeAttemptGitDir } from "../repo/attempt-git.ts";
import { syncTree } from "../repo/tree-sync.ts";
import { failpoint } from "../shared/failpoint.ts";
import { readJsonOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { printable } from "../shared/printable.ts";
import { killRecordedGroup, processStartTime } from "../shared/process.ts";
import { moveToTrash, trashOf } from "../shared/trash.ts";
import { BASE_DIR } from "../shared/paths.ts";
import { probeSandbox, type SandboxRequest } from "../supervisor/sandbox.ts";
import { runSetup } from "../supervisor/setup-command.ts";
import { selfFiles } from "../supervisor/self.ts";
import { checkoutPlace } from "./checkout-place.ts";
import { append, loopView, repoOf, type StepContext, type StepOutcome } from "./context.ts";
import { sandboxRequest, sessionPath } from "../writer/sandbox-request.ts";
import { forgetCheckout, productsRecordOf, treeFiles } from "../writer/airlock.ts";
import { keepSpare } from "../writer/spare-checkout.ts";
import { setupKey } from "../repo/products.ts";

/** The key of the pair a base verify holds for: the default verify and workspace.setup. */
function baseVerifyKey(verify: string, setup: string | null): string {
  return sha256Hex(canonicalJson({ verify, setup })).slice(0, 16);
}

/**
 * Before `it` is launched: null when the base verify holds (off, passed or accepted before, or passed
 * now), else the step's outcome (the loop paused with `base_verify_failed`, nothing reserved).
 */
export async function checkBase(ctx: StepContext, it: ItemState): Promise<StepOutcome | null> {
  const verify = ctx.def.baseVerify;
  const setup = ctx.def.setup ?? null;
  const key = verify === undefined ? null : baseVerifyKey(verify, setup);
  const record = loopView(ctx).loop.baseVerify;
  const need = baseVerifyNeed(key, record);
  if (need.kind === "none") return null;
  const repo = repoOf(ctx);
  const base =
    ctx.def.forge && revParse(repo, `refs/remotes/${ctx.def.forge.remote}/${ctx.def.base}`) !== null
      ? `refs/remotes/${ctx.def.forge.remote}/${ctx.def.base}`
      : ctx.def.base;
  const commit = revParse(repo, `${base}^{commit}`);
  // No base, or a sandbox asked for and unusable: the launch's probe names the fault, before anything runs.
  if (commit === null) return null;
  const box = it.def.sandbox ? probeSandbox(sessionPath(ctx.options.env)) : null;
  if (box && !box.ok) return null;
  const dir = join(ctx.options.stateRoot, "base-verify");
  if (need.takeover) await endLeftOver(ctx, dir);
  const worktree = join(ctx.worktrees, BASE_DIR);
  append(ctx, [{ type: "base_verify_started", payload: { key: key!, verify: verify!, setup, base, commit, dir } }], "base_verify");
  failpoint("base_verify:after_start");
  let r: BaseRun;
  try {
    r = await runOnBase(ctx, it, { verify: verify!, setup, commit, dir, worktree, bwrap: box?.ok ? box.bwrap : null });
  } catch (err) {
    // The machine's fault (git, the disk, a folder), judged by its type as a launch's: the loop pauses,
    // the run stays "running" and runs again once resumed. Anything else is a bug in loop, thrown on.
    const fault = launchErrorFault(err);
    if (!fault) throw err;
    retire(worktree);
    forgetCheckout(ctx.options.stateRoot, BASE_DIR);
    append(
      ctx,
      [{ type: "environment_fault", payload: { kind: fault.kind, attempt: null, reason: `the verify on the base: ${fault.message}`, fix: fault.fix } }],
      "base_verify",
    );
    return { action: "paused", item: null, reason: loopView(ctx).loop.reason };
  }
  // Passed: the checkout, with what setup made, is the first item's spare (lib/writer/spare-checkout.ts),
  // so setup does not run again there, nor is the base written twice. Anything else goes to the trash.
  if (r.code !== "passed" || !keepSpare({ stateRoot: ctx.options.stateRoot, worktrees: ctx.worktrees, worktree, item: BASE_DIR })) retire(worktree);
  forgetCheckout(ctx.options.stateRoot, BASE_DIR);
  const quote = printable(r.quote);
  const log = r.code === "setup_failed" ? join(dir, "setup.log") : join(dir, "verify.log");
  const finished = {
    type: "base_verify_finished" as const,
    payload: { key: key!, code: r.code, exitCode: r.exitCode, quote, log, ms: r.ms, reason: r.reason },
  };
  if (r.code === "passed") {
    append(ctx, [finished], "base_verify");
    return null;
  }
  const fault = baseVerifyFault({ code: r.code, verify: verify!, setup, commit, base, why: printable(r.reason), log });
  ctx.options.log.error(fault.message);
  append(ctx, [finished, { type: "environment_fault", payload: { kind: fault.kind, attempt: null, reason: fault.message, fix: fault.fix } }], "base_verify");
  return { action: "paused", item: null, reason: loopView(ctx).loop.reason };
}

interface BaseRun {
  code: "passed" | "failed" | "setup_failed";
  exitCode: number | null;
  quote: string;
  reason: string;
  ms: number;
}

/** Setup, then the verify, on a checkout written from the base's blobs, as an item's checkout is (lib/step/checkout.ts). */
async function runOnBase(
  ctx: StepContext,
  it: ItemState,
  o: { verify: string; setup: string | null; commit: string; dir: string; worktree: string; bwrap: string | null },
): Promise<BaseRun> {
  const repo = repoOf(ctx);
  rmSync(o.dir, { recursive: true, force: true });
  mkdirSync(o.dir, { recursive: true });
  retire(o.worktree);
  // Its records are an item's (trees/_base.json, trees/_base.products.json): the checkout may become a spare.
  forgetCheckout(ctx.options.stateRoot, BASE_DIR);
  mkdirSync(o.worktree, { recursive: true });
  const files = treeFiles(ctx.options.stateRoot, BASE_DIR);
  const stampsFile = files.stamps;
  syncTree({ repo, dir: o.worktree, commit: o.commit, keep: [], stampsFile, untracked: "remove" });
  const env = { LOOP_ITEM: "", LOOP_ATTEMPT: "0", LOOP_WORKDIR: o.worktree };
  const request = o.bwrap
    ? sandboxRequest({
        bwrap: o.bwrap,
        repo,
        worktree: o.worktree,
        stateRoot: ctx.options.stateRoot,
        runner: it.def.runner,
        writable: [],
        env: ctx.options.env,
      })
    : null;
  const onSpawn = (pgid: number) => writeFileAtomic(join(o.dir, "spawned.json"), JSON.stringify({ pgid, start: processStartTime(pgid) }) + "\n");
  let ms = 0;
  let products: string[] = [];
  if (o.setup !== null) {
    const gitDir = join(o.dir, "setup-git");
    makeAttemptGitDir({ repo, gitDir, worktree: o.worktree, branch: ctx.def.base, head: o.commit, refs: {}, excludes: [] });
    const timeoutMs = it.def.timeouts.setup ?? 10 * 60_000;
    ctx.store.assertLease();
    ctx.store.renewLease(ctx.lease, timeoutMs + 10 * 60_000);
    const allow = setupAllowList(ctx.def.setupNetwork, ctx.options.env);
    const s = await runSetup({
      command: o.setup,
      cwd: o.worktree,
      env,
      envRule: { ...verifyRule(ctx.def, { behindGateway: true }), place: checkoutPlace(ctx, o.worktree, { forSetup: true }) },
      logPath: join(o.dir, "setup.log"),
      timeoutMs,
      sandbox: request
        ? {
            request: {
              ...request,
              gitDir: { path: gitDir, writable: false },
              readOnly: [],
              writable: [],
              homes: [],
              ...(allow === "none" ? { noNetwork: true } : {}),
            },
            sessionDir: o.dir,
            ...(Array.isArray(allow) ? { allow } : {}),
          }
        : null,
      onSpawn,
    });
    ms += s.ms;
    if (!s.ok) return { code: "setup_failed", exitCode: s.exitCode, quote: s.quote, reason: `workspace.setup ${s.reason}`, ms };
    // What it made stays for the verify; a tracked file it changed is written back, as in an item's checkout.
    products = syncTree({ repo, dir: o.worktree, commit: o.commit, keep: [], stampsFile, untracked: "report" }).untracked;
    syncTree({ repo, dir: o.worktree, commit: o.commit, keep: products, stampsFile, untracked: "remove" });
    // As setup left them, before the verify runs: what the verify changes is seen when they are taken.
    writeProductsRecord(ctx, o.worktree, o.commit, o.setup, products, files.products);
  }
  const gitDir = join(o.dir, "verify-git");
  makeAttemptGitDir({ repo, gitDir, worktree: o.worktree, branch: ctx.def.base, head: o.commit, refs: {}, excludes: [] });
  const timeoutMs = it.def.timeouts.verify;
  ctx.store.assertLease();
  ctx.store.renewLease(ctx.lease, timeoutMs + 10 * 60_000);
  const v = await runSetup({
    command: o.verify,
    cwd: o.worktree,
    env,
    envRule: { ...verifyRule(ctx.def, { behindGateway: it.def.network !== undefined }), place: checkoutPlace(ctx, o.worktree) },
    logPath: join(o.dir, "verify.log"),
    timeoutMs,
    sandbox: request ? verifySandbox(it, request, { gitDir, dir: o.dir, readOnly: products.map((p) => join(o.worktree, p)) }) : null,
    onSpawn,
  });
  ms += v.ms;
  if (!v.ok) return { code: "failed", exitCode: v.exitCode, quote: v.quote, reason: `the verify ${v.reason}`, ms };
  return { code: "passed", exitCode: 0, quote: "", reason: "passed", ms };
}

/** The verify's sandbox, as an item's (lib/step/verify.ts): its own read-only git folder, what setup made read-only, its network. */
function verifySandbox(
  it: ItemState,
  agent: SandboxRequest,
  o: { gitDir: string; dir: string; readOnly: string[] },
): { request: SandboxRequest; sessionDir: string; allow?: string[] } {
  const request: SandboxRequest = { ...agent, homes: [], gitDir: { path: o.gitDir, writable: false }, readOnly: o.readOnly };
  if (it.def.verifyNetwork === "none") return { request: { ...request, noNetwork: true }, sessionDir: o.dir };
  if (Array.isArray(it.def.verifyNetwork))
    return { request: { ...request, programs: [...(request.programs ?? []), ...selfFiles()] }, sessionDir: o.dir, allow: it.def.verifyNetwork };
  return { request, sessionDir: o.dir };
}

/** What a step cut short during the base verify left running (its setup's or verify's process group) is ended first. */
async function endLeftOver(ctx: StepContext, dir: string): Promise<void> {
  const spawned = readJsonOrNull(join(dir, "spawned.json")) as { pgid?: unknown; start?: unknown } | null;
  ctx.options.log.warn("a step was cut short during the verify on the base; it runs again now");
  if (spawned && typeof spawned.pgid === "number" && Number.isSafeInteger(spawned.pgid) && spawned.pgid > 1)
    await killRecordedGroup(spawned.pgid, typeof spawned.start === "string" ? spawned.start : null, 2000);
}

/** What setup made in the base's checkout, recorded as an item's checkout records it (lib/step/checkout.ts). */
function writeProductsRecord(ctx: StepContext, worktree: string, commit: string, command: string, paths: string[], file: string): void {
  const key = setupKey({ repo: repoOf(ctx), commit, command, ...(ctx.def.setupKey ? { paths: ctx.def.setupKey } : {}) });
  writeFileAtomic(file, JSON.stringify(productsRecordOf({ worktree, command, paths, key }).record) + "\n");
}

/** The base's checkout taken away: into the worktrees folder's trash (deleted later, a bounded piece per step), or deleted. */
function retire(worktree: string): void {
  if (!existsSync(worktree)) return;
  if (!moveToTrash(worktree, trashOf(dirname(worktree)), basename(worktree), null)) rmSync(worktree, { recursive: true, force: true });
}
