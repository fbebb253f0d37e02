// Creating the state root. Whatever creates it (or the store in it) writes its .gitignore, so a
// `git add -A` in the project never picks up the database, the logs or the nested worktrees.
import { existsSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { statePaths } from "./paths.ts";

const GITIGNORE_TEXT = "# loop's state root: never commit it\n*\n";

/**
 * Make sure the state root exists; write its .gitignore when the directory is created now, or when
 * `gitignore` asks for it (a new store), unless one exists. Returns the paths it created.
 */
export function ensureStateRoot(stateRoot: string, o: { gitignore?: boolean } = {}): string[] {
  const created: string[] = [];
  const paths = statePaths(stateRoot);
  if (!existsSync(stateRoot)) {
    mkdirSync(stateRoot, { recursive: true });
    created.push(stateRoot);
  }
  if (created.length || o.gitignore) {
    try {
      // "wx": never replaces (or writes through a link at) whatever is already there.
      writeFileSync(paths.gitignore, GITIGNORE_TEXT, { flag: "wx" });
      created.push(paths.gitignore);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return created;
}

/**
 * What of a loop's past a state root holds besides its store: the files only a loop that has run
 * writes (state.json, RUNLOG.md, terminal_state.json, a disk reserve, the forge cache, a stopped
 * watcher's proof) and non-empty session or worktree folders. Such a root without loop.db lost its
 * store (deleted by an agent, a bad restore): a new one there would relaunch what had passed and
 * forget what was spent, so it is refused (store_missing). A `.gitignore` and `run.pid` are not
 * counted: a root that `loop init` or a first step is creating holds them.
 */
export function loopLeftovers(stateRoot: string): string[] {
  const p = statePaths(stateRoot);
  const files = [p.stateJson, p.runlog, p.terminal, p.watcherStop, join(stateRoot, "disk-reserve"), join(stateRoot, "forge-cache.json")];
  const found = files.filter((f) => lstatSync(f, { throwIfNoEntry: false }));
  for (const dir of [p.sessions, p.workspaces]) {
    const st = lstatSync(dir, { throwIfNoEntry: false });
    if (st && (!st.isDirectory() || readdirSync(dir).length > 0)) found.push(dir);
  }
  return found;
}
