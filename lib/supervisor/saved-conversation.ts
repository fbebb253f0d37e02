// Whether a CLI saved the conversation a reply would resume: what it wrote, not what it printed
// (docs/runners.md#claude). Claude Code prints its `init` line before it saves anything, and one
// that cannot write its config folder prints it and saves nothing. What a session saved is in its
// session folder (lib/supervisor/config-home.ts: kept there when it ended, or its config home as left).
import { basename } from "node:path";
import { jsonlFiles, storeOf } from "./config-home.ts";

/**
 * Did the session in `dir` save conversation `id`? Claude Code keeps one as
 * `projects/<the cwd, spelled as a name>/<id>.jsonl`, Codex as `sessions/<y>/<m>/<d>/rollout-<time>-<id>.jsonl`.
 * null for a runner that saves none there.
 */
export function conversationSaved(runner: string, dir: string, id: string): boolean | null {
  if (!/^[A-Za-z0-9-]+$/.test(id)) return runner === "claude" || runner === "codex" ? false : null;
  const store = storeOf(dir);
  if (runner === "claude") return jsonlFiles(store, "projects", 2).some((f) => basename(f) === `${id}.jsonl`);
  if (runner === "codex") return jsonlFiles(store, "sessions", 4).some((f) => basename(f).startsWith("rollout-") && basename(f).endsWith(`-${id}.jsonl`));
  return null;
}
