// Every path under the state root is built here, from item ids (already safe), never from refs.
import { createHash } from "node:crypto";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";

export function statePaths(stateRoot: string) {
  return {
    root: stateRoot,
    db: join(stateRoot, "loop.db"),
    stateJson: join(stateRoot, "state.json"),
    runlog: join(stateRoot, "RUNLOG.md"),
    terminal: join(stateRoot, "terminal_state.json"),
    runPid: join(stateRoot, "run.pid"),
    /** A stopped watcher's proof, until a step records it (lib/step/drain.ts). */
    watcherStop: join(stateRoot, "watcher-stop.json"),
    gitignore: join(stateRoot, ".gitignore"),
    sessions: join(stateRoot, "sessions"),
    /** Where worktrees lived before they moved out of the repository's tree (docs/state.md#where-worktrees-live). */
    workspaces: join(stateRoot, "workspaces"),
    /** What loop wrote into each item's checkout, and what its setup made (lib/step/checkout.ts). */
    trees: join(stateRoot, "trees"),
  };
}
export type StatePaths = ReturnType<typeof statePaths>;

export function sessionDir(stateRoot: string, item: string, epoch: number, attempt: number): string {
  // The epoch keeps a reset item's new attempt 1 from reusing the folder of the old attempt 1.
  return join(stateRoot, "sessions", item, epoch === 0 ? String(attempt) : `e${epoch}-${attempt}`);
}

/**
 * The folder of a loop's worktrees and its landing checkout, outside the repository's tree so the
 * team's own tools never walk into them (docs/state.md#where-worktrees-live): $LOOP_WORKTREES when
 * set (absolute), else `$XDG_STATE_HOME/loop/<project>-<hash>` ($HOME/.local/state when unset),
 * one per state root: the hash is of the state root's absolute path.
 */
export function worktreesRoot(stateRoot: string, env: Record<string, string | undefined>): string {
  const own = env.LOOP_WORKTREES;
  if (own) return resolve(own);
  const abs = resolve(stateRoot);
  const xdg = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(env.HOME || "/tmp", ".local", "state");
  const project = basename(dirname(abs)).replace(/[^A-Za-z0-9._-]/g, "_") || "loop";
  return join(xdg, "loop", `${project}-${createHash("sha256").update(abs).digest("hex").slice(0, 12)}`);
}

export function worktreeDir(root: string, item: string): string {
  return join(root, item);
}

/** The base's checkout (the verify on the base), beside the items' (an item's id never starts with "_"); also `setup.reusedFrom` of the item that takes it as its spare. */
export const BASE_DIR = "_base";

/** The landing checkout (landing "merge" merges there), beside the items' worktrees. */
export const LANDING_DIR = "_landing";
