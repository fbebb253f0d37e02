// What an attempt used, read from what its agent reports (docs/spend.md). Pure: the parsers of the
// presets' structured output (claude `--output-format stream-json`, codex `exec --json`, gemini's
// stream-json `result`, opencode's `step_finish` events, aider's printed `Tokens: … Cost: …` lines) and of a command runner's LOOP_USAGE_FILE, and the price of
// tokens at the operator's prices. lib/supervisor/usage-reader.ts feeds a parser only what the output log
// grew by, whole lines, and keeps its state between ticks.
//
// Nothing an agent prints can make the loop think it spent less: every figure here only grows as
// more is read (a cumulative report is taken at its highest, per-message reports are summed), and
// the log refuses a recorded figure that goes down (lib/log/reducer.ts usage_recorded). Printed text
// can only make the figure higher, which stops the item sooner, never later.
import type { TokenCounts, UsageSource } from "../log/events.ts";
import type { ModelPrice } from "./normalized.ts";

/** What a parser found: tokens by kind and US dollars in millionths, each null while unknown. */
export interface UsageFigure {
  tokens: TokenCounts | null;
  microUsd: number | null;
  /** The model the agent named, when it named one (for the operator's prices). */
  model: string | null;
}

const ZERO: Readonly<TokenCounts> = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

export function sum(t: TokenCounts): number {
  return t.input + t.output + t.cacheRead + t.cacheWrite;
}

function add(a: TokenCounts, b: TokenCounts): TokenCounts {
  return { input: a.input + b.input, output: a.output + b.output, cacheRead: a.cacheRead + b.cacheRead, cacheWrite: a.cacheWrite + b.cacheWrite };
}

function maxEach(a: TokenCounts, b: TokenCounts): TokenCounts {
  return {
    input: Math.max(a.input, b.input),
    output: Math.max(a.output, b.output),
    cacheRead: Math.max(a.cacheRead, b.cacheRead),
    cacheWrite: Math.max(a.cacheWrite, b.cacheWrite),
  };
}

function minus(a: TokenCounts, b: TokenCounts): TokenCounts {
  return {
    input: Math.max(0, a.input - b.input),
    output: Math.max(0, a.output - b.output),
    cacheRead: Math.max(0, a.cacheRead - b.cacheRead),
    cacheWrite: Math.max(0, a.cacheWrite - b.cacheWrite),
  };
}

/** A count a report gives: a whole number from 0 (anything else is no count). */
function count(v: unknown): number | null {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : null;
}

/** Dollars a report gives, in whole millionths; null for anything but a finite number from 0. */
function microUsdOf(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 1e12 ? Math.round(v * 1e6) : null;
}

/** The parsers, by where an attempt's usage is read from. */
export type LogSource = Exclude<UsageSource, "usage_file" | "gateway">;

/**
 * Where a runner's usage comes from: the presets' output logs, else the file the loop names in
 * LOOP_USAGE_FILE (the demo agent and command runners).
 */
export function usageSourceOf(runner: string): Exclude<UsageSource, "gateway"> {
  return runner === "claude" || runner === "codex" || runner === "aider" || runner === "gemini" || runner === "opencode" ? runner : "usage_file";
}

/**
 * A parser's state between pieces of output: plain data, kept in the session folder from one
 * observing tick to the next (lib/supervisor/usage-reader.ts).
 */
export interface ParseState {
  source: LogSource;
  /**
   * claude: the sum of the messages seen whole (each assistant message's `message.usage`, once per
   * message id). codex, gemini: unused. aider: the sum of its per-message `Tokens:` lines; opencode: of its `step_finish` events.
   */
  own: TokenCounts;
  /** claude: the message being read (its lines come one per content block, each with its usage). */
  group: { id: string; usage: TokenCounts } | null;
  /** The highest cumulative figure reported (claude's `result`, codex's `turn.completed`, gemini's `result`), as reported. */
  reported: TokenCounts | null;
  /** The highest dollar figure reported (claude's `total_cost_usd`, aider's session cost), as reported; opencode: the sum of its steps' `cost`. */
  reportedUsd: number | null;
  /**
   * claude: the tokens of the `result` line's `modelUsage` (all models), the figure its dollars are
   * the price of: whether the dollars count from the conversation's start is decided by these, apart
   * from the tokens (absent in states saved before it was read).
   */
  reportedModel?: TokenCounts | null;
  /** A message's usage was read (claude), a `Tokens:` line (aider), a `step_finish` (opencode): `own` is known, if only 0. */
  seen: boolean;
  model: string | null;
  /** aider: a `Cost:` line wrapped before its session figure (aider's console wraps at 80 columns). */
  pending: string | null;
  /** Lines that looked like a report but could not be read. */
  unreadable: number;
  /** The last line was cut short (seen at the session's end). */
  cutShort: boolean;
  /** codex: a turn has started and not yet ended (`turn.started` after the last `turn.completed`/`turn.failed`): what it uses is not reported until it ends. */
  turnOpen?: boolean;
}

export function initialState(source: LogSource): ParseState {
  return { source, own: { ...ZERO }, group: null, reported: null, reportedUsd: null, seen: false, model: null, pending: null, unreadable: 0, cutShort: false };
}

/** The substrings a line must hold to be worth parsing, by source: the rest are skipped unread. */
const MARKERS: Record<LogSource, readonly string[]> = {
  // message_delta events carry "usage"; the other stream events (text deltas: most of the lines) do not.
  claude: ['"usage"', '"init"'],
  codex: ['"turn.completed"', '"turn.started"', '"turn.failed"'],
  aider: ["Tokens:", "Cost:"],
  gemini: ['"result"'],
  opencode: ['"step_finish"'],
};

/**
 * Feed whole lines (the text ends with a line break, or is empty) to the parser. Only lines holding
 * one of the source's markers are looked at: the others (an agent's tool output, stderr) are
 * skipped without being parsed, so a tick costs little more than finding the markers.
 */
export function feedLines(state: ParseState, text: string): ParseState {
  const s = structuredClone(state);
  const markers = MARKERS[s.source];
  // Where each marker next occurs (-1: not again): each is searched for once per occurrence, never
  // again from every line (a marker that does not occur would make that quadratic).
  const next = markers.map((m) => text.indexOf(m));
  let from = 0;
  while (from < text.length) {
    // A report wrapped onto this line (aider's cost) is read whatever it holds.
    let at = s.pending !== null ? from : -1;
    // Else the next marker at or after `from`, and the line around it.
    if (at < 0)
      for (let k = 0; k < markers.length; k++) {
        if (next[k]! >= 0 && next[k]! < from) next[k] = text.indexOf(markers[k]!, from);
        if (next[k]! >= 0 && (at < 0 || next[k]! < at)) at = next[k]!;
      }
    if (at < 0) break;
    const start = text.lastIndexOf("\n", at) + 1;
    let end = text.indexOf("\n", at);
    if (end < 0) end = text.length;
    lineOf(s, text.slice(Math.max(start, from), end));
    from = end + 1;
  }
  return s;
}

/**
 * The session ended: its last line, if it has no line break, is read as a whole line when it is one,
 * else noted as cut short. A claude message still open is complete now.
 */
export function finishLines(state: ParseState, rest: string): ParseState {
  let s = state;
  const line = rest.trim();
  if (line !== "") {
    // JSON cut short (the CLI killed mid-write) is said as such, not as a line that could not be read.
    let cut = false;
    if (s.source !== "aider" && line.startsWith("{"))
      try {
        JSON.parse(line);
      } catch {
        cut = true;
      }
    const before = s.unreadable;
    if (!cut) s = feedLines(s, rest + "\n");
    if (cut || s.unreadable > before) s = { ...s, unreadable: before, cutShort: true };
  }
  if (s.pending !== null) s = { ...s, pending: null, cutShort: true };
  return s;
}

function lineOf(s: ParseState, line: string): void {
  switch (s.source) {
    case "claude":
      return claudeLine(s, line);
    case "codex":
      return codexLine(s, line);
    case "aider":
      return aiderLine(s, line);
    case "gemini":
      return geminiLine(s, line);
    case "opencode":
      return opencodeLine(s, line);
  }
}

/** A JSON object on one line, or null (not JSON: stderr, a banner; counted when it looked like JSON). */
function jsonLine(s: ParseState, line: string): Record<string, unknown> | null {
  const text = line.trim();
  if (!text.startsWith("{")) return null;
  try {
    const v = JSON.parse(text);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // below
  }
  s.unreadable += 1;
  return null;
}

// ---------------------------------------------------------------------------------------------
// claude -p --output-format stream-json --verbose
//
// One JSON event per line: {"type":"system","subtype":"init","model":…}, then for each API call an
// assistant message, one line per content block, each carrying the message's `message.usage`
// (input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens) under the same
// `message.id`; user lines (tool results) carry none; the last line is {"type":"result",…,"usage":
// {…},"total_cost_usd":…}: the figures of the whole process. Subagents' messages come the same way.

/** claude's usage object as counts; null when it holds none of them. */
function claudeCounts(u: unknown): TokenCounts | null {
  if (typeof u !== "object" || u === null) return null;
  const o = u as Record<string, unknown>;
  const c = {
    input: count(o.input_tokens),
    output: count(o.output_tokens),
    cacheRead: count(o.cache_read_input_tokens),
    cacheWrite: count(o.cache_creation_input_tokens),
  };
  if (c.input === null && c.output === null && c.cacheRead === null && c.cacheWrite === null) return null;
  return { input: c.input ?? 0, output: c.output ?? 0, cacheRead: c.cacheRead ?? 0, cacheWrite: c.cacheWrite ?? 0 };
}

/** The tokens of a claude `modelUsage` object (per model: inputTokens, outputTokens, cache…), summed; null when none. */
function modelUsageCounts(v: unknown): TokenCounts | null {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  let total: TokenCounts | null = null;
  for (const m of Object.values(v as Record<string, unknown>)) {
    if (typeof m !== "object" || m === null) continue;
    const o = m as Record<string, unknown>;
    const c = {
      input: count(o.inputTokens),
      output: count(o.outputTokens),
      cacheRead: count(o.cacheReadInputTokens),
      cacheWrite: count(o.cacheCreationInputTokens),
    };
    if (c.input === null && c.output === null && c.cacheRead === null && c.cacheWrite === null) continue;
    total = add(total ?? ZERO, { input: c.input ?? 0, output: c.output ?? 0, cacheRead: c.cacheRead ?? 0, cacheWrite: c.cacheWrite ?? 0 });
  }
  return total;
}

function claudeLine(s: ParseState, line: string): void {
  const e = jsonLine(s, line);
  if (!e) return;
  // --include-partial-messages: the API's own events. A message's message_delta carries its running
  // figures (the output count the assistant lines do not have: they show message_start's snapshot).
  if (e.type === "stream_event" && typeof e.event === "object" && e.event !== null) {
    const ev = e.event as Record<string, unknown>;
    const start = ev.type === "message_start" && typeof ev.message === "object" && ev.message !== null ? (ev.message as Record<string, unknown>) : null;
    if (ev.type !== "message_delta" && start === null) return;
    const c = claudeCounts(start ? start.usage : ev.usage);
    if (c === null) {
      if ((start ? start.usage : ev.usage) !== undefined) s.unreadable += 1;
      return;
    }
    s.seen = true;
    // A message_delta belongs to the message its stream started (older versions do not name it).
    const id = start ? (typeof start.id === "string" ? start.id : null) : typeof e.api_message_id === "string" ? e.api_message_id : (s.group?.id ?? null);
    if (id !== null && s.group?.id === id) s.group.usage = maxEach(s.group.usage, c);
    else {
      if (s.group) s.own = add(s.own, s.group.usage);
      s.group = id === null ? null : { id, usage: c };
      if (id === null) s.own = add(s.own, c);
    }
    return;
  }
  if (e.type === "system" && e.subtype === "init") {
    if (typeof e.model === "string" && e.model) s.model = e.model;
    return;
  }
  if (e.type === "result") {
    const c = claudeCounts(e.usage);
    const usd = microUsdOf(e.total_cost_usd);
    if (c === null && usd === null) {
      if (e.usage !== undefined || e.total_cost_usd !== undefined) s.unreadable += 1;
      return;
    }
    if (c && (s.reported === null || sum(c) >= sum(s.reported))) s.reported = c;
    if (usd !== null) s.reportedUsd = Math.max(s.reportedUsd ?? 0, usd);
    const model = modelUsageCounts(e.modelUsage);
    if (model && (!s.reportedModel || sum(model) >= sum(s.reportedModel))) s.reportedModel = model;
    return;
  }
  if (e.type === "assistant" && typeof e.message === "object" && e.message !== null) {
    const m = e.message as Record<string, unknown>;
    const c = claudeCounts(m.usage);
    if (c === null) {
      if (m.usage !== undefined) s.unreadable += 1;
      return;
    }
    if (typeof m.model === "string" && m.model && s.model === null) s.model = m.model;
    s.seen = true;
    const id = typeof m.id === "string" ? m.id : null;
    // One message, several lines: its usage counts once (the highest of each count it showed).
    if (id !== null && s.group?.id === id) {
      s.group.usage = maxEach(s.group.usage, c);
      return;
    }
    if (s.group) s.own = add(s.own, s.group.usage);
    s.group = id === null ? null : { id, usage: c };
    if (id === null) s.own = add(s.own, c);
  }
}

// ---------------------------------------------------------------------------------------------
// codex exec --json
//
// JSONL events; {"type":"turn.completed","usage":{"input_tokens":…,"cached_input_tokens":…,
// "output_tokens":…}} at the end of each turn carries the thread's figures so far: cumulative over
// the whole thread, including the turns of the sessions it resumes. `cached_input_tokens` is part of
// `input_tokens`; reasoning is part of `output_tokens` (0.171 also prints it apart,
// `reasoning_output_tokens`: not added again). 0.171's `cache_write_input_tokens` is taken as part of
// `input_tokens` too, as the cache reads are, and counted as cache writes.

function codexLine(s: ParseState, line: string): void {
  const e = jsonLine(s, line);
  if (!e) return;
  if (e.type === "turn.started" || e.type === "turn.failed") s.turnOpen = e.type === "turn.started";
  if (e.type !== "turn.completed") return;
  s.turnOpen = false;
  const u = e.usage as Record<string, unknown> | undefined;
  const input = count(u?.input_tokens);
  const cached = count(u?.cached_input_tokens) ?? 0;
  const output = count(u?.output_tokens);
  if (input === null && output === null) {
    s.unreadable += 1;
    return;
  }
  const written = count(u?.cache_write_input_tokens) ?? 0;
  const cacheRead = Math.min(cached, input ?? cached);
  const cacheWrite = Math.min(written, Math.max(0, (input ?? written) - cacheRead));
  const c: TokenCounts = { input: Math.max(0, (input ?? 0) - cacheRead - cacheWrite), output: output ?? 0, cacheRead, cacheWrite };
  s.reported = s.reported ? maxEach(s.reported, c) : c;
}

// ---------------------------------------------------------------------------------------------
// gemini --output-format stream-json (Gemini CLI 0.61)
//
// Its last line, {"type":"result","status":…,"stats":{"total_tokens":…,"input_tokens":…,
// "output_tokens":…,"cached":…,"input":…,"models":{<model>:{…the same…}}}}: the figures of this
// process (its router's side requests included), `input_tokens` holding the cached ones (`input` is
// the rest); its thinking is left out of `output_tokens` (the gateway counts it). Printed once, at
// the end: nothing is known before.

function geminiLine(s: ParseState, line: string): void {
  const e = jsonLine(s, line);
  if (e?.type !== "result") return;
  const st = typeof e.stats === "object" && e.stats !== null ? (e.stats as Record<string, unknown>) : null;
  const all = count(st?.input_tokens);
  const cached = count(st?.cached) ?? 0;
  const output = count(st?.output_tokens);
  if (all === null && output === null) {
    if (e.stats !== undefined) s.unreadable += 1;
    return;
  }
  const cacheRead = Math.min(cached, all ?? cached);
  const c: TokenCounts = { input: Math.max(0, (all ?? 0) - cacheRead), output: output ?? 0, cacheRead, cacheWrite: 0 };
  s.reported = s.reported ? maxEach(s.reported, c) : c;
  const models = typeof st?.models === "object" && st.models !== null ? Object.keys(st.models) : [];
  if (models.length === 1) s.model = models[0]!;
}

// ---------------------------------------------------------------------------------------------
// opencode run --format json (1.18)
//
// One event per line; each step of the conversation ends with {"type":"step_finish",…,"part":{…,
// "tokens":{"total":…,"input":…,"output":…,"reasoning":…,"cache":{"write":…,"read":…}},"cost":…}}:
// that step's figures, `input` apart from the cache's reads and writes, `output` apart from the
// reasoning (counted here as output, as the gateway does), `cost` in dollars at opencode's own
// prices. Its side requests (the session's title) are not reported: the gateway counts them.

function opencodeLine(s: ParseState, line: string): void {
  const e = jsonLine(s, line);
  if (e?.type !== "step_finish") return;
  const part = typeof e.part === "object" && e.part !== null ? (e.part as Record<string, unknown>) : null;
  const t = typeof part?.tokens === "object" && part.tokens !== null ? (part.tokens as Record<string, unknown>) : null;
  const cache = typeof t?.cache === "object" && t.cache !== null ? (t.cache as Record<string, unknown>) : null;
  const input = count(t?.input);
  const output = count(t?.output);
  if (input === null && output === null) {
    s.unreadable += 1;
    return;
  }
  s.own = add(s.own, {
    input: input ?? 0,
    output: (output ?? 0) + (count(t?.reasoning) ?? 0),
    cacheRead: count(cache?.read) ?? 0,
    cacheWrite: count(cache?.write) ?? 0,
  });
  s.seen = true;
  const usd = microUsdOf(part?.cost);
  if (usd !== null) s.reportedUsd = (s.reportedUsd ?? 0) + usd;
}

// ---------------------------------------------------------------------------------------------
// aider (--no-pretty --no-stream)
//
// After each message to the model: `Tokens: 1.6k sent, 2.1k cache write, 8.2k cache hit, 997
// received. Cost: $0.02 message, $0.05 session.` The token figures are that message's (rounded:
// 1.6k), the session cost is the whole process's; the cost part is absent for a model aider has no
// prices for. Its console wraps long lines, so the cost may continue on the next line.

const AIDER_TOKENS =
  /Tokens:\s*([\d.]+[kKmM]?)\s+sent(?:,\s*([\d.]+[kKmM]?)\s+cache write)?(?:,\s*([\d.]+[kKmM]?)\s+cache (?:hit|read))?,\s*([\d.]+[kKmM]?)\s+received/;
const AIDER_COST = /Cost:\s*\$\s*([\d.]+)\s+message,\s*\$\s*([\d.]+)\s+session/;

/** aider's rounded token figure ("997", "1.6k", "12k", "1.2M") as a count, or null. */
function aiderTokens(text: string): number | null {
  const m = /^([\d]+(?:\.\d+)?)([kKmM]?)$/.exec(text);
  if (!m) return null;
  const n = Number(m[1]) * (m[2] === "" ? 1 : m[2]!.toLowerCase() === "k" ? 1000 : 1_000_000);
  return Number.isFinite(n) ? Math.round(n) : null;
}

function aiderLine(s: ParseState, raw: string): void {
  const line = s.pending !== null ? `${s.pending} ${raw}` : raw;
  s.pending = null;
  const t = AIDER_TOKENS.exec(line);
  if (t) {
    const sent = aiderTokens(t[1]!);
    const write = t[2] ? aiderTokens(t[2]) : 0;
    const hit = t[3] ? aiderTokens(t[3]) : 0;
    const received = aiderTokens(t[4]!);
    if (sent === null || write === null || hit === null || received === null) s.unreadable += 1;
    // `sent` holds the cache writes (aider adds them in); cache hits are counted apart.
    else {
      s.own = add(s.own, { input: Math.max(0, sent - write), output: received, cacheRead: hit, cacheWrite: Math.min(write, sent) });
      s.seen = true;
    }
  }
  const costAt = line.indexOf("Cost:");
  if (costAt < 0) {
    if (!t && line.includes("Tokens:")) s.unreadable += 1;
    return;
  }
  const c = AIDER_COST.exec(line.slice(costAt));
  if (c) {
    const usd = microUsdOf(Number(c[2]));
    if (usd === null) s.unreadable += 1;
    else s.reportedUsd = Math.max(s.reportedUsd ?? 0, usd);
    return;
  }
  // Wrapped before the session figure: the next line completes it (once; then it is unreadable).
  if (s.pending === null && raw === line && line.length - costAt < 80) s.pending = line.slice(costAt);
  else s.unreadable += 1;
}

// ---------------------------------------------------------------------------------------------
// The figure.

/**
 * What a parser's state says the attempt used. `base`: for a conversation this attempt resumed, what
 * the loop recorded for the attempts of that conversation before it. claude and codex may report a
 * resumed conversation's figures from its beginning: codex always does; claude's `result.usage`
 * counts this process only, while its `total_cost_usd` (and `modelUsage`) count from the
 * conversation's start since version 2.1.277 (docs/spend.md). So it is decided per figure: tokens
 * reported at least the base above what this process's own messages add up to include the base;
 * dollars include it when `modelUsage`, whose price they are, holds at least half the base's tokens
 * more than `result.usage` (else, without `modelUsage`, when the tokens do). What is included is
 * taken off. Never below what the messages add up to.
 */
export function figureOf(state: ParseState, base: { tokens: TokenCounts | null; microUsd: number | null } | null = null): UsageFigure {
  const s = state;
  if (s.source === "codex") return { tokens: s.reported && base?.tokens ? minus(s.reported, base.tokens) : s.reported, microUsd: null, model: s.model };
  if (s.source === "aider" || s.source === "opencode") return { tokens: s.seen ? { ...s.own } : null, microUsd: s.reportedUsd, model: s.model };
  if (s.source === "gemini") return { tokens: s.reported, microUsd: null, model: s.model };
  const own = s.group ? add(s.own, s.group.usage) : s.own;
  let reported = s.reported;
  let microUsd = s.reportedUsd;
  const tokensInclude = reported !== null && base?.tokens != null && sum(reported) >= sum(own) + sum(base.tokens);
  const model = s.reportedModel ?? null;
  const usdIncludes = base?.tokens != null && (model !== null ? sum(model) - sum(reported ?? ZERO) >= sum(base.tokens) / 2 : tokensInclude);
  if (tokensInclude) reported = minus(reported!, base!.tokens!);
  if (usdIncludes && microUsd !== null && base!.microUsd !== null) microUsd = Math.max(0, microUsd - base!.microUsd);
  const tokens = reported && sum(reported) >= sum(own) ? reported : s.seen ? own : reported;
  return { tokens, microUsd, model: s.model };
}

/** What could not be read, in words, or null. */
/** What a codex figure leaves out while a turn runs (docs/spend.md: an exact figure in flight needs the gateway). */
const CODEX_IN_TURN =
  "codex is inside a turn: what it has used since the turn began is unknown until the turn ends (behind the gateway it is metered as it goes)";

export function noteOf(state: ParseState): string | null {
  const parts: string[] = [];
  if (state.unreadable > 0)
    parts.push(`${state.unreadable} line${state.unreadable === 1 ? "" : "s"} that looked like ${state.source}'s usage could not be read`);
  if (state.cutShort) parts.push("its last line was cut short");
  if (state.turnOpen) parts.push(CODEX_IN_TURN);
  return parts.length ? parts.join("; ") : null;
}

// ---------------------------------------------------------------------------------------------
// LOOP_USAGE_FILE: JSON lines, each the attempt's cumulative figures so far; the last complete line wins.

/** The keys a usage file's line may hold, and what each counts. */
const FILE_KEYS = { input_tokens: "input", output_tokens: "output", cache_read_input_tokens: "cacheRead", cache_creation_input_tokens: "cacheWrite" } as const;

/**
 * The last complete line of a usage file's text (what follows the last line break is being written
 * and is ignored), read as a figure. A last complete line that is not a report is said in `note`,
 * and the last one before it that is counts. No complete line: nothing known.
 */
export function parseUsageFile(text: string): { figure: UsageFigure | null; note: string | null } {
  const end = text.lastIndexOf("\n");
  if (end < 0) return { figure: null, note: null };
  const lines = text.slice(0, end).split("\n");
  let note: string | null = null;
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!.trim();
    if (line === "") continue;
    const r = fileLine(line);
    if ("figure" in r) return { figure: r.figure, note };
    note ??= `the last line of the usage file is not a usage report (${r.problem})`;
  }
  return { figure: null, note };
}

function fileLine(line: string): { figure: UsageFigure } | { problem: string } {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return { problem: "not JSON" };
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { problem: "not a JSON object" };
  const o = v as Record<string, unknown>;
  const tokens = { ...ZERO };
  let anyTokens = false;
  for (const [key, kind] of Object.entries(FILE_KEYS)) {
    if (o[key] === undefined) continue;
    const n = count(o[key]);
    if (n === null) return { problem: `${key} must be a whole number from 0` };
    tokens[kind] = n;
    anyTokens = true;
  }
  let microUsd: number | null = null;
  if (o.usd !== undefined) {
    microUsd = microUsdOf(o.usd);
    if (microUsd === null) return { problem: "usd must be a number from 0" };
  }
  if (!anyTokens && microUsd === null) return { problem: `it holds none of ${[...Object.keys(FILE_KEYS), "usd"].join(", ")}` };
  return { figure: { tokens: anyTokens ? tokens : null, microUsd, model: typeof o.model === "string" && o.model ? o.model : null } };
}

// ---------------------------------------------------------------------------------------------
// Prices.

/**
 * Tokens at the operator's price for the model, in micro-dollars (rounded up); null without a price,
 * or when the attempt has tokens of a kind the price does not name: never guessed.
 */
export function priced(tokens: TokenCounts, price: ModelPrice | undefined): number | null {
  if (!price) return null;
  if ((tokens.cacheRead > 0 && price.cacheRead === undefined) || (tokens.cacheWrite > 0 && price.cacheWrite === undefined)) return null;
  const micro =
    tokens.input * price.input + tokens.output * price.output + tokens.cacheRead * (price.cacheRead ?? 0) + tokens.cacheWrite * (price.cacheWrite ?? 0);
  return Math.ceil(micro / 1e6);
}
