// A preset CLI's private config home (lib/supervisor/config-home.ts) and what a session saved of its
// conversation (saved-conversation.ts), on real folders: the operator's credentials copied in
// read-only and nothing else of theirs; a resumed conversation seeded from the previous session; at
// the end only the conversation files kept (never through a link, never at another depth), the home gone.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { CONFIG_HOME, CONVERSATION_STORE, keepConversation, prepareConfigHome } from "../../lib/supervisor/config-home.ts";
import { conversationSaved } from "../../lib/supervisor/saved-conversation.ts";
import { TempDirs } from "../helpers/fs.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

function write(path: string, text: string): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
}

function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) e.isDirectory() ? walk(join(d, e.name)) : out.push(relative(dir, join(d, e.name)));
  };
  if (existsSync(dir)) walk(dir);
  return out.sort();
}

/** An operator's home with a signed-in claude and codex, and what an agent would like to find there. */
function operatorHome(): string {
  const home = temp.make();
  write(join(home, ".claude", ".credentials.json"), '{"claudeAiOauth":{"accessToken":"t"}}');
  write(join(home, ".claude", "settings.json"), '{"hooks":{"SessionStart":[]}}');
  write(join(home, ".claude", "CLAUDE.md"), "memory");
  write(join(home, ".claude", "commands", "x.md"), "a command");
  write(join(home, ".claude.json"), '{"mcpServers":{}}');
  write(join(home, ".codex", "auth.json"), '{"OPENAI_API_KEY":null}');
  write(join(home, ".codex", "config.toml"), 'notify = ["x"]');
  return home;
}

describe("prepareConfigHome", () => {
  test("claude: CLAUDE_CONFIG_DIR names a folder of the session's own holding the operator's credentials, read-only, and nothing else of theirs", () => {
    const home = operatorHome();
    const dir = temp.make();
    const h = prepareConfigHome({ runner: "claude", dir, env: { HOME: home } })!;
    expect(h.env).toEqual({ CLAUDE_CONFIG_DIR: join(dir, CONFIG_HOME) });
    expect(tree(h.home)).toEqual([".credentials.json"]);
    expect(h.readOnly).toEqual([join(h.home, ".credentials.json")]);
    expect(statSync(h.readOnly[0]!).mode & 0o777).toBe(0o400);
    expect(statSync(h.home).mode & 0o777).toBe(0o700);
    expect(readFileSync(h.readOnly[0]!, "utf8")).toBe('{"claudeAiOauth":{"accessToken":"t"}}');
  });

  test("codex: CODEX_HOME (and its databases' home) hold auth.json only; the operator's CODEX_HOME is where it comes from when set", () => {
    const home = operatorHome();
    const own = join(home, "elsewhere");
    write(join(own, "auth.json"), "{}");
    const dir = temp.make();
    const h = prepareConfigHome({ runner: "codex", dir, env: { HOME: home, CODEX_HOME: own } })!;
    expect(h.env).toEqual({ CODEX_HOME: h.home, CODEX_SQLITE_HOME: h.home });
    expect(tree(h.home)).toEqual(["auth.json"]);
    expect(readFileSync(join(h.home, "auth.json"), "utf8")).toBe("{}");
  });

  test("gemini: GEMINI_CLI_HOME names a home holding only the settings loop writes (an API key's auth, no usage statistics, no update check), nothing of the operator's ~/.gemini", () => {
    const home = operatorHome();
    write(join(home, ".gemini", "settings.json"), '{"hooks":{"SessionStart":[]}}');
    write(join(home, ".gemini", "oauth_creds.json"), "{}");
    const dir = temp.make();
    const h = prepareConfigHome({ runner: "gemini", dir, env: { HOME: home } })!;
    expect(h.env).toEqual({ GEMINI_CLI_HOME: h.home });
    expect(tree(h.home)).toEqual([".gemini/settings.json"]);
    expect(h.readOnly).toEqual([]);
    expect(JSON.parse(readFileSync(join(h.home, ".gemini", "settings.json"), "utf8"))).toEqual({
      security: { auth: { selectedType: "gemini-api-key" } },
      privacy: { usageStatisticsEnabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
    });
  });

  test("opencode: its XDG folders in the home, its config (providers at the gateway's URLs, the stand-in keys, every permission allowed) and its outside traffic off, by variables", () => {
    const dir = temp.make();
    const h = prepareConfigHome({ runner: "opencode", dir, env: { HOME: operatorHome() } })!;
    expect(tree(h.home)).toEqual([]);
    const { OPENCODE_CONFIG_CONTENT: config, ...rest } = h.env;
    expect(rest).toEqual({
      XDG_DATA_HOME: join(h.home, "data"),
      XDG_CONFIG_HOME: join(h.home, "config"),
      XDG_CACHE_HOME: join(h.home, "cache"),
      XDG_STATE_HOME: join(h.home, "state"),
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    });
    expect(JSON.parse(config!)).toMatchObject({
      permission: "allow",
      share: "disabled",
      autoupdate: false,
      provider: { anthropic: { options: { baseURL: "{env:ANTHROPIC_BASE_URL}/v1", apiKey: "{env:ANTHROPIC_API_KEY}" } } },
    });
  });

  test("an operator with no credentials (an API key, held by the gateway): an empty home; aider, the demo and command runners: none", () => {
    const dir = temp.make();
    expect(tree(prepareConfigHome({ runner: "claude", dir, env: { HOME: temp.make() } })!.home)).toEqual([]);
    for (const runner of ["aider", "demo", "mine"]) expect(prepareConfigHome({ runner, dir: temp.make(), env: { HOME: operatorHome() } })).toBeNull();
  });

  test("a resume is seeded with the previous session's kept conversation, nothing else it had", () => {
    const previous = temp.make();
    write(join(previous, CONVERSATION_STORE, "projects", "-w-a", "id-1.jsonl"), "turns");
    const dir = temp.make();
    const h = prepareConfigHome({ runner: "claude", dir, env: {}, resumeFrom: previous })!;
    expect(tree(h.home)).toEqual(["projects/-w-a/id-1.jsonl"]);
  });
});

describe("keepConversation (the wrapper, when the session ends)", () => {
  test("keeps the conversation files the CLIs save, at their depth, never through a link; removes the home, credentials and plants with it", () => {
    const dir = temp.make();
    const at = join(dir, CONFIG_HOME);
    write(join(at, ".credentials.json"), "secret");
    write(join(at, "settings.json"), "hooks");
    write(join(at, "CLAUDE.md"), "memory");
    write(join(at, "projects", "-w-a", "id-1.jsonl"), "claude turns");
    write(join(at, "projects", "-w-a", "memory", "deep.jsonl"), "not a conversation");
    write(join(at, "sessions", "2026", "12", "06", "rollout-x-id-2.jsonl"), "codex turns");
    write(join(at, "sessions", "loose.jsonl"), "not at its depth");
    write(join(at, ".gemini", "tmp", "a", "chats", "session-2026-12-07T12-46-0b7a2a64.jsonl"), "gemini turns");
    write(join(at, ".gemini", "settings.json"), "{}");
    // A link the agent left, to a file it wants loop to copy where the next session reads it.
    symlinkSync(join(at, ".credentials.json"), join(at, "projects", "-w-a", "id-3.jsonl"));
    // And a folder of links to the operator's own: neither walked into nor removed through.
    const operators = temp.make();
    write(join(operators, "keep.jsonl"), "the operator's");
    symlinkSync(operators, join(at, "projects", "-w-b"));
    symlinkSync(operators, join(at, "gone"));
    keepConversation(dir);
    expect(existsSync(at)).toBe(false);
    expect(tree(join(dir, CONVERSATION_STORE))).toEqual([
      ".gemini/tmp/a/chats/session-2026-12-07T12-46-0b7a2a64.jsonl",
      "projects/-w-a/id-1.jsonl",
      "sessions/2026/12/06/rollout-x-id-2.jsonl",
    ]);
    expect(tree(operators)).toEqual(["keep.jsonl"]);
    expect(conversationSaved("claude", dir, "id-1")).toBe(true);
    expect(conversationSaved("claude", dir, "id-3")).toBe(false);
    expect(conversationSaved("codex", dir, "id-2")).toBe(true);
    expect(conversationSaved("codex", dir, "id-9")).toBe(false);
    expect(conversationSaved("aider", dir, "id-1")).toBeNull();
    // Gemini names its file by the id's first 8 characters.
    expect(conversationSaved("gemini", dir, "0b7a2a64-6f36-4c5e-9a53-3e2a1f0c9d11")).toBe(true);
    expect(conversationSaved("gemini", dir, "0b7a2a65-6f36-4c5e-9a53-3e2a1f0c9d11")).toBe(false);
    expect(conversationSaved("gemini", dir, "0b7a")).toBe(false);
  });

  test("opencode: its database and write-ahead log are kept whole (nothing else of its data folder), never through a linked folder; a resume gets them back", () => {
    const dir = temp.make();
    const at = join(dir, CONFIG_HOME);
    write(join(at, "data", "opencode", "opencode.db"), "sqlite");
    write(join(at, "data", "opencode", "opencode.db-wal"), "wal");
    write(join(at, "data", "opencode", "log", "opencode.log"), "log");
    write(join(at, "config", "opencode", "package.json"), "{}");
    keepConversation(dir);
    expect(tree(join(dir, CONVERSATION_STORE))).toEqual(["data/opencode/opencode.db", "data/opencode/opencode.db-wal"]);
    expect(conversationSaved("opencode", dir, "ses_daed412d7ffeM5zXkt7dbE9twK")).toBe(true);
    expect(conversationSaved("opencode", dir, "../ses_x")).toBe(false);
    expect(conversationSaved("opencode", temp.make(), "ses_daed412d7ffeM5zXkt7dbE9twK")).toBe(false);
    const h = prepareConfigHome({ runner: "opencode", dir: temp.make(), env: {}, resumeFrom: dir })!;
    expect(tree(h.home)).toEqual(["data/opencode/opencode.db", "data/opencode/opencode.db-wal"]);
    // A data folder the agent replaced by a link to someone else's: not followed.
    const linked = temp.make();
    const operators = temp.make();
    write(join(operators, "opencode", "opencode.db"), "the operator's");
    mkdirSync(join(linked, CONFIG_HOME), { recursive: true });
    symlinkSync(operators, join(linked, CONFIG_HOME, "data"));
    keepConversation(linked);
    expect(tree(join(linked, CONVERSATION_STORE))).toEqual([]);
    expect(conversationSaved("opencode", linked, "ses_daed412d7ffeM5zXkt7dbE9twK")).toBe(false);
  });

  test("a home replaced by a link is removed, never followed; a session without one is left as it is", () => {
    const dir = temp.make();
    const elsewhere = temp.make();
    write(join(elsewhere, "projects", "-w", "id.jsonl"), "not loop's");
    symlinkSync(elsewhere, join(dir, CONFIG_HOME));
    keepConversation(dir);
    expect(existsSync(join(dir, CONFIG_HOME))).toBe(false);
    expect(existsSync(join(dir, CONVERSATION_STORE))).toBe(false);
    expect(tree(elsewhere)).toEqual(["projects/-w/id.jsonl"]);
    keepConversation(temp.make());
  });

  test("what a wrapper killed before it kept anything left is still found in the home (conversationSaved, a resume's seed)", () => {
    const dir = temp.make();
    write(join(dir, CONFIG_HOME, "projects", "-w-a", "id-1.jsonl"), "turns");
    expect(conversationSaved("claude", dir, "id-1")).toBe(true);
    const h = prepareConfigHome({ runner: "claude", dir: temp.make(), env: {}, resumeFrom: dir })!;
    expect(tree(h.home)).toEqual(["projects/-w-a/id-1.jsonl"]);
  });
});
