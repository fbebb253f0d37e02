// The protected-path check of the verify phase (docs/loop-json.md#protect): before an attempt's
// verify runs, the changes its branch carries (from where it forked off the start point to its
// head, after the agent's leftovers were committed) are matched against the built-in protected
// paths and loop.json's `protect` globs. A match fails the attempt `protected_path_changed` and its
// verify never runs: an agent that deletes the failing assertion or rewrites the verify script is
// caught, whatever its verify would say. The changes are counted from the commit loop made the
// branch at (the attempt's recorded start), never from where the agent chose to fork: a branch that
// no longer contains that commit is refused (start_commit_missing). These return the facts; the
// order of the gates is lib/decisions/verify-gates.ts's, the sentences verify-verdict.ts's.
import { realpathSync } from "node:fs";
import { builtinProtect, protectedChanges } from "../definition/protect.ts";
import { requireAttempt } from "../log/projection.ts";
import type { SessionItem } from "../log/item-views.ts";
import { repoOf, type StepContext } from "./context.ts";
import { revParse } from "../repo/git.ts";
import { changedPaths, forkPoint, isAncestor, startPointFor } from "../repo/workspace.ts";
import { readTree, type TreeEntry } from "../repo/tree-sync.ts";
import type { VerifyVerdict } from "../decisions/verify-verdict.ts";

type PathsVerdict = Extract<VerifyVerdict, { code: "start_commit_missing" | "protected_path_changed" }>;

/** Every pattern in force: the built-in ones and loop.json's. */
function protectPatterns(ctx: StepContext): string[] {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  const builtin = builtinProtect({ repoTop: real(repoOf(ctx)), root: real(ctx.options.root), stateRoot: real(ctx.options.stateRoot) });
  return [...builtin, ...(ctx.def.protect ?? [])];
}

/** Where the item's branch starts, as the launch chose it (lib/step/launch.ts), without fetching. */
function itemStartPoint(ctx: StepContext, repo: string): string {
  if (ctx.def.forge) {
    const ref = `refs/remotes/${ctx.def.forge.remote}/${ctx.def.base}`;
    return revParse(repo, ref) !== null ? ref : ctx.def.base;
  }
  return startPointFor({ repo, landing: ctx.def.landing, base: ctx.def.base, target: ctx.def.target });
}

/**
 * The protected paths the current attempt's branch changes, as a verdict; null when it changes
 * none. Throws GitError when git cannot tell (the caller fails the attempt with git's reason).
 */
export function protectedPathVerdict(ctx: StepContext, it: SessionItem): PathsVerdict | null {
  const repo = repoOf(ctx);
  const branch = it.session.branch;
  const start = itemStartPoint(ctx, repo);
  const recorded = requireAttempt(it).start;
  const fork = forkPoint({ repo, a: start, b: branch });
  let from: string;
  if (recorded !== undefined) {
    // The branch must still hold the commit loop made it at: forked off an older commit (a reset to
    // HEAD~1, a rebase onto history before the test was written), it could roll protected files back.
    if (!isAncestor(repo, recorded, branch)) return { code: "start_commit_missing", branch, recorded, start };
    // Compared with that commit, or with a later commit of the start point's own history the branch
    // merged in (a rework that merged the newer base): never anything older than the start, and
    // never newer than the base loop saw at this attempt's launch (a commit that appeared on the base
    // while the agent ran, the agent's own without the sandbox, is not a base).
    const base = requireAttempt(it).base;
    from = fork !== null && isAncestor(repo, recorded, fork) && (base === undefined || isAncestor(repo, fork, base)) ? fork : recorded;
  } else {
    // Logs from before the start was recorded: from where the branch forked off its start point.
    // A branch with no common history with it (rewritten) is compared with it whole.
    from = fork ?? start;
  }
  const paths = protectedChanges(protectPatterns(ctx), changedPaths({ repo, from, to: branch }));
  if (paths.length === 0) return null;
  return { code: "protected_path_changed", branch, paths, start, from };
}

/**
 * What a verify must not change (docs/threat-model.md#the-airlock): the protected entries of the
 * commit, as paths relative to the checkout, each folder whose every path is protected named once
 * (bound read-only in the verify's sandbox), and the protected files themselves (compared with their
 * blobs when the verify ends). Throws TreeRefused or GitError when git cannot read the commit.
 */
export function protectedEntries(ctx: StepContext, head: string): { mounts: string[]; files: TreeEntry[] } {
  const patterns = protectPatterns(ctx);
  const entries = readTree(repoOf(ctx), head);
  const protectedPath = (p: string) => protectedChanges(patterns, [p]).length > 0;
  const whole = new Set<string>();
  const dirs = new Set<string>();
  for (const e of entries) for (let i = e.path.indexOf("/"); i > 0; i = e.path.indexOf("/", i + 1)) dirs.add(e.path.slice(0, i));
  // A folder is bound whole when anything that could be made in it is protected (`tests/**`, `tests`).
  for (const d of [...dirs].sort()) {
    if ([...whole].some((w) => d.startsWith(`${w}/`))) continue;
    if (protectedPath(`${d}/.loop-new-file`) && protectedPath(`${d}/.loop-new-dir/x`)) whole.add(d);
  }
  const files = entries.filter((e) => e.mode !== "160000" && protectedPath(e.path));
  const inWhole = (p: string) => [...whole].some((w) => p.startsWith(`${w}/`));
  return { mounts: [...whole, ...files.filter((f) => !inWhole(f.path)).map((f) => f.path)], files };
}
