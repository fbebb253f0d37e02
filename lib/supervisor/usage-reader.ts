// What an attempt has used so far, read from its session folder (docs/spend.md): the presets' output
// log, parsed as it grows (lib/definition/usage-parsers.ts), or the file a command runner reports to
// (LOOP_USAGE_FILE). Like the stall clock (progress.ts), a small record in the session folder carries
// what was read from one observing tick to the next, so each tick reads only the output that is new:
// it counts the output in bytes as the agent wrote it, and goes on across the output cap's cuts
// (output-log.ts) from the same place in the new file. What a cut dropped before it was read is lost
// to the count (cumulative reports, claude's result and codex's turns, still give the whole figure).
//
// Only loop's own files are read: never through a link, never a FIFO, never another user's file,
// and never more than the cap of a line.
import { closeSync, fstatSync } from "node:fs";
import { join } from "node:path";
import { openOwnFile, readAt, readJsonOrNull, readRegularFile, writeFileAtomic } from "../shared/fsutil.ts";
import { cutOf, DEFAULT_OUTPUT_CAP, outputLayout } from "./output-log.ts";
import { SESSION_FILES } from "./session-wrapper.ts";
import { GATEWAY_FILES } from "./gateway-files.ts";
import {
  feedLines,
  figureOf,
  finishLines,
  initialState,
  type LogSource,
  noteOf,
  type ParseState,
  parseUsageFile,
  type UsageFigure,
} from "../definition/usage-parsers.ts";
import type { TokenCounts, UsageSource } from "../log/events.ts";

/** The record of what was read, beside the session's other files. */
export const USAGE_CURSOR = "usage.json";
/** Bytes read at a time; a line longer than MAX_LINE is skipped (and counted as unreadable). */
const CHUNK = 4 * 2 ** 20;
const MAX_LINE = 16 * 2 ** 20;
/** The end of a usage file that is read: the last complete line is the only one that counts. */
const FILE_TAIL = 64 * 1024;

interface Cursor {
  v: 1;
  source: UsageSource;
  /** The output log (or usage file) as last read: when all three are the same, nothing is read. */
  ino: number;
  size: number;
  mtimeMs: number;
  /** Output bytes consumed, counted as the agent wrote them (across cuts). */
  offset: number;
  /** The read resumes in the middle of a line (after a cut dropped output, or a line too long): skip to the next. */
  resync: boolean;
  /** Output bytes a cut dropped before they were read. */
  lost: number;
  state: ParseState | null;
  /** usage_file: what its last complete line said. */
  file: { figure: UsageFigure | null; note: string | null } | null;
}

export interface UsageRead {
  figure: UsageFigure | null;
  /** What could not be read, in words, or null. */
  note: string | null;
  /** Where the figure's dollars come from when the reader knows (the gateway's per-call prices); else the agent's, or none. */
  usdFrom?: "prices" | "agent";
  /** The figure is the session's gateway's (its tokens, whatever the CLI printed). */
  gateway?: true;
}

/**
 * What the session in `dir` has used so far. `final`: the session has ended, so its last line counts
 * even without a line break. `base`: what a resumed conversation's earlier attempts were recorded
 * as (lib/definition/usage-parsers.ts figureOf).
 */
export function readSessionUsage(o: {
  dir: string;
  source: Exclude<UsageSource, "gateway">;
  final: boolean;
  base?: { tokens: TokenCounts | null; microUsd: number | null } | null;
}): UsageRead {
  // Behind a gateway, the model API's own answers are the figure (docs/spend.md#the-gateway), whatever the CLI prints.
  const metered = readGatewayUsage(o.dir);
  const prior = cursorOf(o.dir, o.source);
  const own = () => (o.source === "usage_file" ? readFileSource(o.dir, prior) : readLogSource(o.dir, o.source, prior, o.final, o.base ?? null));
  if (!metered) return own();
  if (metered.figure!.microUsd !== null) return metered;
  // Some answer had no price: the CLI's own dollars (claude's total_cost_usd), if it printed them, over unknown.
  const cli = own().figure?.microUsd ?? null;
  return cli !== null ? { figure: { ...metered.figure!, microUsd: cli }, note: metered.note, usdFrom: "agent", gateway: true } : metered;
}

/** The sum of what the session's gateway metered (GATEWAY_FILES.usage), or null when it metered nothing (no gateway). */
function readGatewayUsage(dir: string): UsageRead | null {
  const r = readRegularFile(join(dir, GATEWAY_FILES.usage), { maxBytes: 256 * 2 ** 20, noLinks: true });
  if (r.kind !== "ok") return null;
  const tokens = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  let calls = 0;
  let microUsd = 0;
  const unpriced = new Set<string>();
  for (const line of r.bytes.toString("utf8").split("\n")) {
    let doc: { kind?: unknown; usage?: Record<string, unknown> };
    try {
      doc = JSON.parse(line);
    } catch {
      continue; // the last line while it is being written
    }
    if (doc?.kind !== "model" || !doc.usage) continue;
    calls++;
    const d = doc as { microUsd?: unknown; model?: unknown };
    if (typeof d.microUsd === "number" && Number.isSafeInteger(d.microUsd) && d.microUsd >= 0) microUsd += d.microUsd;
    else unpriced.add(typeof d.model === "string" ? d.model.slice(0, 200) : "(no model named)");
    for (const k of ["input", "output", "cacheRead", "cacheWrite"] as const) {
      const n = doc.usage[k];
      if (typeof n === "number" && Number.isSafeInteger(n) && n >= 0) tokens[k] += n;
    }
  }
  if (!calls) return null;
  if (unpriced.size === 0) return { figure: { tokens, microUsd, model: null }, note: null, usdFrom: "prices", gateway: true };
  // Named, so the operator can add the price under the model's exact spelling (docs/loop-json.md#prices).
  const names = [...unpriced]
    .sort()
    .slice(0, 5)
    .map((m) => JSON.stringify(m))
    .join(", ");
  return { figure: { tokens, microUsd: null, model: null }, note: `no price for ${names} (a price is found under the model's exact name)`, gateway: true };
}

function cursorOf(dir: string, source: UsageSource): Cursor | null {
  const c = readJsonOrNull<Cursor>(join(dir, USAGE_CURSOR));
  // A record of another shape (an older one, or not loop's) is read afresh.
  if (c?.v !== 1 || c.source !== source || typeof c.offset !== "number" || !Number.isSafeInteger(c.offset) || c.offset < 0) return null;
  return c;
}

function save(dir: string, c: Cursor): void {
  try {
    // Not synced: after a crash any whole version of the record is as good (its offset and the
    // parser's state go together), and none at all means reading the log again from its start.
    writeFileAtomic(join(dir, USAGE_CURSOR), JSON.stringify(c) + "\n", { sync: false });
  } catch {
    // Not recorded: the next tick reads the same output again and comes to the same figure.
  }
}

function readLogSource(
  dir: string,
  source: LogSource,
  prior: Cursor | null,
  final: boolean,
  base: { tokens: TokenCounts | null; microUsd: number | null } | null,
): UsageRead {
  const fresh: Cursor = { v: 1, source, ino: 0, size: 0, mtimeMs: 0, offset: 0, resync: false, lost: 0, state: initialState(source), file: null };
  const c: Cursor = prior ? { ...prior, state: prior.state ?? initialState(source) } : fresh;
  const opened = openOwnFile(join(dir, SESSION_FILES.output));
  if (opened.kind === "absent") return result(c, base, final && c.state ? finishLines(c.state, "") : c.state);
  if (opened.kind === "error") return { figure: c.offset > 0 ? figureOf(c.state!, base) : null, note: `its output log was not read: ${opened.message}` };
  try {
    const st = fstatSync(opened.fd);
    if (!final && prior && prior.ino === st.ino && prior.size === st.size && prior.mtimeMs === st.mtimeMs) return result(c, base, c.state);
    const read = readGrowth(join(dir, SESSION_FILES.output), opened.fd, st.size, c, capOf(dir));
    let state = read.state;
    if (final) state = finishLines(state, read.rest.toString("utf8"));
    // At the end the last line is consumed too: a second final read must not count it again.
    save(dir, {
      ...c,
      ino: st.ino,
      size: st.size,
      mtimeMs: st.mtimeMs,
      offset: read.offset + (final ? read.rest.length : 0),
      resync: read.resync,
      lost: read.lost,
      state,
    });
    return result({ ...c, lost: read.lost }, base, state);
  } finally {
    closeSync(opened.fd);
  }
}

function result(c: Cursor, base: { tokens: TokenCounts | null; microUsd: number | null } | null, state: ParseState | null): UsageRead {
  if (!state) return { figure: null, note: null };
  const parts = [noteOf(state), c.lost > 0 ? `${c.lost} bytes of its output were dropped by the output cap before they were read` : null].filter(
    (x): x is string => x !== null,
  );
  return { figure: figureOf(state, base), note: parts.length ? parts.join("; ") : null };
}

/** The output cap the session was launched with (its launch record), which says where its file is cut. */
function capOf(dir: string): number {
  const launch = readJsonOrNull<{ outputCap?: unknown }>(join(dir, SESSION_FILES.launch));
  return typeof launch?.outputCap === "number" && launch.outputCap > 0 ? launch.outputCap : DEFAULT_OUTPUT_CAP;
}

/**
 * Read the output after `c.offset` to the end of the file, whole lines into the parser. In a file the
 * cap has cut, output byte `offset` lies at `head + marker + (offset - head - dropped)`; output
 * between the offset and `head + dropped` is gone. `rest`: the start of a line not ended yet (read
 * again by the next tick, or taken as the last line at the session's end).
 */
function readGrowth(
  path: string,
  fd: number,
  size: number,
  c: Cursor,
  cap: number,
): { state: ParseState; offset: number; resync: boolean; lost: number; rest: Buffer } {
  const { head } = outputLayout(cap);
  // From the wrapper's record of its cuts: a marker the agent printed itself is output like any other.
  const marker = size > head ? cutOf(path, fd, head) : null;
  let { offset, resync, lost } = c;
  let state = c.state!;
  let rest: Buffer = Buffer.alloc(0);
  const jump = () => {
    lost += head + marker!.dropped - offset;
    offset = head + marker!.dropped;
    resync = true;
  };
  for (;;) {
    if (marker && offset >= head && offset < head + marker.dropped) jump();
    const inHead = marker !== null && offset < head;
    const pos = !marker || inHead ? offset : head + marker.length + (offset - head - marker.dropped);
    const end = inHead ? head : size;
    if (pos >= end) {
      rest = Buffer.alloc(0);
      break;
    }
    let buf: Buffer = readAt(fd, pos, Math.min(CHUNK, end - pos));
    if (buf.length === 0) break;
    if (resync) {
      const nl = buf.indexOf(10);
      if (nl < 0) {
        if (pos + buf.length < end) offset += buf.length;
        else if (inHead) jump();
        else {
          rest = Buffer.alloc(0);
          break;
        }
        continue;
      }
      offset += nl + 1;
      resync = false;
      continue;
    }
    let last = buf.lastIndexOf(10);
    if (last < 0 && buf.length < end - pos) {
      // A line longer than a chunk: read it whole, up to the longest line there can be.
      buf = readAt(fd, pos, Math.min(MAX_LINE + 1, end - pos));
      last = buf.indexOf(10);
      if (last < 0 && buf.length > MAX_LINE) {
        // No report is this long: skipped, and the read goes on at the next line.
        state = { ...state, unreadable: state.unreadable + 1 };
        offset += buf.length;
        resync = true;
        continue;
      }
    }
    if (last >= 0) {
      state = feedLines(state, buf.subarray(0, last + 1).toString("utf8"));
      offset += last + 1;
      continue;
    }
    // The end of what is there, in the middle of a line.
    if (inHead) {
      // The head ends mid-line: the rest of that line is what the cut dropped.
      jump();
      continue;
    }
    rest = buf;
    break;
  }
  return { state, offset, resync, lost, rest };
}

/** LOOP_USAGE_FILE: the last complete line of the file's end, read again only when the file changed. */
function readFileSource(dir: string, prior: Cursor | null): UsageRead {
  const path = join(dir, SESSION_FILES.usage);
  const opened = openOwnFile(path);
  if (opened.kind === "absent") return { figure: prior?.file?.figure ?? null, note: prior?.file?.note ?? null };
  if (opened.kind === "error") return { figure: prior?.file?.figure ?? null, note: `its usage file ${path} was not read: ${opened.message}` };
  try {
    const st = fstatSync(opened.fd);
    if (prior?.file && prior.ino === st.ino && prior.size === st.size && prior.mtimeMs === st.mtimeMs) return prior.file;
    const from = Math.max(0, st.size - FILE_TAIL);
    let text = readAt(opened.fd, from, st.size - from).toString("utf8");
    // Read from the middle of the file: its first line is only the end of one.
    if (from > 0) text = text.slice(text.indexOf("\n") + 1);
    const r = parseUsageFile(text);
    // A file whose last complete lines are no reports keeps the figure it last gave.
    const file = { figure: r.figure ?? prior?.file?.figure ?? null, note: r.note };
    save(dir, { v: 1, source: "usage_file", ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, offset: 0, resync: false, lost: 0, state: null, file });
    return file;
  } finally {
    closeSync(opened.fd);
  }
}
