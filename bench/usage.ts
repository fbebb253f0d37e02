#!/usr/bin/env bun
// bench/usage.ts: what reading an attempt's usage costs an observing tick (docs/spend.md): a 64 MiB
// output log that grew by 1 MiB since the last tick, parsed in process with the library's sources
// (lib/supervisor/usage-reader.ts readSessionUsage: open, stat, read the record of what was read, read and
// parse only the new MiB, write the record). Each run puts the record back as it was at 63 MiB, so
// every run reads the same last MiB. Also a usage file (a command runner's) that changed, and a tick
// that finds nothing new. Target: ≤ 5 ms for the 1 MiB of growth.
//   bun bench/usage.ts [--runs 31] [--dir DIR]
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readSessionUsage, USAGE_CURSOR } from "../lib/supervisor/usage-reader.ts";
import { SESSION_FILES } from "../lib/supervisor/session-wrapper.ts";
import type { UsageSource } from "../lib/log/events.ts";

const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: "string" }, dir: { type: "string" } }, strict: true });
const RUNS = Number(values.runs ?? 31);
const MiB = 2 ** 20;

/** Lines of a session's output in each CLI's format, about as long as real ones: the bulk is tool output, which carries no usage. */
function generator(source: "claude" | "codex" | "aider"): (i: number) => string {
  const filler = (n: number, i: number) => `line ${i}: ${"const x = compute(a, b) // some code the agent read\\n".repeat(Math.ceil(n / 52))}`.slice(0, n);
  // claude with --include-partial-messages (the preset's flags): each message also comes as the API's
  // stream events, message_start and message_delta with usage, the text deltas between without.
  const ev = (i: number, event: object) =>
    JSON.stringify({ type: "stream_event", event, session_id: "s", parent_tool_use_id: null, uuid: `u${i}`, api_message_id: `msg_${i - (i % 8)}` });
  if (source === "claude")
    return (i) => {
      const usage = { input_tokens: 6, cache_creation_input_tokens: 300 + (i % 50), cache_read_input_tokens: 16000 + i, output_tokens: 120 };
      const k = i % 8;
      if (k === 4)
        return ev(i, {
          type: "message_start",
          message: { id: `msg_${i - k}`, type: "message", role: "assistant", model: "claude-sonnet-4-5", content: [], usage: { ...usage, output_tokens: 1 } },
        });
      if (k === 5 || k === 6) return ev(i, { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: filler(40, i) } });
      if (k === 7) return ev(i, { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage });
      switch (k) {
        case 0:
          return JSON.stringify({
            type: "assistant",
            message: {
              id: `msg_${i - k}`,
              type: "message",
              role: "assistant",
              model: "claude-sonnet-4-5",
              content: [{ type: "text", text: filler(400, i) }],
              usage,
            },
            parent_tool_use_id: null,
            session_id: "s",
          });
        case 1:
          return JSON.stringify({
            type: "assistant",
            message: {
              id: `msg_${i - k}`,
              type: "message",
              role: "assistant",
              model: "claude-sonnet-4-5",
              content: [{ type: "tool_use", id: `toolu_${i}`, name: "Read", input: { file_path: "/w/src/router.ts" } }],
              usage,
            },
            parent_tool_use_id: null,
            session_id: "s",
          });
        case 2:
          return JSON.stringify({
            type: "user",
            message: { role: "user", content: [{ tool_use_id: `toolu_${i - 1}`, type: "tool_result", content: filler(6000, i) }] },
            parent_tool_use_id: null,
            session_id: "s",
          });
        default:
          return `stderr: note ${i}`;
      }
    };
  if (source === "codex")
    return (i) =>
      i % 50 === 49
        ? JSON.stringify({ type: "turn.completed", usage: { input_tokens: 26549 + i, cached_input_tokens: 22272, output_tokens: 1590 } })
        : JSON.stringify({
            type: "item.completed",
            item: {
              id: `item_${i}`,
              type: "command_execution",
              command: "bash -lc 'cat src/router.ts'",
              aggregated_output: filler(3000, i),
              exit_code: 0,
              status: "completed",
            },
          });
  return (i) =>
    i % 40 === 39 ? `Tokens: 2.6k sent, 1.4k cache write, 112 received. Cost: $0.0096 message, $0.${String(i).padStart(4, "0")} session.` : filler(200, i);
}

/** Bytes of lines from the generator, from line `from`, up to `size`: returns the text and the next line number. */
function text(gen: (i: number) => string, from: number, size: number): { text: string; next: number } {
  const parts: string[] = [];
  let n = 0;
  let i = from;
  while (n < size) {
    const l = gen(i++) + "\n";
    parts.push(l);
    n += l.length;
  }
  return { text: parts.join(""), next: i };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number) => n.toFixed(2);
const root = mkdtempSync(join(values.dir ?? tmpdir(), "loop-bench-usage-"));
const rows: string[] = [];

function time(what: string, dir: string, source: Exclude<UsageSource, "gateway">, cursor: string | null, bytes: number, target: string): void {
  const ms: number[] = [];
  let figure = "";
  for (let r = 0; r < RUNS + 1; r++) {
    if (cursor !== null) writeFileSync(join(dir, USAGE_CURSOR), cursor);
    const t = performance.now();
    const got = readSessionUsage({ dir, source, final: false });
    const d = performance.now() - t;
    if (r > 0) ms.push(d); // the first run warms the JIT and the page cache
    figure = JSON.stringify(got.figure?.tokens ?? null);
  }
  rows.push(`| ${what} | ${fmt(bytes / MiB)} MiB | ${fmt(median(ms))} | ${fmt(Math.min(...ms))} | ${fmt(Math.max(...ms))} | ${ms.length} | ${target} |`);
  process.stderr.write(`${what}: ${figure}\n`);
}

try {
  for (const source of ["claude", "codex", "aider"] as const) {
    const dir = join(root, source);
    Bun.spawnSync(["mkdir", "-p", dir]);
    const log = join(dir, SESSION_FILES.output);
    const gen = generator(source);
    const first = text(gen, 0, 63 * MiB);
    writeFileSync(log, first.text);
    // The tick before: reads the 63 MiB (as the ticks before it would have, a piece at a time).
    const t = performance.now();
    readSessionUsage({ dir, source, final: false });
    rows.push(`| ${source}: the first read of a 63 MiB log (the ticks before, all at once) | 63.00 MiB | ${fmt(performance.now() - t)} | | | 1 | |`);
    const cursor = readFileSync(join(dir, USAGE_CURSOR), "utf8");
    const grown = text(gen, first.next, MiB);
    appendFileSync(log, grown.text);
    time(`${source}: a 64 MiB log that grew by 1 MiB`, dir, source, cursor, Buffer.byteLength(grown.text), "≤ 5 ms");
    time(`${source}: nothing new since the last tick`, dir, source, null, 0, "");
  }
  const dir = join(root, "file");
  Bun.spawnSync(["mkdir", "-p", dir]);
  let lines = "";
  for (let i = 1; i <= 20_000; i++) lines += JSON.stringify({ input_tokens: i * 10, output_tokens: i, usd: i / 1000 }) + "\n";
  writeFileSync(join(dir, SESSION_FILES.usage), lines);
  time(
    "usage file (20,000 lines): changed since the last tick",
    dir,
    "usage_file",
    JSON.stringify({ v: 1, source: "usage_file", ino: 0, size: 0, mtimeMs: 0, offset: 0, resync: false, lost: 0, state: null, file: null }),
    64 * 1024,
    "",
  );
  process.stdout.write(
    ["| usage read (in process) | read | median ms | min | max | runs | target |", "|---|---:|---:|---:|---:|---:|---|", ...rows].join("\n") + "\n",
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
