// The airlock's passage (docs/threat-model.md#the-airlock): after the agent, what it left is sealed
// on its side (lib/supervisor/seal.ts), its objects imported, each proven (lib/repo/object-import.ts),
// the proposed head checked to be a commit whose history the repository holds, and loop writes the
// item branch to it. Used by the verify phase and by the close path (which ctl and reset use too),
// so it takes plain values, not a step's context. Also what loop keeps of a checkout: its stamps
// (lib/repo/tree-sync.ts) and what setup made there.
import { type PlaceBinding, placeBinding } from "../repo/product-place.ts";
import { type ProductStamps, stampProducts } from "../repo/products.ts";
import { existsSync, lstatSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { commonGitDir, gitTry, revParse, symbolicBranchTarget } from "../repo/git.ts";
import { disarmRefTraps } from "../repo/ref-traps.ts";
import { describeRefused, importObjects, type Refusal } from "../repo/object-import.ts";
import { readTree, TreeRefused } from "../repo/tree-sync.ts";
import { StartError } from "../shared/errors.ts";
import { failpoint } from "../shared/failpoint.ts";
import { SESSION_MARK_VAR } from "../shared/process.ts";
import { readJsonOrNull, readTextOrNull } from "../shared/fsutil.ts";
import { statePaths } from "../shared/paths.ts";
import { probeSandbox, type SandboxRequest } from "../supervisor/sandbox.ts";
import { sealAttempt } from "../supervisor/seal.ts";
import { sandboxRequest, sessionPath } from "./sandbox-request.ts";

/** The session folder's private git folders: the agent's, and its verify's (read-only). */
export const ATTEMPT_GIT = "git";

/** What loop keeps about one item's checkout, in the state root (out of the sandbox's sight). */
export function treeFiles(stateRoot: string, item: string): { stamps: string; products: string } {
  const trees = statePaths(stateRoot).trees;
  return { stamps: join(trees, `${item}.json`), products: join(trees, `${item}.products.json`) };
}

/** What `workspace.setup` made in a checkout, and for which command. */
export interface ProductsRecord {
  version: 1;
  /** The setup command it ran; another command runs again. */
  command: string;
  /** Top-most paths (relative to the checkout) the start point does not hold. */
  paths: string[];
  /** Every entry of them as setup left it (lib/repo/products.ts); absent in older records (nothing compared). */
  stamps?: ProductStamps;
  /** The setup key of the start point it ran on (lib/repo/products.ts setupKey); absent in older records (not compared). */
  key?: string;
  /**
   * The files that name the checkout's path, rewritten when the products move to another checkout
   * (lib/repo/product-place.ts); null when they cannot move (bound to this checkout); absent in older records (not moved).
   */
  place?: PlaceBinding | null;
}

/**
 * The item's products record, parsed once per version of the file: a step reads it four times
 * between the agent's exit and the verify, and with a dependency folder's ten thousand stamps each
 * parse costs tens of ms. The file is only ever replaced whole (written aside, renamed): a new version
 * has a new inode. Shared: callers do not change what it returns.
 */
let lastRecord: { path: string; key: string; record: ProductsRecord | null } | null = null;
function productsRecord(stateRoot: string, item: string): ProductsRecord | null {
  const path = treeFiles(stateRoot, item).products;
  const st = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  if (!st?.isFile()) return null;
  const key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  if (lastRecord?.path === path && lastRecord.key === key) return lastRecord.record;
  const record = readJsonOrNull<ProductsRecord>(path);
  lastRecord = { path, key, record };
  return record;
}

/** The stamps of what setup made in the item's checkout, or null (none recorded). */
export function productStampsOf(stateRoot: string, item: string): ProductStamps | null {
  const r = productsRecord(stateRoot, item);
  return r?.version === 1 && r.stamps && typeof r.stamps === "object" ? r.stamps : null;
}

/**
 * The record of what setup just made in `worktree` (before anything else ran there): the stamps of
 * every entry, and which files name the checkout's path (lib/repo/product-place.ts), also returned
 * whole for a caller that keeps a copy.
 */
export function productsRecordOf(o: { worktree: string; command: string; paths: string[]; key: string | null }): {
  record: ProductsRecord;
  place: ReturnType<typeof placeBinding>;
} {
  const stamps = stampProducts(o.worktree, o.paths);
  const place = placeBinding(o.worktree, stamps);
  return {
    record: { version: 1, command: o.command, paths: o.paths, stamps, ...(o.key ? { key: o.key } : {}), place: "binding" in place ? place.binding : null },
    place,
  };
}

/** Where the item's checkout's products name their checkout: undefined in an older record, null when they cannot move. */
export function productsPlaceOf(stateRoot: string, item: string): PlaceBinding | null | undefined {
  const r = productsRecord(stateRoot, item);
  if (r?.version !== 1 || r.place === undefined) return undefined;
  const p = r.place;
  return p && typeof p.dir === "string" && Array.isArray(p.files) && p.files.every((f) => typeof f === "string") ? p : null;
}

/** The setup key the item's checkout's products were made for, or null (none recorded). */
export function productsKeyOf(stateRoot: string, item: string): string | null {
  const r = productsRecord(stateRoot, item);
  return r?.version === 1 && typeof r.key === "string" ? r.key : null;
}

/**
 * What setup made in the item's checkout: null when it has not run there, or (with `command`) ran
 * another command than `command`, or (with `key`) ran on other inputs (lib/repo/products.ts setupKey).
 */
export function checkoutProducts(stateRoot: string, item: string, command?: string, key?: string | null): string[] | null {
  const r = productsRecord(stateRoot, item);
  if (r?.version !== 1 || !Array.isArray(r.paths) || (command !== undefined && r.command !== command)) return null;
  // Made from other inputs (a lockfile changed since): setup runs again.
  if (key && r.key !== undefined && r.key !== key) return null;
  return r.paths.filter((p): p is string => typeof p === "string");
}

/** What a checkout held as far as loop knows (the files it wrote, what setup made), from its stamps; null when it has none. */
export function checkoutBytes(stateRoot: string, item: string): number | null {
  const tree = readJsonOrNull<{ files?: Record<string, unknown[]> }>(treeFiles(stateRoot, item).stamps);
  const products = productStampsOf(stateRoot, item);
  if (!tree?.files && !products) return null;
  let bytes = 0;
  for (const s of Object.values(tree?.files ?? {})) bytes += Number(s?.[2]) || 0;
  // A product's stamp: kind:mode:size:… (a folder's has no size).
  for (const s of Object.values(products ?? {})) if (typeof s === "string" && !s.startsWith("d:")) bytes += Number(s.split(":")[2]) || 0;
  return bytes;
}

/** Forget what loop knew of a checkout (it was removed or moved aside). */
export function forgetCheckout(stateRoot: string, item: string): void {
  const f = treeFiles(stateRoot, item);
  rmSync(f.stamps, { force: true });
  rmSync(f.products, { force: true });
}

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
  if (!m) return null;
  const gitDir = m[1]!.trim();
  // Only a registration of the repository's own: anything else is not loop's to run git in.
  if (dirname(gitDir) !== join(commonGitDir(repo), "worktrees")) return null;
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
  /** The attempt's number and its session's mark (lib/supervisor/sessions.ts sessionMark): the seal carries them. */
  attempt: number;
  mark: string;
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
    if (!probe.ok)
      return {
        kind: "seal_failed",
        reason: `the sandbox it must run in cannot be made (${probe.message}); nothing of the agent's is run outside it`,
        timedOut: false,
      };
    try {
      const request = sandboxRequest({
        bwrap: probe.bwrap,
        repo: o.repo,
        worktree: o.worktree,
        stateRoot: o.stateRoot,
        runner: o.runner,
        writable: [],
        env: o.env,
      });
      sandbox = {
        request: { ...request, homes: [], gitDir: { path: layout.gitDir, writable: true }, readOnly: products.map((p) => join(o.worktree, p)) },
        sessionDir: o.sessionDir,
      };
    } catch (err) {
      if (!(err instanceof StartError)) throw err;
      return { kind: "seal_failed", reason: err.message, timedOut: false };
    }
  }
  const attempt = { LOOP_ITEM: o.item, LOOP_ATTEMPT: String(o.attempt), [SESSION_MARK_VAR]: o.mark };
  const sealed = await sealAttempt({ worktree: o.worktree, gitDir: layout.gitDir, exclude: products, message: o.message, sandbox, env: o.env, attempt });
  if (!sealed.ok) return { kind: "seal_failed", reason: sealed.reason, timedOut: sealed.timedOut };
  failpoint("airlock:after_seal");
  const imported = await importObjects({ repo: o.repo, from: layout.objects });
  failpoint("airlock:after_import");
  const large = imported.refused.filter((r) => r.kind === "too_large");
  if (large.length) return { kind: "object_too_large", refused: large };
  if (imported.refused.length) return { kind: "objects_refused", refused: imported.refused };
  const head = sealed.head;
  // Every object the attempt's commits reach, there and readable: a head whose history loop cannot read is no head.
  // (Nothing new to walk when the head is the one the attempt started from.)
  const complete = head === o.expected ? { code: 0, stderr: "" } : gitTry(o.repo, ["rev-list", "--objects", "--quiet", head, "--not", o.expected]);
  if (complete.code !== 0 || revParse(o.repo, head) !== head)
    return {
      kind: "head_invalid",
      reason: `${head.slice(0, 12)} is not a commit whose history the repository holds (${complete.stderr.trim().split("\n")[0] || `git exited ${complete.code}`})`,
    };
  try {
    readTree(o.repo, head);
  } catch (err) {
    if (!(err instanceof TreeRefused)) throw err;
    return { kind: "head_invalid", reason: `${head.slice(0, 12)}: ${err.message}` };
  }
  const now = revParse(o.repo, `refs/heads/${o.branch}`);
  if (now === head) return { kind: "ok", head, committed: sealed.committed, imported: imported.imported };
  if (now !== o.expected) return { kind: "branch_moved", found: now, expected: o.expected };
  // A branch made a symbolic ref (to main, say) would move its target: never written through.
  const symbolic = symbolicBranchTarget(o.repo, o.branch);
  if (symbolic !== null) return { kind: "branch_moved", found: `a symbolic ref to ${symbolic}`, expected: o.expected };
  disarmRefTraps({ commonDir: commonGitDir(o.repo), refs: [`refs/heads/${o.branch}`] });
  const w = gitTry(o.repo, ["update-ref", "--no-deref", "-m", `loop: ${o.item}: the attempt's head`, `refs/heads/${o.branch}`, head, o.expected]);
  if (w.code !== 0) return { kind: "branch_moved", found: revParse(o.repo, `refs/heads/${o.branch}`), expected: o.expected };
  return { kind: "ok", head, committed: sealed.committed, imported: imported.imported };
}

/** Where a branch found moved is: at a commit (short), a symbolic ref's words, or gone. */
export function describeFound(found: string | null): string {
  return found === null ? "gone" : /^[0-9a-f]{40,64}$/.test(found) ? `at ${found.slice(0, 12)}` : found;
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
      return `the item branch was moved while the attempt ran (it is ${describeFound(r.found)}; loop left it at ${r.expected.slice(0, 12)}): not loop's doing, not overwritten`;
  }
}
