// A preset CLI's private config home (docs/runners.md#the-config-home): claude's CLAUDE_CONFIG_DIR,
// codex's CODEX_HOME, a folder of the session's own (CONFIG_HOME in its session folder) prepared
// before the launch with the operator's credentials file copied in, read-only, and, for a resume, the
// conversation the previous session saved; nothing else of the operator's (settings.json and its
// hooks, CLAUDE.md, commands, config.toml and its `notify`). When the session ends its wrapper keeps
// the conversation the CLI saved (CONVERSATION_STORE beside it) and removes the home: nothing the
// agent wrote there is ever read again by a CLI but a resumed conversation's transcript (opencode's:
// its whole database, which holds its conversations).
import { lstatSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { readRegularFile } from "../shared/fsutil.ts";

/** The session's config home, in its session folder. */
export const CONFIG_HOME = "cli-home";
/** The conversation files a session's CLI saved, kept when it ended (what the next attempt resumes). */
export const CONVERSATION_STORE = "conversation";

interface Layout {
  /** The variables that name the config home (codex keeps its databases where CODEX_SQLITE_HOME says). */
  variables: readonly string[];
  /** The operator's config home, where the credentials are copied from. */
  operator: (env: Record<string, string | undefined>) => string | null;
  /** Files of it copied in (a signed-in CLI's credentials). */
  credentials: readonly string[];
  /** Files loop writes in it, by their path in it: the settings an unattended run needs (gemini's). */
  settings?: Readonly<Record<string, unknown>>;
  /** More variables for the agent, given the home's path (opencode's folders and config). */
  extra?: (at: string) => Record<string, string>;
}

/** opencode's config for a session (docs/runners.md#opencode). */
const OPENCODE_CONFIG = {
  autoupdate: false,
  share: "disabled",
  permission: "allow",
  provider: {
    anthropic: { options: { baseURL: "{env:ANTHROPIC_BASE_URL}/v1", apiKey: "{env:ANTHROPIC_API_KEY}" } },
    openai: { options: { baseURL: "{env:OPENAI_BASE_URL}", apiKey: "{env:OPENAI_API_KEY}" } },
  },
};

const home = (env: Record<string, string | undefined>, sub: string) => (env.HOME && isAbsolute(env.HOME) ? join(env.HOME, sub) : null);

/** The presets with a config home of their own; aider has no variable for one (docs/runners.md#the-config-home). */
const LAYOUTS: Readonly<Record<string, Layout>> = {
  // Claude Code 2.1.197 and 2.1.332 keep everything under $CLAUDE_CONFIG_DIR when it is set, its
  // .claude.json included; print mode starts in an empty one. A signed-in CLI's token: .credentials.json.
  claude: { variables: ["CLAUDE_CONFIG_DIR"], operator: (env) => env.CLAUDE_CONFIG_DIR || home(env, ".claude"), credentials: [".credentials.json"] },
  // Codex 0.171: $CODEX_HOME (config.toml, auth.json, sessions/, its databases); a ChatGPT sign-in or an API key saved by `codex login`: auth.json.
  codex: { variables: ["CODEX_HOME", "CODEX_SQLITE_HOME"], operator: (env) => env.CODEX_HOME || home(env, ".codex"), credentials: ["auth.json"] },
  // Gemini CLI 0.61: $GEMINI_CLI_HOME stands for the home, its files under .gemini/ (settings.json,
  // projects.json, tmp/<project>/chats/). Behind the gateway it uses an API key (the stand-in), so no
  // sign-in is copied; its settings say so (else it exits 41), and turn off its usage statistics
  // (play.googleapis.com) and update check.
  gemini: {
    variables: ["GEMINI_CLI_HOME"],
    operator: () => null,
    credentials: [],
    settings: {
      ".gemini/settings.json": {
        security: { auth: { selectedType: "gemini-api-key" } },
        privacy: { usageStatisticsEnabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
      },
    },
  },
  // opencode 1.18: its folders are XDG's (data: its database of conversations; config, cache,
  // state), each made a folder of the home; its config is OPENCODE_CONFIG_CONTENT (a project's own
  // opencode.json still merges in, as the repository's own settings). Anthropic's and OpenAI's
  // providers at the gateway's base URLs with the stand-in keys ({env:…}: read by opencode when it
  // starts, after the wrapper set them); every permission allowed (nobody can answer); no sharing,
  // no update, no fetch of models.opencode.ai, no default plugins.
  opencode: {
    variables: [],
    operator: () => null,
    credentials: [],
    extra: (at) => ({
      XDG_DATA_HOME: join(at, "data"),
      XDG_CONFIG_HOME: join(at, "config"),
      XDG_CACHE_HOME: join(at, "cache"),
      XDG_STATE_HOME: join(at, "state"),
      OPENCODE_CONFIG_CONTENT: JSON.stringify(OPENCODE_CONFIG),
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    }),
  },
};

/**
 * The conversation files a CLI saves, by the folder they are under and their depth below it: claude's
 * `projects/<cwd>/<id>.jsonl`, codex's `sessions/<y>/<m>/<d>/rollout-…-<id>.jsonl`, gemini's
 * `.gemini/tmp/<project>/chats/session-<time>-<id's first 8>.jsonl`.
 */
export const CONVERSATIONS: Readonly<Record<"claude" | "codex" | "gemini", { under: string; depth: number }>> = {
  claude: { under: "projects", depth: 2 },
  codex: { under: "sessions", depth: 4 },
  gemini: { under: ".gemini/tmp", depth: 3 },
};

/**
 * opencode keeps its conversations in a SQLite database under its data folder (XDG_DATA_HOME, the
 * home's `data/`): the file and its write-ahead log, kept whole (the session has ended, nothing holds
 * them open) and put back for a resume.
 */
export const OPENCODE_DATABASE: readonly string[] = ["data/opencode/opencode.db", "data/opencode/opencode.db-wal"];

/** At most this much of one credentials or conversation file is copied. */
const MAX_FILE = 256 * 2 ** 20;

/**
 * Make the session's config home for `runner` in `dir` (null: the runner has none): the operator's
 * credentials copied in (mode 0400; read-only in the sandbox), and the conversation `resumeFrom` (the
 * previous session's folder) kept. The variables for the agent, the home, and the files to hold read-only.
 */
export function prepareConfigHome(o: {
  runner: string;
  dir: string;
  env: Record<string, string | undefined>;
  resumeFrom?: string | null;
}): { env: Record<string, string>; home: string; readOnly: string[] } | null {
  const layout = Object.hasOwn(LAYOUTS, o.runner) ? LAYOUTS[o.runner]! : null;
  if (!layout) return null;
  const at = join(o.dir, CONFIG_HOME);
  rmSync(at, { recursive: true, force: true });
  mkdirSync(at, { mode: 0o700 });
  const readOnly: string[] = [];
  const from = layout.operator(o.env);
  for (const name of from ? layout.credentials : []) {
    // The operator's own file, links followed: it is theirs, and the agent could read it anyway.
    const r = readRegularFile(join(from!, name), { maxBytes: MAX_FILE });
    if (r.kind !== "ok") continue;
    writeFileSync(join(at, name), r.bytes, { mode: 0o400 });
    readOnly.push(join(at, name));
  }
  for (const [rel, doc] of Object.entries(layout.settings ?? {})) {
    mkdirSync(dirname(join(at, rel)), { recursive: true, mode: 0o700 });
    writeFileSync(join(at, rel), JSON.stringify(doc, null, 2) + "\n", { mode: 0o600 });
  }
  if (o.resumeFrom) copyConversations(storeOf(o.resumeFrom), at);
  return { env: { ...Object.fromEntries(layout.variables.map((v) => [v, at])), ...layout.extra?.(at) }, home: at, readOnly };
}

/**
 * When a session ends (its wrapper): what its CLI saved of its conversation is copied to the session
 * folder's store, and its config home removed (the credentials' copy with it). Nothing when it has none.
 */
export function keepConversation(dir: string): void {
  const at = join(dir, CONFIG_HOME);
  try {
    if (!lstatSync(at).isDirectory()) {
      rmSync(at, { force: true });
      return;
    }
  } catch {
    return; // none
  }
  try {
    copyConversations(at, join(dir, CONVERSATION_STORE));
  } finally {
    // Never following a link the agent left in it.
    rmSync(at, { recursive: true, force: true });
  }
}

/** Where a session's saved conversation is: its store, or (a wrapper that was killed before it kept it) its config home as left. */
export function storeOf(dir: string): string {
  const store = join(dir, CONVERSATION_STORE);
  try {
    if (lstatSync(store).isDirectory()) return store;
  } catch {
    // not kept: the home as the CLI left it
  }
  return join(dir, CONFIG_HOME);
}

/** Copy the conversation files under `from` into `to` (opencode's database too), the same paths: regular files only, never through a link. */
function copyConversations(from: string, to: string): void {
  const files = [
    ...Object.values(CONVERSATIONS).flatMap((c) => jsonlFiles(from, c.under, c.depth)),
    ...OPENCODE_DATABASE.filter((f) => throughFolders(from, f)),
  ];
  for (const rel of files) {
    const r = readRegularFile(join(from, rel), { maxBytes: MAX_FILE, noLinks: true });
    if (r.kind !== "ok") continue;
    const dest = join(to, rel);
    mkdirSync(join(dest, ".."), { recursive: true, mode: 0o700 });
    writeFileSync(dest, r.bytes, { mode: 0o600 });
  }
}

/** Whether every folder on the way from `root` to `rel` is a real one (never a link the agent left). */
function throughFolders(root: string, rel: string): boolean {
  const parts = rel.split("/").slice(0, -1);
  for (let i = 1; i <= parts.length; i++) {
    try {
      if (!lstatSync(join(root, ...parts.slice(0, i))).isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** The `*.jsonl` files exactly `depth` folders below `root/under` (paths relative to root), through real folders only. */
export function jsonlFiles(root: string, under: string, depth: number): string[] {
  const out: string[] = [];
  const walk = (rel: string, left: number) => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(join(root, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const name = join(rel, e.name);
      if (left > 1 && e.isDirectory()) walk(name, left - 1);
      else if (left === 1 && e.isFile() && e.name.endsWith(".jsonl")) out.push(name);
    }
  };
  walk(under, depth);
  return out;
}
