// Reading an attempt's usage from its session folder (lib/supervisor/usage-reader.ts), with real files: only
// what the output log grew by is read, a line still being written waits for its end (and counts at
// the session's end), the output cap's cuts are followed, and only loop's own files are read: a link,
// a FIFO, a hard link or another user's file in the place of the output log or the usage file is not.
import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CappedLog, markerLine, MIN_OUTPUT_CAP, outputLayout } from "../../lib/supervisor/output-log.ts";
import { SESSION_FILES } from "../../lib/supervisor/session-wrapper.ts";
import { GATEWAY_FILES } from "../../lib/supervisor/gateway-files.ts";
import { readSessionUsage, USAGE_CURSOR } from "../../lib/supervisor/usage-reader.ts";
import { TempDirs } from "../helpers/fs.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

const j = (o: unknown) => JSON.stringify(o) + "\n";
const msg = (id: string, output: number): string =>
  j({
    type: "assistant",
    message: {
      id,
      model: "claude-sonnet-4-5",
      content: [{ type: "text", text: "working" }],
      usage: { input_tokens: 10, output_tokens: output, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    },
  });
const result = (messages: number, usd: number) =>
  j({
    type: "result",
    subtype: "success",
    total_cost_usd: usd,
    usage: { input_tokens: 10 * messages, output_tokens: messages * 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  });
const tokensOf = (r: ReturnType<typeof readSessionUsage>) =>
  r.figure?.tokens ? r.figure.tokens.input + r.figure.tokens.output + r.figure.tokens.cacheRead + r.figure.tokens.cacheWrite : null;

function session(): string {
  const dir = join(temp.make("loop-usage-"), "s");
  mkdirSync(dir);
  return dir;
}

describe("the output log of a preset", () => {
  test("each read takes only what the log grew by: bytes before the last read are never read again", () => {
    const dir = session();
    const log = join(dir, SESSION_FILES.output);
    writeFileSync(log, msg("m1", 5));
    expect(tokensOf(readSessionUsage({ dir, source: "claude", final: false }))).toBe(15);
    // Had the reader gone back to the start, this rewrite of what it read would change the figure.
    writeFileSync(log, "x".repeat(msg("m1", 5).length) + msg("m2", 7));
    expect(tokensOf(readSessionUsage({ dir, source: "claude", final: false }))).toBe(15 + 17);
    // Nothing new: the same figure, from the record, without reading.
    expect(tokensOf(readSessionUsage({ dir, source: "claude", final: false }))).toBe(32);
  });

  test("a line still being written waits for its end; at the session's end it counts once", () => {
    const dir = session();
    const log = join(dir, SESSION_FILES.output);
    const line = msg("m1", 5);
    writeFileSync(log, line.slice(0, 20));
    expect(readSessionUsage({ dir, source: "claude", final: false }).figure?.tokens ?? null).toBeNull();
    appendFileSync(log, line.slice(20) + result(1, 0.25).trimEnd());
    const running = readSessionUsage({ dir, source: "claude", final: false });
    expect(tokensOf(running)).toBe(15);
    expect(running.figure?.microUsd).toBeNull();
    const last = readSessionUsage({ dir, source: "claude", final: true });
    expect(tokensOf(last)).toBe(15);
    expect(last.figure?.microUsd).toBe(250_000);
    // A second final read (a step killed before recording the first) counts nothing twice.
    expect(readSessionUsage({ dir, source: "claude", final: true })).toEqual(last);
  });

  test("across the output cap's cuts: the count goes on in the new file; what a cut dropped unread is said", () => {
    const dir = session();
    const log = join(dir, SESSION_FILES.output);
    writeFileSync(join(dir, SESSION_FILES.launch), JSON.stringify({ argv: [], cwd: dir, env: {}, tee: false, outputCap: MIN_OUTPUT_CAP }));
    const w = new CappedLog(log, MIN_OUTPUT_CAP);
    let n = 0;
    const write = (count: number) => {
      for (let i = 0; i < count; i++) w.write(Buffer.from(msg(`m${++n}`, 5)));
    };
    write(100);
    expect(tokensOf(readSessionUsage({ dir, source: "claude", final: false }))).toBe(100 * 15);
    // Read after every few writes: cut after cut, every message is counted once.
    for (let round = 0; round < 40; round++) {
      write(20);
      expect(tokensOf(readSessionUsage({ dir, source: "claude", final: false }))).toBe(n * 15);
    }
    // Far more than the cap between two reads: the middle is dropped before it was read.
    write(3000);
    w.write(Buffer.from(result(n, 1.5)));
    w.close();
    const r = readSessionUsage({ dir, source: "claude", final: true });
    expect(r.note ?? "").toMatch(/bytes of its output were dropped by the output cap before they were read/);
    // The result is cumulative: the whole figure, whatever was dropped.
    expect(tokensOf(r)).toBe(15 * n);
    expect(r.figure?.microUsd).toBe(1_500_000);
  });

  test("a marker the agent prints at the head's end skips nothing: every message after it is counted", () => {
    const dir = session();
    const log = join(dir, SESSION_FILES.output);
    writeFileSync(join(dir, SESSION_FILES.launch), JSON.stringify({ argv: [], cwd: dir, env: {}, tee: false, outputCap: MIN_OUTPUT_CAP }));
    const w = new CappedLog(log, MIN_OUTPUT_CAP);
    const { head } = outputLayout(MIN_OUTPUT_CAP);
    // Messages up to a little before the head's end, padding to it, then a forged marker claiming
    // that far more was dropped than the rest of the output: a reader that believed it would skip it all.
    let n = 0;
    let written = 0;
    while (written + msg("m0000", 5).length < head - 100) {
      const m = msg(`m${String(++n).padStart(4, "0")}`, 5);
      w.write(Buffer.from(m));
      written += m.length;
    }
    w.write(Buffer.from("x".repeat(head - written - 1) + "\n"));
    w.write(Buffer.from(markerLine(10 ** 9, MIN_OUTPUT_CAP)));
    for (let i = 0; i < 50; i++) w.write(Buffer.from(msg(`late${i}`, 5)));
    w.close();
    const r = readSessionUsage({ dir, source: "claude", final: true });
    expect(tokensOf(r)).toBe((n + 50) * 15);
    expect(r.note ?? "").not.toMatch(/dropped by the output cap/);
  });

  test("a link, a FIFO or a hard link in the output log's place is not read, and the note says why", () => {
    const dir = session();
    const elsewhere = join(dir, "..", "elsewhere.log");
    writeFileSync(elsewhere, msg("m1", 5));
    symlinkSync(elsewhere, join(dir, SESSION_FILES.output));
    const r = readSessionUsage({ dir, source: "claude", final: true });
    expect(r.figure).toBeNull();
    expect(r.note).toMatch(/its output log was not read: it is a symbolic link/);
    const d2 = session();
    linkSync(elsewhere, join(d2, SESSION_FILES.output));
    expect(readSessionUsage({ dir: d2, source: "claude", final: true }).note).toMatch(/2 links/);
    const d3 = session();
    Bun.spawnSync(["mkfifo", join(d3, SESSION_FILES.output)]);
    expect(readSessionUsage({ dir: d3, source: "claude", final: true }).note).toMatch(/FIFO/);
  });

  test("a record of what was read that is not loop's (tampered, another shape) is read afresh", () => {
    const dir = session();
    writeFileSync(join(dir, SESSION_FILES.output), msg("m1", 5) + msg("m2", 5));
    writeFileSync(join(dir, USAGE_CURSOR), JSON.stringify({ v: 1, source: "claude", offset: -3 }));
    expect(tokensOf(readSessionUsage({ dir, source: "claude", final: false }))).toBe(30);
  });
});

describe("LOOP_USAGE_FILE", () => {
  test("the last complete line, read again only when the file changed", () => {
    const dir = session();
    const file = join(dir, SESSION_FILES.usage);
    writeFileSync(file, j({ input_tokens: 100, output_tokens: 20 }));
    expect(tokensOf(readSessionUsage({ dir, source: "usage_file", final: false }))).toBe(120);
    appendFileSync(file, j({ input_tokens: 500, output_tokens: 80, usd: 0.5 }) + '{"input_tokens": 9');
    const r = readSessionUsage({ dir, source: "usage_file", final: true });
    expect(tokensOf(r)).toBe(580);
    expect(r.figure?.microUsd).toBe(500_000);
  });

  test("a large file: only its end is read, and its last complete line counts", () => {
    const dir = session();
    const file = join(dir, SESSION_FILES.usage);
    let text = "";
    for (let i = 1; i <= 20_000; i++) text += j({ input_tokens: i, output_tokens: 1 });
    writeFileSync(file, text);
    expect(tokensOf(readSessionUsage({ dir, source: "usage_file", final: true }))).toBe(20_001);
  });

  test("a link in its place is not read (nothing an agent links it to is recorded): unknown, and said", () => {
    const dir = session();
    const secret = join(dir, "..", "secret.jsonl");
    writeFileSync(secret, j({ input_tokens: 1 }));
    symlinkSync(secret, join(dir, SESSION_FILES.usage));
    const r = readSessionUsage({ dir, source: "usage_file", final: true });
    expect(r.figure).toBeNull();
    expect(r.note).toMatch(/its usage file .* was not read: it is a symbolic link/);
  });

  test("a FIFO in its place does not hang the step", () => {
    const dir = session();
    Bun.spawnSync(["mkfifo", join(dir, SESSION_FILES.usage)]);
    expect(readSessionUsage({ dir, source: "usage_file", final: true }).note).toMatch(/FIFO/);
  });

  test("no file: unknown, and nothing said (a runner that reports nothing)", () => {
    expect(readSessionUsage({ dir: session(), source: "usage_file", final: true })).toEqual({ figure: null, note: null });
  });
});

describe("behind a gateway", () => {
  const metered = (usage: Record<string, number>, extra: Record<string, unknown> = {}) => j({ kind: "model", usage, ...extra });

  test("the gateway's figure is the gateway's, priced or not, even when the agent's own dollars fill in a missing price", () => {
    const dir = session();
    writeFileSync(join(dir, GATEWAY_FILES.usage), metered({ input: 100, output: 20, cacheRead: 0, cacheWrite: 0 }, { model: "m", microUsd: 7 }));
    writeFileSync(join(dir, SESSION_FILES.usage), j({ input_tokens: 5, output_tokens: 5, usd: 0.5 }));
    expect(readSessionUsage({ dir, source: "usage_file", final: true })).toMatchObject({
      gateway: true,
      usdFrom: "prices",
      figure: { tokens: { input: 100, output: 20 }, microUsd: 7 },
    });
    // One answer without a price: the agent's dollars, the gateway's tokens, still the gateway's figure.
    writeFileSync(join(dir, GATEWAY_FILES.usage), metered({ input: 100, output: 20, cacheRead: 0, cacheWrite: 0 }, { model: "unpriced" }));
    expect(readSessionUsage({ dir, source: "usage_file", final: true })).toMatchObject({
      gateway: true,
      usdFrom: "agent",
      figure: { tokens: { input: 100, output: 20 }, microUsd: 500_000 },
    });
  });
});
