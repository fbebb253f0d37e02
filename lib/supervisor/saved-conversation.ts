// Whether a CLI saved the conversation a reply would resume: what it wrote, not what it printed
// (docs/runners.md#claude). Claude Code prints its `init` line before it saves anything, and one
// that cannot write its config folder prints it and saves nothing. What a session saved is in its
// session folder (lib/supervisor/config-home.ts: kept there when it ended, or its config home as left).
import { lstatSync } from "node:fs";
import { basename, join } from "node:path";
import { CONVERSATIONS, jsonlFiles, OPENCODE_DATABASE, storeOf } from "./config-home.ts";

/**
 * Did the session in `dir` save conversation `id`? Claude Code keeps one as
 * `projects/<the cwd, spelled as a name>/<id>.jsonl`, Codex as `sessions/<y>/<m>/<d>/rollout-<time>-<id>.jsonl`,
 * Gemini CLI as `.gemini/tmp/<project>/chats/session-<time>-<the id's first 8 characters>.jsonl`,
 * opencode in its database (`data/opencode/opencode.db`: there, as a regular file; its rows are not read).
 * null for a runner that saves none there.
 */
export function conversationSaved(runner: string, dir: string, id: string): boolean | null {
  if (runner === "opencode") return /^ses_[A-Za-z0-9]+$/.test(id) && regularFile(join(storeOf(dir), OPENCODE_DATABASE[0]!));
  if (runner !== "claude" && runner !== "codex" && runner !== "gemini") return null;
  if (!/^[A-Za-z0-9-]+$/.test(id)) return false;
  const { under, depth } = CONVERSATIONS[runner];
  const files = jsonlFiles(storeOf(dir), under, depth).map((f) => basename(f));
  if (runner === "claude") return files.includes(`${id}.jsonl`);
  if (runner === "codex") return files.some((f) => f.startsWith("rollout-") && f.endsWith(`-${id}.jsonl`));
  return id.length >= 8 && files.some((f) => f.startsWith("session-") && f.endsWith(`-${id.slice(0, 8)}.jsonl`));
}

function regularFile(path: string): boolean {
  try {
    const st = lstatSync(path);
    return st.isFile() && st.size > 0;
  } catch {
    return false;
  }
}
