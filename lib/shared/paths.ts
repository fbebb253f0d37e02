// Every path under the state root is built here, from item ids (already safe), never from refs.
import { join } from "node:path";

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
    workspaces: join(stateRoot, "workspaces"),
  };
}
export type StatePaths = ReturnType<typeof statePaths>;

export function sessionDir(stateRoot: string, item: string, epoch: number, attempt: number): string {
  // The epoch keeps a reset item's new attempt 1 from reusing the folder of the old attempt 1.
  return join(stateRoot, "sessions", item, epoch === 0 ? String(attempt) : `e${epoch}-${attempt}`);
}

export function worktreeDir(stateRoot: string, item: string): string {
  return join(stateRoot, "workspaces", item);
}
