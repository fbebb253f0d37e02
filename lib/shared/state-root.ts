// Creating the state root. Whatever creates it (or the store in it) writes its .gitignore, so a
// `git add -A` in the project never picks up the database, the logs or the nested worktrees.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { statePaths } from "./paths.ts";

export const GITIGNORE_TEXT = "# loop's state root: never commit it\n*\n";

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
