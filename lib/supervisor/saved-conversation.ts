// Whether a CLI saved the conversation a reply would resume: what it wrote, not what it printed
// (docs/runners.md#claude). Claude Code prints its `init` line before it saves anything, and one
// that cannot write its config folder (a read-only $HOME) prints it and saves nothing.
import { existsSync, readdirSync } from "node:fs";
import { isAbsolute, join } from "node:path";

/**
 * Claude Code keeps a conversation as `<config dir>/projects/<the cwd, spelled as a name>/<id>.jsonl`;
 * the config dir is $CLAUDE_CONFIG_DIR, else ~/.claude. True when such a file exists under any
 * project folder, false when none does, null when there is no config dir to look in.
 */
export function claudeConversationSaved(env: Record<string, string | undefined>, id: string): boolean | null {
  const configDir = env.CLAUDE_CONFIG_DIR || (env.HOME && isAbsolute(env.HOME) ? join(env.HOME, ".claude") : "");
  if (!configDir || !/^[A-Za-z0-9-]+$/.test(id)) return null;
  const projects = join(configDir, "projects");
  let folders: string[];
  try {
    folders = readdirSync(projects);
  } catch {
    return false;
  }
  return folders.some((f) => existsSync(join(projects, f, `${id}.jsonl`)));
}
