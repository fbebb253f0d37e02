import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseDemoDirectives, runDemoAgent } from "../../lib/supervisor/demo-agent.ts";
import { readOutputHead } from "../../lib/supervisor/sessions.ts";
import { SESSION_FILES } from "../../lib/supervisor/session-wrapper.ts";
import {
  buildRunnerCommand,
  conversationIdFromLog,
  expandPlaceholders,
  MAX_INLINE_PROMPT_BYTES,
  PRESETS,
  resumePrompt,
  type LaunchContext,
  provenConversation,
} from "../../lib/definition/runners.ts";
import { git, makeRepo } from "../helpers/repo.ts";

const SID = "3f2b8c1e-7d4a-4e2b-9c1d-5a6b7c8d9e0f";
const HANDOFF = "/srv/app/.loop/sessions/fix-login/1/handoff.md";
const CTX: LaunchContext = {
  item: "fix-login",
  attempt: 1,
  prompt: "# Fix the login redirect loop\n\nDetails.",
  handoffPath: HANDOFF,
  workdir: "/srv/app/.loop/workspaces/fix-login",
  model: null,
  sessionId: SID,
};
const withModel = { ...CTX, model: "sonnet" };
const REPLY_FILE = "/srv/app/.loop/sessions/fix-login/2/reply.md";
const resumed = { ...CTX, attempt: 2, resume: { conversationId: "conv-1", replyFile: REPLY_FILE } };

const AIDER_QUIET = [
  "--yes-always",
  "--no-suggest-shell-commands",
  "--no-check-update",
  "--no-show-release-notes",
  "--no-analytics",
  "--no-gitignore",
  "--no-show-model-warnings",
  "--no-detect-urls",
  "--no-fancy-input",
  "--no-pretty",
  "--no-stream",
];
const CLAUDE_COMMON = ["claude", "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--dangerously-skip-permissions"];
const GEMINI_COMMON = ["--yolo", "--skip-trust", "--output-format", "stream-json"];
const CODEX_COMMON = [
  "codex",
  "exec",
  "--json",
  "--dangerously-bypass-approvals-and-sandbox",
  "--skip-git-repo-check",
  "--disable",
  "unbounded_connection_retries",
];

describe("presets", () => {
  const cases: Array<{ name: string; runner: keyof typeof PRESETS; ctx: LaunchContext; argv: string[]; conversationId: string | null }> = [
    {
      name: "claude",
      runner: "claude",
      ctx: CTX,
      argv: [...CLAUDE_COMMON, "--session-id", SID, "--", CTX.prompt],
      conversationId: SID,
    },
    {
      name: "claude with model",
      runner: "claude",
      ctx: withModel,
      argv: [...CLAUDE_COMMON, "--session-id", SID, "--model", "sonnet", "--", CTX.prompt],
      conversationId: SID,
    },
    {
      name: "claude resume",
      runner: "claude",
      ctx: resumed,
      argv: [...CLAUDE_COMMON, "--resume", "conv-1", "--", resumePrompt(REPLY_FILE)],
      conversationId: "conv-1",
    },
    {
      name: "claude resume with model",
      runner: "claude",
      ctx: { ...resumed, model: "opus" },
      argv: [...CLAUDE_COMMON, "--resume", "conv-1", "--model", "opus", "--", resumePrompt(REPLY_FILE)],
      conversationId: "conv-1",
    },
    { name: "codex", runner: "codex", ctx: CTX, argv: [...CODEX_COMMON, "--", CTX.prompt], conversationId: null },
    {
      name: "codex with model",
      runner: "codex",
      ctx: { ...CTX, model: "o4" },
      argv: [...CODEX_COMMON, "--model", "o4", "--", CTX.prompt],
      conversationId: null,
    },
    {
      name: "codex resume by id",
      runner: "codex",
      ctx: resumed,
      argv: [...CODEX_COMMON, "resume", "conv-1", "--", resumePrompt(REPLY_FILE)],
      conversationId: "conv-1",
    },
    {
      name: "codex resume without id uses --last",
      runner: "codex",
      ctx: { ...resumed, model: "o4", resume: { conversationId: "", replyFile: REPLY_FILE } },
      argv: [...CODEX_COMMON, "--model", "o4", "resume", "--last", "--", resumePrompt(REPLY_FILE)],
      conversationId: null,
    },
    {
      name: "aider",
      runner: "aider",
      ctx: CTX,
      argv: [
        "aider",
        "--message-file",
        HANDOFF,
        ...AIDER_QUIET,
        "--chat-history-file",
        "/srv/app/.loop/sessions/fix-login/1/aider.chat.history.md",
        "--input-history-file",
        "/srv/app/.loop/sessions/fix-login/1/aider.input.history",
      ],
      conversationId: "/srv/app/.loop/sessions/fix-login/1/aider.chat.history.md",
    },
    {
      name: "aider with model",
      runner: "aider",
      ctx: { ...CTX, model: "gpt-4o" },
      argv: [
        "aider",
        "--message-file",
        HANDOFF,
        ...AIDER_QUIET,
        "--chat-history-file",
        "/srv/app/.loop/sessions/fix-login/1/aider.chat.history.md",
        "--input-history-file",
        "/srv/app/.loop/sessions/fix-login/1/aider.input.history",
        "--model",
        "gpt-4o",
      ],
      conversationId: "/srv/app/.loop/sessions/fix-login/1/aider.chat.history.md",
    },
    {
      name: "aider resume",
      runner: "aider",
      ctx: {
        ...CTX,
        attempt: 2,
        handoffPath: "/srv/app/.loop/sessions/fix-login/2/handoff.md",
        resume: { conversationId: "/srv/app/.loop/sessions/fix-login/1/aider.chat.history.md", replyFile: REPLY_FILE },
      },
      argv: [
        "aider",
        "--message-file",
        REPLY_FILE,
        ...AIDER_QUIET,
        "--chat-history-file",
        "/srv/app/.loop/sessions/fix-login/1/aider.chat.history.md",
        "--input-history-file",
        "/srv/app/.loop/sessions/fix-login/2/aider.input.history",
        "--restore-chat-history",
      ],
      conversationId: "/srv/app/.loop/sessions/fix-login/1/aider.chat.history.md",
    },
    {
      name: "gemini",
      runner: "gemini",
      ctx: CTX,
      argv: ["gemini", "--session-id", SID, ...GEMINI_COMMON, `--prompt=${CTX.prompt}`],
      conversationId: SID,
    },
    {
      name: "gemini with model",
      runner: "gemini",
      ctx: withModel,
      argv: ["gemini", "--session-id", SID, ...GEMINI_COMMON, "--model", "sonnet", `--prompt=${CTX.prompt}`],
      conversationId: SID,
    },
    {
      name: "gemini resume: the conversation's id, loop's pointer to the reply's file, never the reply",
      runner: "gemini",
      ctx: resumed,
      argv: ["gemini", "--resume", "conv-1", ...GEMINI_COMMON, `--prompt=${resumePrompt(REPLY_FILE)}`],
      conversationId: "conv-1",
    },
    {
      name: "opencode",
      runner: "opencode",
      ctx: CTX,
      argv: ["opencode", "run", "--format", "json", "--pure", "--", CTX.prompt],
      conversationId: null,
    },
    {
      name: "opencode with model",
      runner: "opencode",
      ctx: { ...CTX, model: "anthropic/claude-sonnet-4-5" },
      argv: ["opencode", "run", "--format", "json", "--pure", "--model", "anthropic/claude-sonnet-4-5", "--", CTX.prompt],
      conversationId: null,
    },
    {
      name: "opencode resume: --session with the conversation's id, loop's pointer to the reply's file, never the reply",
      runner: "opencode",
      ctx: resumed,
      argv: ["opencode", "run", "--format", "json", "--pure", "--session", "conv-1", "--", resumePrompt(REPLY_FILE)],
      conversationId: "conv-1",
    },
  ];

  for (const c of cases) {
    test(c.name, () => {
      const cmd = PRESETS[c.runner].build(c.ctx);
      expect(cmd.argv).toEqual(c.argv);
      expect(cmd.conversationId).toBe(c.conversationId);
      expect(cmd.supportsResume).toBe(true);
      // buildRunnerCommand dispatches to the same preset, whatever the command runners say.
      expect(buildRunnerCommand(c.runner, c.ctx, { other: { command: ["x"] } }, ["demo"])).toEqual(cmd);
    });
  }

  test("no preset passes an empty or undefined argument, with or without a model", () => {
    for (const name of Object.keys(PRESETS) as Array<keyof typeof PRESETS>) {
      for (const ctx of [CTX, withModel, resumed]) {
        const { argv } = PRESETS[name].build(ctx);
        for (const a of argv) expect(typeof a === "string" && a.length > 0).toBe(true);
        expect(argv.includes("--model")).toBe(ctx.model !== null);
      }
    }
  });

  test("a prompt starting with a dash stays one positional argument after --", () => {
    const ctx = { ...CTX, prompt: "--help me" };
    for (const name of ["claude", "codex", "opencode"] as const) {
      const { argv } = PRESETS[name].build(ctx);
      expect(argv.slice(-2)).toEqual(["--", "--help me"]);
    }
    // gemini's is the value of --prompt=, one element: never read as a flag.
    expect(PRESETS.gemini.build(ctx).argv.at(-1)).toBe("--prompt=--help me");
  });

  test("an oversized handoff is not inlined: the agent is pointed at handoff.md", () => {
    const ctx = { ...CTX, prompt: "x".repeat(MAX_INLINE_PROMPT_BYTES + 1) };
    for (const name of ["claude", "codex", "gemini", "opencode"] as const) {
      const last = PRESETS[name].build(ctx).argv.at(-1) ?? "";
      expect(last.length).toBeLessThan(1000);
      expect(last).toContain(HANDOFF);
    }
    // Exactly at the limit it is still inlined (bytes, not characters: "é" is 2 bytes).
    const atLimit = { ...CTX, prompt: "é".repeat(MAX_INLINE_PROMPT_BYTES / 2) };
    expect(PRESETS.claude.build(atLimit).argv.at(-1)).toBe(atLimit.prompt);
    const overByBytes = { ...CTX, prompt: "é".repeat(MAX_INLINE_PROMPT_BYTES / 2 + 1) };
    expect(PRESETS.claude.build(overByBytes).argv.at(-1)).toContain(HANDOFF);
  });

  test("every preset describes itself", () => {
    for (const p of Object.values(PRESETS)) expect(p.describe.length).toBeGreaterThan(10);
  });
});

describe("expandPlaceholders", () => {
  const values = {
    prompt: "fix it; rm -rf / $(echo hi) 'q' \"dq\"",
    handoff: "/s/handoff.md",
    workdir: "/w d",
    model: "",
    session_id: SID,
  };
  const cases: Array<[string, string[], string[]]> = [
    ["each placeholder", ["{prompt}", "{handoff}", "{workdir}", "{model}", "{session_id}"], [values.prompt, "/s/handoff.md", "/w d", "", SID]],
    ["embedded in text", ["--prompt-file={handoff}", "cd {workdir} && go"], ["--prompt-file=/s/handoff.md", "cd /w d && go"]],
    ["repeated in one element", ["{session_id}/{session_id}"], [`${SID}/${SID}`]],
    [
      "unknown braces left as-is",
      ["{other}", "{}", "{ prompt }", "{PROMPT}", "{{model}}", "{model"],
      ["{other}", "{}", "{ prompt }", "{PROMPT}", "{}", "{model"],
    ],
    ["no placeholder", ["my-agent", "--fast"], ["my-agent", "--fast"]],
    ["empty template", [], []],
  ];
  for (const [name, template, expected] of cases) {
    test(name, () => expect(expandPlaceholders(template, values)).toEqual(expected));
  }

  test("no shell splitting: a value with spaces and metacharacters stays one element", () => {
    const out = expandPlaceholders(["agent", "{prompt}"], values);
    expect(out).toHaveLength(2);
    expect(out[1]).toBe(values.prompt);
  });

  test("values are inserted literally, never re-expanded or treated as replacement patterns", () => {
    const tricky = { ...values, prompt: "{model} $& $1 $$ {handoff}" };
    expect(expandPlaceholders(["{prompt}"], tricky)).toEqual(["{model} $& $1 $$ {handoff}"]);
  });

  test("the template is not mutated", () => {
    const template = ["{model}"];
    expandPlaceholders(template, values);
    expect(template).toEqual(["{model}"]);
  });
});

describe("buildRunnerCommand", () => {
  const runners = { mine: { command: ["my-agent", "--prompt-file", "{handoff}", "--model={model}", "{session_id}"] } };

  test("command runner: placeholders expanded, null model becomes empty", () => {
    expect(buildRunnerCommand("mine", CTX, runners, [])).toEqual({
      argv: ["my-agent", "--prompt-file", HANDOFF, "--model=", SID],
      conversationId: null,
      supportsResume: false,
    });
    expect(buildRunnerCommand("mine", withModel, runners, []).argv[3]).toBe("--model=sonnet");
  });

  test("command runner: {prompt} is the full handoff text", () => {
    const cmd = buildRunnerCommand("p", CTX, { p: { command: ["a", "{prompt}"] } }, []);
    expect(cmd.argv).toEqual(["a", CTX.prompt]);
  });

  test("demo runner: a copy of demoArgv", () => {
    const demoArgv = ["/usr/local/bin/loop", "__demo-agent"];
    const cmd = buildRunnerCommand("demo", CTX, runners, demoArgv);
    expect(cmd).toEqual({ argv: demoArgv, conversationId: null, supportsResume: false });
    expect(cmd.argv).not.toBe(demoArgv);
  });

  test("built-in names win over command runners of the same name", () => {
    const shadow = { claude: { command: ["evil"] }, demo: { command: ["evil"] } };
    expect(buildRunnerCommand("claude", CTX, shadow, ["d"]).argv[0]).toBe("claude");
    expect(buildRunnerCommand("demo", CTX, shadow, ["d"]).argv).toEqual(["d"]);
  });

  test("unknown runner throws, naming it", () => {
    expect(() => buildRunnerCommand("qwen", CTX, runners, [])).toThrow(/unknown runner "qwen"/);
    expect(() => buildRunnerCommand("toString", CTX, runners, [])).toThrow(/unknown runner "toString"/);
    expect(() => buildRunnerCommand("constructor", CTX, {}, [])).toThrow(/unknown runner "constructor"/);
  });

  test("an empty command is an error", () => {
    expect(() => buildRunnerCommand("e", CTX, { e: { command: [] } }, [])).toThrow(/runner "e"/);
  });
});

describe("conversationIdFromLog", () => {
  test("codex thread.started", () => {
    const log = 'noise\n{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}\n{"type":"turn.started"}\n';
    expect(conversationIdFromLog("codex", log)).toBe("0199a213-81c0-7800-8aa1-bbab2a035a53");
  });
  test("gemini init event", () => {
    const log = `Warning: 256-color support not detected.\n{"type":"init","timestamp":"2026-12-07T12:46:16.786Z","session_id":"${SID}","model":"auto"}\n`;
    expect(conversationIdFromLog("gemini", log)).toBe(SID);
    expect(conversationIdFromLog("claude", log)).toBeNull();
  });
  test("opencode: the sessionID its events carry, only in its own form (it goes on a command line)", () => {
    const ses = "ses_daed412d7ffeM5zXkt7dbE9twK";
    const log = `{"type":"step_start","timestamp":1796658170323,"sessionID":"${ses}","part":{"type":"step-start"}}\n`;
    expect(conversationIdFromLog("opencode", log)).toBe(ses);
    expect(conversationIdFromLog("codex", log)).toBeNull();
    expect(conversationIdFromLog("opencode", '{"type":"text","sessionID":"--help"}\n')).toBeNull();
    expect(conversationIdFromLog("opencode", '{"type":"text","sessionID":"ses_a b"}\n')).toBeNull();
  });
  test("claude init event", () => {
    const log = `{"type":"system","subtype":"init","session_id":"${SID}"}\n`;
    expect(conversationIdFromLog("claude", log)).toBe(SID);
  });
  test("found in the head of a session log of any length (the id is announced first)", () => {
    const dir = mkdtempSync(join(tmpdir(), "loop-convo-"));
    try {
      expect(readOutputHead(dir)).toBe(""); // no output yet
      const first = '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}\n';
      writeFileSync(join(dir, SESSION_FILES.output), first + '{"type":"item.completed","text":"work"}\n'.repeat(60_000)); // ~2.4 MB
      expect(conversationIdFromLog("codex", readOutputHead(dir))).toBe("0199a213-81c0-7800-8aa1-bbab2a035a53");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("nothing found", () => {
    expect(conversationIdFromLog("codex", "{not json\nplain text\n")).toBeNull();
    expect(conversationIdFromLog("aider", '{"type":"thread.started","thread_id":"x"}')).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------
// The demo agent, in a real temporary git repository.

describe("demo agent", () => {
  let root: string;
  let repo: string;
  let session: string;
  let lines: string[];
  let errors: string[];

  beforeEach(() => {
    ({ dir: root, root: repo } = makeRepo({ prefix: "loop-demo-", files: { "README.md": "hello\n" } }));
    session = join(root, "session");
    mkdirSync(session);
    lines = [];
    errors = [];
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  async function run(handoff: string, attempt = 1, extraEnv: Record<string, string | undefined> = {}): Promise<number> {
    const handoffPath = join(session, "handoff.md");
    writeFileSync(handoffPath, handoff);
    const env = {
      LOOP_ITEM: "fix-login",
      LOOP_ATTEMPT: String(attempt),
      LOOP_HANDOFF: handoffPath,
      LOOP_WORKDIR: repo,
      LOOP_ASK_FILE: join(session, "ask.md"),
      LOOP_SESSION_ID: SID,
      LOOP_MODEL: "",
      ...extraEnv,
    };
    return runDemoAgent(env, { cwd: repo, out: (l) => lines.push(l), err: (l) => errors.push(l) });
  }

  test("no directives: writes DEMO-<item>.md with the attempt and the prompt's first line", async () => {
    expect(await run("\n# Fix the login redirect loop\n\nMore text.\n", 3)).toBe(0);
    expect(readFileSync(join(repo, "DEMO-fix-login.md"), "utf8")).toBe("# Demo work for fix-login\n\nattempt: 3\nprompt: # Fix the login redirect loop\n");
    expect(lines).toEqual(["demo: item fix-login attempt 3: no directives, wrote DEMO-fix-login.md"]);
  });

  test("default output is deterministic: two runs, identical bytes", async () => {
    await run("# Task\n");
    const first = readFileSync(join(repo, "DEMO-fix-login.md"));
    await Bun.sleep(5);
    await run("# Task\n");
    expect(readFileSync(join(repo, "DEMO-fix-login.md"))).toEqual(first);
  });

  test("write, append, print and commit, in order", async () => {
    const handoff = [
      "# Task",
      "@demo write src/ok.txt hello  world",
      "@demo append src/ok.txt second\\tline",
      "  @demo print made  it",
      "@demo commit add ok.txt",
      "not a directive: @demo write nope.txt x",
    ].join("\n");
    expect(await run(handoff)).toBe(0);
    expect(readFileSync(join(repo, "src/ok.txt"), "utf8")).toBe("hello  world\nsecond\tline\n");
    expect(existsSync(join(repo, "nope.txt"))).toBe(false);
    expect(git(repo, "log", "-1", "--format=%s").trim()).toBe("add ok.txt");
    expect(git(repo, "status", "--porcelain")).toBe("");
    expect(git(repo, "show", "--name-only", "--format=", "HEAD").trim()).toBe("src/ok.txt");
    expect(lines).toEqual([
      "demo: item fix-login attempt 1: 4 of 4 directive(s) apply",
      "demo: write src/ok.txt (13 bytes)",
      "demo: append src/ok.txt (12 bytes)",
      "made  it",
      'demo: commit "add ok.txt"',
      "demo: done",
    ]);
  });

  test("attempt-specific directives apply only on their attempt", async () => {
    const handoff = ["@demo attempt 1 write ok.txt broken", "@demo attempt 2 write ok.txt fixed", "@demo append log.txt every attempt"].join("\n");
    expect(await run(handoff, 1)).toBe(0);
    expect(readFileSync(join(repo, "ok.txt"), "utf8")).toBe("broken\n");
    expect(await run(handoff, 2)).toBe(0);
    expect(readFileSync(join(repo, "ok.txt"), "utf8")).toBe("fixed\n");
    expect(readFileSync(join(repo, "log.txt"), "utf8")).toBe("every attempt\nevery attempt\n");
    lines = [];
    expect(await run(handoff, 3)).toBe(0);
    expect(lines[0]).toBe("demo: item fix-login attempt 3: 1 of 3 directive(s) apply");
    // Directives exist but none for this attempt: no DEMO file.
    expect(await run("@demo attempt 9 exit 4", 1)).toBe(0);
    expect(existsSync(join(repo, "DEMO-fix-login.md"))).toBe(false);
  });

  test("ask writes the question to LOOP_ASK_FILE and stops with 0", async () => {
    const handoff = ["@demo write before.txt a", "@demo ask Which API version?", "@demo write after.txt b"].join("\n");
    expect(await run(handoff)).toBe(0);
    expect(readFileSync(join(session, "ask.md"), "utf8")).toBe("Which API version?\n");
    expect(existsSync(join(repo, "before.txt"))).toBe(true);
    expect(existsSync(join(repo, "after.txt"))).toBe(false);
  });

  test("ask without LOOP_ASK_FILE fails", async () => {
    expect(await run("@demo ask why?", 1, { LOOP_ASK_FILE: undefined })).toBe(2);
    expect(errors.join("\n")).toContain("LOOP_ASK_FILE");
  });

  test("exit stops with the code, after the directives before it", async () => {
    const handoff = ["@demo write a.txt 1", "@demo exit 3", "@demo write b.txt 2"].join("\n");
    expect(await run(handoff)).toBe(3);
    expect(existsSync(join(repo, "a.txt"))).toBe(true);
    expect(existsSync(join(repo, "b.txt"))).toBe(false);
    expect(await run("@demo attempt 2 exit 7\n@demo exit 0", 2)).toBe(7);
  });

  test("sleep waits, in order with the directives around it", async () => {
    expect(await run("@demo print before\n@demo sleep 0.05\n@demo print awake")).toBe(0);
    const at = (l: string) => lines.indexOf(l);
    expect(at("demo: sleep 0.05s")).toBeGreaterThan(at("before"));
    expect(at("awake")).toBeGreaterThan(at("demo: sleep 0.05s"));
    expect(at("before")).toBeGreaterThanOrEqual(0);
  });

  test("unsafe paths are refused before anything is done", async () => {
    for (const bad of ["../escape.txt", "a/../../x", "/etc/passwd", ".git/config", "./.git/hooks/x", "C:/x"]) {
      errors = [];
      expect(await run(`@demo write ok.txt fine\n@demo write ${bad} pwned`)).toBe(2);
      expect(errors.join("\n")).toContain("refused");
    }
    expect(existsSync(join(repo, "ok.txt"))).toBe(false);
    expect(existsSync(join(root, "escape.txt"))).toBe(false);
  });

  test("malformed directives fail with 2 and change nothing", async () => {
    for (const bad of ["@demo frobnicate x", "@demo attempt x write a b", "@demo exit 300", "@demo sleep soon", "@demo commit"]) {
      rmSync(join(repo, "ok.txt"), { force: true });
      expect(await run(`@demo write ok.txt fine\n${bad}`), bad).toBe(2);
      expect(existsSync(join(repo, "ok.txt")), bad).toBe(false);
    }
    // A bare "@demo" with nothing after it is not a directive line; the rest runs.
    expect(await run("@demo write ok.txt fine\n@demo")).toBe(0);
    expect(existsSync(join(repo, "ok.txt"))).toBe(true);
  });

  test("commit with nothing to commit reports failure", async () => {
    expect(await run("@demo commit nothing here")).toBe(1);
    expect(errors.join("\n")).toContain("commit failed");
  });

  test("missing handoff is an error", async () => {
    const code = await runDemoAgent({ LOOP_ITEM: "x", LOOP_ATTEMPT: "1" }, { cwd: repo, out: () => {}, err: (l) => errors.push(l) });
    expect(code).toBe(2);
    expect(errors[0]).toContain("LOOP_HANDOFF");
  });

  test("parseDemoDirectives keeps line numbers and attempts", () => {
    expect(parseDemoDirectives("x\n@demo attempt 2 print hi there\n@demo exit 1")).toEqual([
      { line: 2, attempt: 2, directive: { verb: "print", text: "hi there" } },
      { line: 3, attempt: null, directive: { verb: "exit", code: 1 } },
    ]);
  });
});

describe("a conversation a reply may resume", () => {
  const init = '{"type":"system","subtype":"init","session_id":"11111111-2222-3333-4444-555555555555"}\n';
  test("claude: the id its init line announces, only when the CLI saved the conversation (its file is the proof, not the line)", () => {
    const id = "11111111-2222-3333-4444-555555555555";
    expect(provenConversation("claude", { recorded: id, logHead: init, historyExists: false, saved: () => true })).toBe(id);
    expect(provenConversation("claude", { recorded: id, logHead: init, historyExists: false, saved: () => false })).toBeNull();
    // Nowhere to look (no $HOME): the line is taken as it was.
    expect(provenConversation("claude", { recorded: id, logHead: init, historyExists: false, saved: () => null })).toBe(id);
    expect(provenConversation("claude", { recorded: id, logHead: "", historyExists: false, saved: () => true })).toBeNull();
  });
  test("gemini: likewise, the id its init line announces when its chat file was saved", () => {
    const id = "11111111-2222-3333-4444-555555555555";
    const line = `{"type":"init","session_id":"${id}","model":"auto"}\n`;
    expect(provenConversation("gemini", { recorded: id, logHead: line, historyExists: false, saved: () => true })).toBe(id);
    expect(provenConversation("gemini", { recorded: id, logHead: line, historyExists: false, saved: () => false })).toBeNull();
    expect(provenConversation("gemini", { recorded: id, logHead: "", historyExists: false, saved: () => true })).toBeNull();
  });
  test("opencode: the sessionID of its first event, when its database was kept; nothing recorded at launch is needed", () => {
    const id = "ses_daed412d7ffeM5zXkt7dbE9twK";
    const line = `{"type":"step_start","sessionID":"${id}","part":{}}\n`;
    expect(provenConversation("opencode", { recorded: null, logHead: line, historyExists: false, saved: () => true })).toBe(id);
    expect(provenConversation("opencode", { recorded: null, logHead: line, historyExists: false, saved: () => false })).toBeNull();
    expect(provenConversation("opencode", { recorded: id, logHead: "", historyExists: false, saved: () => true })).toBeNull();
  });
});
