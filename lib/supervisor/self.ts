// How loop re-invokes itself (session wrapper, demo agent): the compiled binary runs itself; from
// source, bun runs cmd/loop.ts, whichever cmd/ script the user started.
import { existsSync } from "node:fs";
import { join } from "node:path";

/**
 * What must be visible for selfArgv to run (a sandbox hides /tmp, where a checkout may live): the
 * runtime, and from source the package (cmd/, lib/, node_modules/).
 */
export function selfFiles(): string[] {
  const root = join(import.meta.dir, "..", "..");
  if (!import.meta.dir.startsWith("/$bunfs") && existsSync(join(root, "cmd", "loop.ts"))) return [process.execPath, root];
  return [process.execPath];
}

export function selfArgv(): string[] {
  const entry = join(import.meta.dir, "..", "..", "cmd", "loop.ts");
  if (!import.meta.dir.startsWith("/$bunfs") && existsSync(entry)) return [process.execPath, entry];
  return [process.execPath];
}
