// How loop re-invokes itself (session wrapper, demo agent): the compiled binary runs itself; from
// source, bun runs cmd/loop.ts, whichever cmd/ script the user started.
import { existsSync } from "node:fs";
import { join } from "node:path";

export function selfArgv(): string[] {
  const entry = join(import.meta.dir, "..", "..", "cmd", "loop.ts");
  if (!import.meta.dir.startsWith("/$bunfs") && existsSync(entry)) return [process.execPath, entry];
  return [process.execPath];
}
