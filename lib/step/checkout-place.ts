// The checkout's place for its item's environment (lib/definition/item-environment.ts): what no
// variable may point into (the repository's main checkout, the loop's worktrees folder, as named and
// as their real paths) and what setup made that comes first on PATH. The sandbox binds the checkout
// at its own path, so the path loop names is the path the child sees. And the report of a verify's
// environment, for `loop logs --verify`.
import { lstatSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { childEnvironment, type EnvRule } from "../definition/child-environment.ts";
import { type CheckoutPlace, type Dropped, itemEnvironment } from "../definition/item-environment.ts";
import { writeFileAtomic } from "../shared/fsutil.ts";
import { VERIFY_FILES } from "../supervisor/session-wrapper.ts";
import { repoOf, type StepContext } from "./context.ts";

/** Where a venv setup made may be, the first found taken. */
const VENVS = [".venv", "venv"];

function realOr(p: string): string[] {
  try {
    const r = realpathSync(p);
    return r === p ? [p] : [p, r];
  } catch {
    return [p];
  }
}

/** A folder (no link) in the checkout? */
const isDir = (p: string) => lstatSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;
const isFile = (p: string) => lstatSync(p, { throwIfNoEntry: false })?.isFile() ?? false;

/**
 * The place of `worktree`. For setup (`forSetup`), nothing is made yet: the venv's and
 * node_modules' bin folders go first on PATH anyway, so that setup's later commands find what its
 * earlier ones made; for the agent and the verify, what is there.
 */
export function checkoutPlace(ctx: StepContext, worktree: string, o: { forSetup?: boolean } = {}): CheckoutPlace {
  const foreign = [...new Set([repoOf(ctx), ctx.worktrees, ctx.paths.workspaces].flatMap(realOr))];
  if (o.forSetup) return { checkout: worktree, foreign, venv: null, bins: [".venv/bin", "node_modules/.bin"] };
  const venv = VENVS.find((v) => isDir(join(worktree, v)) && isFile(join(worktree, v, "pyvenv.cfg"))) ?? null;
  const bins = [
    ...(venv !== null && isDir(join(worktree, venv, "bin")) ? [`${venv}/bin`] : []),
    ...(isDir(join(worktree, "node_modules", ".bin")) ? ["node_modules/.bin"] : []),
  ];
  return { checkout: worktree, foreign, venv, bins };
}

/** What `loop logs --verify` shows of the environment a verify ran with (VERIFY_FILES.environment): names and why each was dropped, PATH's entries, never another value. */
interface EnvironmentReport {
  /** Every variable it got, by name (loop's LOOP_* added after). */
  names: string[];
  PATH: string | null;
  VIRTUAL_ENV: string | null;
  /** Dropped by the item's environment rule, and why. */
  dropped: Dropped[];
  /** PATH (PYTHONPATH, NODE_PATH) entries taken off. */
  removed: string[];
  /** Names loop's environment had that the policy or loop's keys kept out. */
  withheld: string[];
}

/** Write the report of the environment `rule` gives a child of this process, in `dir`. */
export function writeEnvironmentReport(dir: string, rule: EnvRule): void {
  const parent = process.env as Record<string, string>;
  const got = childEnvironment(parent, { ...rule, place: undefined });
  const own = rule.place ? itemEnvironment(got, rule.place) : { env: got, dropped: [], removed: [] };
  const names = Object.keys(own.env).sort();
  const report: EnvironmentReport = {
    names,
    PATH: own.env.PATH ?? null,
    VIRTUAL_ENV: own.env.VIRTUAL_ENV ?? null,
    dropped: own.dropped,
    removed: own.removed,
    withheld: Object.keys(parent)
      .filter((n) => parent[n] !== undefined && !(n in got))
      .sort(),
  };
  writeFileAtomic(join(dir, VERIFY_FILES.environment), JSON.stringify(report, null, 2) + "\n");
}
