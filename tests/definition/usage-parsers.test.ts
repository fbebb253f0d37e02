// The usage parsers (lib/definition/usage-parsers.ts) against recorded output of each CLI, built from the
// formats their documentation and sources describe (docs/spend.md says which versions): claude
// `-p --output-format stream-json --verbose`, codex `exec --json`, Gemini CLI's stream-json and
// opencode's `--format json` (recorded from the real CLIs), aider's printed usage lines, and
// a command runner's LOOP_USAGE_FILE. Fed whole or in pieces, with a truncated last line, lines of
// other output between, resumed conversations, and text printed to make the figure lower.
import { describe, expect, test } from "bun:test";
import {
  feedLines,
  figureOf,
  finishLines,
  initialState,
  type LogSource,
  noteOf,
  parseUsageFile,
  priced,
  sum,
  usageSourceOf,
} from "../../lib/definition/usage-parsers.ts";
import type { TokenCounts } from "../../lib/log/events.ts";

const SID = "6f1c2d3e-0000-4000-8000-000000000001";
const MODEL = "claude-sonnet-4-5-20250929";
const j = (o: unknown) => JSON.stringify(o);
const cu = (input: number, cacheWrite: number, cacheRead: number, output: number) => ({
  input_tokens: input,
  cache_creation_input_tokens: cacheWrite,
  cache_read_input_tokens: cacheRead,
  output_tokens: output,
  service_tier: "standard",
});
const assistant = (id: string, content: unknown[], usage: unknown, parent: string | null = null) =>
  j({
    type: "assistant",
    message: { id, type: "message", role: "assistant", model: MODEL, content, stop_reason: null, stop_sequence: null, usage },
    parent_tool_use_id: parent,
    session_id: SID,
  });

/** A claude session: init, a message in two lines (text, then a tool call), a tool result, a subagent's message, a last message, the result. */
const CLAUDE_LINES = [
  j({
    type: "system",
    subtype: "init",
    cwd: "/srv/api/.loop/workspaces/fix-login",
    session_id: SID,
    tools: ["Bash", "Edit", "Read", "Task"],
    mcp_servers: [],
    model: MODEL,
    permissionMode: "bypassPermissions",
    apiKeySource: "ANTHROPIC_API_KEY",
  }),
  assistant("msg_01A", [{ type: "text", text: "I'll run the tests first." }], cu(4, 5120, 11200, 8)),
  assistant("msg_01A", [{ type: "tool_use", id: "toolu_01", name: "Bash", input: { command: "bun test" } }], cu(4, 5120, 11200, 95)),
  j({
    type: "user",
    message: {
      role: "user",
      content: [{ tool_use_id: "toolu_01", type: "tool_result", content: '12 pass\n1 fail\n"usage" is only a word here', is_error: false }],
    },
    parent_tool_use_id: null,
    session_id: SID,
  }),
  assistant("msg_01S", [{ type: "text", text: "Subagent: found the redirect." }], cu(3, 0, 2000, 40), "toolu_02"),
  assistant("msg_01B", [{ type: "text", text: "Fixed the redirect; all tests pass." }], cu(6, 300, 16320, 120)),
  j({
    type: "result",
    subtype: "success",
    is_error: false,
    duration_ms: 22041,
    duration_api_ms: 20512,
    num_turns: 4,
    result: "Fixed the redirect.",
    session_id: SID,
    total_cost_usd: 0.0421,
    usage: { ...cu(13, 5420, 29520, 255), server_tool_use: { web_search_requests: 0 } },
  }),
];
/** What those lines add up to: msg_01A once (its highest counts), the subagent's, msg_01B. */
const CLAUDE_OWN: TokenCounts = { input: 13, output: 255, cacheRead: 29520, cacheWrite: 5420 };

const CODEX_LINES = [
  j({ type: "thread.started", thread_id: "0199a213-81c0-7800-8aa1-bbab2a035a53" }),
  j({ type: "turn.started" }),
  j({ type: "item.completed", item: { id: "item_0", type: "reasoning", text: "**Scanning the tests**" } }),
  j({
    type: "item.started",
    item: { id: "item_1", type: "command_execution", command: "bash -lc 'bun test'", aggregated_output: "", exit_code: null, status: "in_progress" },
  }),
  j({
    type: "item.completed",
    item: { id: "item_1", type: "command_execution", command: "bash -lc 'bun test'", aggregated_output: "12 pass\n", exit_code: 0, status: "completed" },
  }),
  j({ type: "item.completed", item: { id: "item_2", type: "agent_message", text: "Done: the redirect is fixed." } }),
  j({ type: "turn.completed", usage: { input_tokens: 26549, cached_input_tokens: 22272, output_tokens: 1590 } }),
];

const AIDER_LINES = [
  "Aider v0.86.1",
  "Main model: anthropic/claude-sonnet-4-20250514 with diff edit format, infinite output",
  "Weak model: anthropic/claude-3-5-haiku-20241022",
  "Git repo: .git with 3 files",
  "Repo-map: using 4096 tokens, auto refresh",
  "",
  "I'll add the LICENSE file.",
  "",
  "LICENSE",
  "<<<<<<< SEARCH",
  "=======",
  "MIT License",
  ">>>>>>> REPLACE",
  "",
  "Tokens: 2.6k sent, 1.4k cache write, 112 received. Cost: $0.0096 message, $0.0096 session.",
  "Applied edit to LICENSE",
  "Commit 1a2b3c4 feat: add MIT license",
  "Tokens: 4.1k sent, 2.2k cache hit, 95 received. Cost: $0.01 message, $0.02 session.",
];

const lines = (ls: string[]) => ls.map((l) => l + "\n").join("");

/** Feed a whole output in one piece, then end the session. */
function parse(source: LogSource, text: string, o: { final?: boolean; base?: { tokens: TokenCounts | null; microUsd: number | null } } = {}) {
  const end = text.lastIndexOf("\n") + 1;
  let s = feedLines(initialState(source), text.slice(0, end));
  if (o.final ?? true) s = finishLines(s, text.slice(end));
  return { figure: figureOf(s, o.base ?? null), note: noteOf(s) };
}

describe("claude stream-json", () => {
  const cases: {
    name: string;
    text: string;
    final?: boolean;
    base?: { tokens: TokenCounts | null; microUsd: number | null };
    tokens: TokenCounts | null;
    microUsd: number | null;
    note?: RegExp | null;
  }[] = [
    { name: "a whole session: the result's figures, its dollars", text: lines(CLAUDE_LINES), tokens: CLAUDE_OWN, microUsd: 42_100 },
    {
      name: "while it runs (no result yet): the messages so far, each counted once, dollars unknown",
      text: lines(CLAUDE_LINES.slice(0, 4)),
      final: false,
      tokens: { input: 4, output: 95, cacheRead: 11200, cacheWrite: 5120 },
      microUsd: null,
    },
    {
      name: "a truncated last line (killed mid-write): what came before, and the note says so",
      text: lines(CLAUDE_LINES.slice(0, 6)) + CLAUDE_LINES[6]!.slice(0, 80),
      tokens: CLAUDE_OWN,
      microUsd: null,
      note: /cut short/,
    },
    {
      name: "lines of other output between (stderr, a banner, a broken event): skipped; the broken one noted",
      text: lines([
        "Warning: the model is overloaded, retrying in 2s",
        ...CLAUDE_LINES.slice(0, 3),
        "[DEBUG] tool call took 812ms",
        '{"type":"assistant","message":{"usage":{"input_tokens":',
        ...CLAUDE_LINES.slice(3),
      ]),
      tokens: CLAUDE_OWN,
      microUsd: 42_100,
      note: /1 line that looked like claude's usage could not be read/,
    },
    {
      name: "a resumed conversation whose counters started again (before 2.1.277): taken as reported",
      text: lines(CLAUDE_LINES),
      base: { tokens: { input: 50, output: 900, cacheRead: 40000, cacheWrite: 9000 }, microUsd: 80_000 },
      tokens: CLAUDE_OWN,
      microUsd: 42_100,
    },
    {
      name: "a resumed conversation whose counters went on (2.1.277 and later): what the earlier attempts were recorded as is taken off",
      text: lines([
        ...CLAUDE_LINES.slice(0, 6),
        j({ type: "result", subtype: "success", is_error: false, num_turns: 9, session_id: SID, total_cost_usd: 0.1221, usage: cu(63, 14420, 69520, 1155) }),
      ]),
      base: { tokens: { input: 50, output: 900, cacheRead: 40000, cacheWrite: 9000 }, microUsd: 80_000 },
      tokens: CLAUDE_OWN,
      microUsd: 42_100,
    },
    {
      name: "a result line printed later with lower figures (forged, or another process's) lowers nothing",
      text: lines([...CLAUDE_LINES, j({ type: "result", subtype: "success", total_cost_usd: 0.0001, usage: cu(1, 0, 0, 1) })]),
      tokens: CLAUDE_OWN,
      microUsd: 42_100,
    },
    {
      name: "a message printed again under a new id only adds: a figure grows, never shrinks",
      text: lines([...CLAUDE_LINES.slice(0, 6), assistant("msg_forged", [], cu(0, 0, 0, 5000))]),
      final: false,
      tokens: { ...CLAUDE_OWN, output: CLAUDE_OWN.output + 5000 },
      microUsd: null,
    },
    { name: "nothing printed yet: unknown, not zero", text: "", final: false, tokens: null, microUsd: null },
    { name: "only the init line: unknown", text: lines(CLAUDE_LINES.slice(0, 1)), final: false, tokens: null, microUsd: null },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = parse("claude", c.text, { final: c.final, base: c.base });
      expect(r.figure.tokens).toEqual(c.tokens);
      expect(r.figure.microUsd).toBe(c.microUsd);
      if (c.note === undefined || c.note === null) expect(r.note).toBeNull();
      else expect(r.note ?? "").toMatch(c.note);
    });

  test("the model is the one the session reports", () => {
    expect(parse("claude", lines(CLAUDE_LINES)).figure.model).toBe(MODEL);
  });

  test("fed in pieces, line by line or cut anywhere between lines, it comes to the same figure", () => {
    const whole = parse("claude", lines(CLAUDE_LINES)).figure;
    let s = initialState("claude");
    for (const l of CLAUDE_LINES) s = feedLines(s, l + "\n");
    expect(figureOf(finishLines(s, ""))).toEqual(whole);
    for (let cut = 1; cut < CLAUDE_LINES.length; cut++) {
      const a = lines(CLAUDE_LINES.slice(0, cut));
      const b = lines(CLAUDE_LINES.slice(cut));
      expect(figureOf(finishLines(feedLines(feedLines(initialState("claude"), a), b), ""))).toEqual(whole);
    }
  });
});

describe("claude 2.1.332, recorded", () => {
  const usage = (i: number, o: number, cw: number, cr: number) => ({
    input_tokens: i,
    output_tokens: o,
    cache_creation_input_tokens: cw,
    cache_read_input_tokens: cr,
  });
  const assistant = (id: string, u: object) =>
    j({
      type: "assistant",
      message: { id, type: "message", role: "assistant", model: "claude-sonnet-4-5", content: [{ type: "text", text: "x" }], usage: u },
      session_id: "s",
    });
  const delta = (id: string, u: object) =>
    j({ type: "stream_event", event: { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: u }, session_id: "s", api_message_id: id });
  test("a resumed process: result.usage is its own, total_cost_usd and modelUsage count from the conversation's start: the earlier dollars are taken off, the tokens kept", () => {
    const result = j({
      type: "result",
      subtype: "success",
      total_cost_usd: 0.0778887,
      usage: usage(61, 545, 905, 27066),
      modelUsage: {
        "claude-sonnet-4-5": { inputTokens: 78, outputTokens: 942, cacheReadInputTokens: 39924, cacheCreationInputTokens: 13746, costUSD: 0.0778887 },
      },
    });
    const text = lines([
      assistant("m3", usage(25, 1, 446, 13308)),
      delta("m3", usage(25, 254, 446, 13308)),
      assistant("m4", usage(36, 1, 459, 13758)),
      delta("m4", usage(36, 291, 459, 13758)),
      result,
    ]);
    const r = parse("claude", text, { base: { tokens: { input: 17, output: 397, cacheRead: 12858, cacheWrite: 12841 }, microUsd: 58_017 } });
    expect(r.figure.tokens).toEqual({ input: 61, output: 545, cacheRead: 27066, cacheWrite: 905 });
    expect(r.figure.microUsd).toBe(77_889 - 58_017);
  });
  test("a first process: modelUsage equals result.usage, the dollars are kept", () => {
    const result = j({
      type: "result",
      total_cost_usd: 0.058,
      usage: usage(17, 397, 12841, 12858),
      modelUsage: { "claude-sonnet-4-5": { inputTokens: 17, outputTokens: 397, cacheReadInputTokens: 12858, cacheCreationInputTokens: 12841 } },
    });
    const r = parse("claude", lines([assistant("m1", usage(17, 1, 12841, 12858)), result]), {
      base: { tokens: { input: 5, output: 5, cacheRead: 5, cacheWrite: 5 }, microUsd: 1000 },
    });
    expect(r.figure.microUsd).toBe(58_000);
  });
  test("--include-partial-messages: message_delta's running output count is read before the result line (the assistant line shows 1)", () => {
    const r = parse("claude", lines([assistant("m1", usage(3, 1, 12408, 0)), delta("m1", usage(3, 828, 12408, 0)), assistant("m2", usage(14, 1, 433, 12858))]));
    expect(r.figure.tokens).toEqual({ input: 17, output: 829, cacheRead: 12858, cacheWrite: 12841 });
  });
});

describe("codex exec --json", () => {
  const cases: { name: string; text: string; base?: { tokens: TokenCounts | null; microUsd: number | null }; tokens: TokenCounts | null; note?: RegExp }[] = [
    {
      name: "a whole session: turn.completed's figures (cached input is part of input)",
      text: lines(CODEX_LINES),
      tokens: { input: 4277, output: 1590, cacheRead: 22272, cacheWrite: 0 },
    },
    {
      name: "before its turn completes: unknown (codex reports at the turn's end), and the note says a turn runs",
      text: lines(CODEX_LINES.slice(0, 5)),
      tokens: null,
      note: /inside a turn/,
    },
    {
      name: "a turn started after one completed: the completed figure, and the note says what it leaves out",
      text: lines([...CODEX_LINES, j({ type: "turn.started" })]),
      tokens: { input: 4277, output: 1590, cacheRead: 22272, cacheWrite: 0 },
      note: /inside a turn/,
    },
    {
      name: "stderr lines between and a truncated last line",
      text:
        lines(["2025-10-17T05:54:20.209Z ERROR codex_core::exec: stream disconnected - retrying turn (1/5 in 188ms)...", ...CODEX_LINES]) +
        '{"type":"turn.completed","usage":{"input_tok',
      tokens: { input: 4277, output: 1590, cacheRead: 22272, cacheWrite: 0 },
      note: /cut short/,
    },
    {
      name: "a failed turn reports no usage: unknown",
      text: lines([...CODEX_LINES.slice(0, 2), j({ type: "turn.failed", error: { message: "stream disconnected before completion" } })]),
      tokens: null,
    },
    {
      name: "a resumed thread counts from its beginning: what the earlier attempts were recorded as is taken off",
      text: lines([CODEX_LINES[0]!, j({ type: "turn.completed", usage: { input_tokens: 62746, cached_input_tokens: 51200, output_tokens: 2380 } })]),
      base: { tokens: { input: 4277, output: 1590, cacheRead: 22272, cacheWrite: 0 }, microUsd: null },
      tokens: { input: 62746 - 51200 - 4277, output: 2380 - 1590, cacheRead: 51200 - 22272, cacheWrite: 0 },
    },
    {
      name: "codex 0.171's turn.completed (recorded): cache writes read as part of the input, reasoning as part of the output",
      text: lines([
        j({ type: "thread.started", thread_id: "01a236fd-bccf-71a3-978f-6d4cc575606d" }),
        j({ type: "turn.started" }),
        j({
          type: "turn.completed",
          usage: { input_tokens: 17040, cached_input_tokens: 8448, cache_write_input_tokens: 1024, output_tokens: 465, reasoning_output_tokens: 128 },
        }),
      ]),
      tokens: { input: 17040 - 8448 - 1024, output: 465, cacheRead: 8448, cacheWrite: 1024 },
    },
    {
      name: "a lower turn.completed printed after (forged) lowers nothing",
      text: lines([...CODEX_LINES, j({ type: "turn.completed", usage: { input_tokens: 10, cached_input_tokens: 0, output_tokens: 1 } })]),
      tokens: { input: 4277, output: 1590, cacheRead: 22272, cacheWrite: 0 },
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = parse("codex", c.text, { base: c.base });
      expect(r.figure.tokens).toEqual(c.tokens);
      expect(r.figure.microUsd).toBeNull();
      if (c.note) expect(r.note ?? "").toMatch(c.note);
      else expect(r.note).toBeNull();
    });
});

describe("aider's printed usage lines", () => {
  const cases: { name: string; text: string; tokens: TokenCounts | null; microUsd: number | null; note?: RegExp }[] = [
    {
      name: "two messages: their tokens summed (sent holds the cache writes), the session's cost",
      text: lines(AIDER_LINES),
      tokens: { input: 1200 + 4100, output: 112 + 95, cacheRead: 2200, cacheWrite: 1400 },
      microUsd: 20_000,
    },
    {
      name: "a model aider has no prices for: tokens only",
      text: lines(["Tokens: 1.6k sent, 997 received."]),
      tokens: { input: 1600, output: 997, cacheRead: 0, cacheWrite: 0 },
      microUsd: null,
    },
    {
      name: "the console wrapped the cost before its session figure: read across the break",
      text: lines(["Tokens: 12k sent, 2.1k cache write, 8.2k cache hit, 997 received. Cost: $0.05", "message, $0.07 session."]),
      tokens: { input: 9900, output: 997, cacheRead: 8200, cacheWrite: 2100 },
      microUsd: 70_000,
    },
    { name: "nothing sent yet: unknown", text: lines(AIDER_LINES.slice(0, 13)), tokens: null, microUsd: null },
    {
      name: "the model's reply printing a usage line with lower figures (forged) only adds tokens and lowers no cost",
      text: lines([...AIDER_LINES, "Tokens: 1 sent, 1 received. Cost: $0.00 message, $0.00 session."]),
      tokens: { input: 5301, output: 208, cacheRead: 2200, cacheWrite: 1400 },
      microUsd: 20_000,
    },
    {
      name: "a usage line it cannot read is noted; the rest counts",
      text: lines([...AIDER_LINES, "Tokens: lots sent, many received."]),
      tokens: { input: 1200 + 4100, output: 112 + 95, cacheRead: 2200, cacheWrite: 1400 },
      microUsd: 20_000,
      note: /1 line that looked like aider's usage could not be read/,
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = parse("aider", c.text);
      expect(r.figure.tokens).toEqual(c.tokens);
      expect(r.figure.microUsd).toBe(c.microUsd);
      if (c.note) expect(r.note ?? "").toMatch(c.note);
      else expect(r.note).toBeNull();
    });
});

describe("LOOP_USAGE_FILE", () => {
  const cases: { name: string; text: string; tokens: TokenCounts | null; microUsd: number | null; note?: RegExp }[] = [
    {
      name: "the last complete line wins (each line is cumulative)",
      text: lines([
        j({ input_tokens: 100, output_tokens: 10 }),
        j({ input_tokens: 900, output_tokens: 250, cache_read_input_tokens: 4000, cache_creation_input_tokens: 300, usd: 0.0123 }),
      ]),
      tokens: { input: 900, output: 250, cacheRead: 4000, cacheWrite: 300 },
      microUsd: 12_300,
    },
    {
      name: "a last line being written (no line break yet) is not read",
      text: lines([j({ input_tokens: 100, output_tokens: 10 })]) + '{"input_tokens": 9',
      tokens: { input: 100, output: 10, cacheRead: 0, cacheWrite: 0 },
      microUsd: null,
    },
    { name: "dollars alone: tokens unknown", text: lines([j({ usd: 1.5 })]), tokens: null, microUsd: 1_500_000 },
    {
      name: "a last complete line that is no report is said; the one before it counts",
      text: lines([j({ input_tokens: 100, output_tokens: 10 }), j({ input_tokens: -5 })]),
      tokens: { input: 100, output: 10, cacheRead: 0, cacheWrite: 0 },
      microUsd: null,
      note: /input_tokens must be a whole number/,
    },
    { name: "no complete line: nothing known", text: '{"input_tokens": 1', tokens: null, microUsd: null },
    { name: "an empty file: nothing known", text: "", tokens: null, microUsd: null },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = parseUsageFile(c.text);
      expect(r.figure?.tokens ?? null).toEqual(c.tokens);
      expect(r.figure?.microUsd ?? null).toBe(c.microUsd);
      if (c.note) expect(r.note ?? "").toMatch(c.note);
      else expect(r.note).toBeNull();
    });
});

/** Gemini CLI 0.61's stream-json, recorded against tests/helpers/fake-gemini.ts (three answers of 1,200 prompt tokens, 400 cached, 30 out and 12 of thinking: its router's and two turns). */
const GEMINI_LINES = [
  '{"type":"init","timestamp":"2026-12-07T15:54:28.875Z","session_id":"46d671f2-5df9-43cf-ac0e-4deb5a271fae","model":"auto"}',
  '{"type":"message","timestamp":"2026-12-07T15:54:28.876Z","role":"user","content":"Write DONE.md"}',
  '{"type":"tool_use","timestamp":"2026-12-07T15:54:29.519Z","tool_name":"run_shell_command","tool_id":"run_shell_command__run_shell_command_1796658869307_0","parameters":{"command":"printf \'hello\\\\n\' > DONE.md"}}',
  '{"type":"tool_result","timestamp":"2026-12-07T15:54:30.173Z","tool_id":"run_shell_command__run_shell_command_1796658869307_0","status":"success","output":""}',
  '{"type":"message","timestamp":"2026-12-07T15:54:30.324Z","role":"assistant","content":"Done.","delta":true}',
  '{"type":"result","timestamp":"2026-12-07T15:54:30.349Z","status":"success","stats":{"total_tokens":3726,"input_tokens":3600,"output_tokens":90,"cached":1200,"input":2400,"duration_ms":1479,"tool_calls":1,"models":{"gemini-3.5-flash-lite-fake":{"total_tokens":1242,"input_tokens":1200,"output_tokens":30,"cached":400,"input":800},"gemini-3.1-pro-preview-fake":{"total_tokens":2484,"input_tokens":2400,"output_tokens":60,"cached":800,"input":1600}}}}',
];

/** opencode 1.18.33's --format json, recorded against tests/helpers/fake-anthropic.ts (two steps; its title request is not in its events). */
const OPENCODE_LINES = [
  '{"type":"step_start","timestamp":1796658170323,"sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","part":{"id":"prt_2512c0998001SU7ax4uP9KpAsj","messageID":"msg_2512bf990001SJToMpzeTCyllx","sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","snapshot":"4b825dc642cb6eb9a060e54bf8d69288fbee4904","type":"step-start"}}',
  '{"type":"tool_use","timestamp":1796658170589,"sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","part":{"type":"tool","tool":"bash","callID":"toolu_01Fake000004icge3ndj","state":{"status":"completed","input":{"command":"echo hi > X.md","description":"run"},"output":"(no output)","metadata":{"output":"(no output)","exit":0,"truncated":false},"title":"echo hi > X.md","time":{"start":1796658170293,"end":1796658170493}},"id":"prt_2512c099f001sY3GJUdLm3ZfMm","sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","messageID":"msg_2512bf990001SJToMpzeTCyllx"}}',
  '{"type":"step_finish","timestamp":1796658171158,"sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","part":{"id":"prt_2512c0cf5001gY6fY6z0vd0T1S","reason":"tool-calls","snapshot":"8a5f7434d11b9b46dcd3dd1d0a01e36849fb6ae2","messageID":"msg_2512bf990001SJToMpzeTCyllx","sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","type":"step-finish","tokens":{"total":12591,"input":3,"output":180,"reasoning":0,"cache":{"write":12408,"read":0}},"cost":0.049239}}',
  '{"type":"step_start","timestamp":1796658172198,"sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","part":{"id":"prt_2512c10f9001bhlL6p8CyiMwRh","messageID":"msg_2512c0ee40018EomU3hTzAmpaj","sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","snapshot":"8a5f7434d11b9b46dcd3dd1d0a01e36849fb6ae2","type":"step-start"}}',
  '{"type":"text","timestamp":1796658172198,"sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","part":{"id":"prt_2512c1107001sG664GPALfqWqm","messageID":"msg_2512c0ee40018EomU3hTzAmpaj","sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","type":"text","text":"Done 22","time":{"start":1796658172168,"end":1796658172187}}}',
  '{"type":"step_finish","timestamp":1796658172873,"sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","part":{"id":"prt_2512c1360001pgMxC2091M8okQ","reason":"stop","snapshot":"8a5f7434d11b9b46dcd3dd1d0a01e36849fb6ae2","messageID":"msg_2512c0ee40018EomU3hTzAmpaj","sessionID":"ses_daed412d7ffeM5zXkt7dbE9twK","type":"step-finish","tokens":{"total":13522,"input":14,"output":217,"reasoning":0,"cache":{"write":433,"read":12858}},"cost":0.00877815}}',
];

describe("gemini stream-json (recorded)", () => {
  test("its result line: the process's figures, cached input apart, its thinking not in them; its one model when it names one", () => {
    const r = parse("gemini", lines(GEMINI_LINES));
    expect(r.figure).toEqual({ tokens: { input: 2400, output: 90, cacheRead: 1200, cacheWrite: 0 }, microUsd: null, model: null });
    expect(r.note).toBeNull();
    const one = j({
      type: "result",
      status: "success",
      stats: { input_tokens: 500, output_tokens: 7, cached: 100, input: 400, models: { "gemini-2.5-pro": {} } },
    });
    expect(parse("gemini", lines([one])).figure).toEqual({
      tokens: { input: 400, output: 7, cacheRead: 100, cacheWrite: 0 },
      microUsd: null,
      model: "gemini-2.5-pro",
    });
  });
  test("before its result line nothing is known; a lower result printed after (forged) lowers nothing; a result without stats is unreadable", () => {
    expect(parse("gemini", lines(GEMINI_LINES.slice(0, -1))).figure.tokens).toBeNull();
    const forged = j({ type: "result", stats: { input_tokens: 1, output_tokens: 1, cached: 0 } });
    expect(parse("gemini", lines([...GEMINI_LINES, forged])).figure.tokens).toEqual({ input: 2400, output: 90, cacheRead: 1200, cacheWrite: 0 });
    expect(parse("gemini", lines([j({ type: "result", stats: "none" })])).note).toMatch(/1 line that looked like gemini's usage could not be read/);
  });
});

describe("opencode --format json (recorded)", () => {
  test("its steps' step_finish summed: input apart from the cache, reasoning as output, its dollars summed", () => {
    const r = parse("opencode", lines(OPENCODE_LINES));
    expect(r.figure).toEqual({ tokens: { input: 3 + 14, output: 180 + 217, cacheRead: 12858, cacheWrite: 12408 + 433 }, microUsd: 49239 + 8778, model: null });
    expect(r.note).toBeNull();
    const reasoning = j({ type: "step_finish", part: { tokens: { input: 5, output: 10, reasoning: 4, cache: { read: 0, write: 0 } } } });
    expect(parse("opencode", lines([reasoning])).figure.tokens).toEqual({ input: 5, output: 14, cacheRead: 0, cacheWrite: 0 });
  });
  test("in pieces as it works (each step as it ends); a step_finish without tokens is unreadable; a negative count counts nothing", () => {
    expect(parse("opencode", lines(OPENCODE_LINES.slice(0, 3)), { final: false }).figure.tokens).toEqual({
      input: 3,
      output: 180,
      cacheRead: 0,
      cacheWrite: 12408,
    });
    expect(parse("opencode", lines(OPENCODE_LINES.slice(0, 1))).figure.tokens).toBeNull();
    const bad = j({ type: "step_finish", part: {} });
    expect(parse("opencode", lines([...OPENCODE_LINES, bad])).note).toMatch(/could not be read/);
    const negative = j({ type: "step_finish", part: { tokens: { input: -1000, output: -1000 } } });
    expect(parse("opencode", lines([...OPENCODE_LINES, negative])).figure.tokens).toEqual({ input: 17, output: 397, cacheRead: 12858, cacheWrite: 12841 });
  });
});

describe("where usage comes from, and prices", () => {
  test("the presets are parsed from their logs; every other runner reports to the file", () => {
    expect(["claude", "codex", "aider", "gemini", "opencode", "demo", "mine"].map(usageSourceOf)).toEqual([
      "claude",
      "codex",
      "aider",
      "gemini",
      "opencode",
      "usage_file",
      "usage_file",
    ]);
  });

  test("tokens at the operator's prices (micro-dollars per million), rounded up; a kind without a price is never guessed", () => {
    const price = { input: 3_000_000, output: 15_000_000, cacheRead: 300_000, cacheWrite: 3_750_000 };
    expect(priced({ input: 1_000_000, output: 1_000_000, cacheRead: 0, cacheWrite: 0 }, price)).toBe(18_000_000);
    expect(priced({ input: 1, output: 0, cacheRead: 0, cacheWrite: 0 }, price)).toBe(3);
    expect(priced({ input: 1, output: 1, cacheRead: 1, cacheWrite: 0 }, { input: 3_000_000, output: 15_000_000 })).toBeNull();
    expect(priced({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0 }, undefined)).toBeNull();
    expect(sum(CLAUDE_OWN)).toBe(13 + 255 + 29520 + 5420);
  });
});
