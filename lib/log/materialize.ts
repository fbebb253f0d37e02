// Materializations: files derived from the log for people and other tools, written after the
// commit with an atomic rename and rewritten by the next step if a crash cut one short. What
// state.json and terminal_state.json hold is lib/log/documents.ts; RUNLOG.md is rendered here.
import { closeSync, constants as fsConstants, existsSync, fstatSync, ftruncateSync, rmSync, writeSync } from "node:fs";
import { sha256Hex } from "./canonical.ts";
import { hashOwnFile, openOwnFile, readAt, readTextOrNull, writeFileAtomic as writeAtomic } from "../shared/fsutil.ts";
import type { Database } from "bun:sqlite";
import type { Projection } from "./projection.ts";
import { statePaths } from "../shared/paths.ts";
import { jsonText, stateDocument, terminalDocument } from "./documents.ts";
import { failpoint } from "../shared/failpoint.ts";

/**
 * What materializing reads and records: the store's database, its projection (read only when a file
 * must be rendered), and where to record the hash of the state.json written (Store does all three).
 */
interface MaterializeSource {
  readonly db: Database;
  projection(): Projection;
  /** Record that state.json, as of the projection at `seq`, is the text hashing to `sha` (proj_loop.state_sha). */
  recordStateSha(seq: number, sha: string): void;
}

/** Bring state.json, terminal_state.json and RUNLOG.md in line with the log. Returns what changed. */
export function materialize(stateRoot: string, src: MaterializeSource): string[] {
  const paths = statePaths(stateRoot);
  const changed: string[] = [];
  failpoint("materialize:before");
  // The projection's row records the sha256 of the state.json last written from it (none since
  // its last change: ""): a current file costs one hash, and no item is read or rendered.
  const row = src.db.query("SELECT seq, state, state_sha FROM proj_loop WHERE id = 1").get() as { seq: number; state: string; state_sha: string } | null;
  // Its bytes are hashed as they are read, in chunks; the file is read whole only when it is not
  // current. Never through a link (an agent's, to a file outside): such a state.json is rewritten in
  // place of the link.
  const current = row !== null && row.state_sha !== "" && hashOwnFile(paths.stateJson) === row.state_sha;
  if (!current) {
    const p = src.projection();
    const state = jsonText(stateDocument(p));
    if (readTextOrNull(paths.stateJson, { noLinks: true }) !== state) {
      writeAtomic(paths.stateJson, state);
      changed.push("state.json");
    }
    // After the file: killed in between, the next materialization finds the text right and records it.
    src.recordStateSha(p.seq, sha256Hex(state));
  }
  failpoint("materialize:after_state");
  // Present exactly while the loop is drained: only then is the projection read to render it.
  const term = row?.state === "drained" ? terminalDocument(src.projection()) : null;
  if (term) {
    const text = jsonText(term);
    if (readTextOrNull(paths.terminal, { noLinks: true }) !== text) {
      writeAtomic(paths.terminal, text);
      changed.push("terminal_state.json");
    }
  } else if (existsSync(paths.terminal)) {
    rmSync(paths.terminal);
    changed.push("terminal_state.json");
  }
  if (repairRunlog(paths.runlog, src.db)) changed.push("RUNLOG.md");
  return changed;
}

// RUNLOG.md ------------------------------------------------------------------------------------
// One block per decided attempt (an item_requeued after a failure, or an item_settled), in log
// order. Each block is fenced by seq markers, so a repair keeps every complete block, drops a
// torn tail and appends what is missing: append-only and idempotent.

const END_OPEN = "<!-- /loop:seq=";
const END_CLOSE = " -->\n";
/** How much of RUNLOG.md's end is read to find the last complete block (the file grows forever). */
const TAIL_BYTES = 256 * 1024;

// biome-ignore lint/suspicious/noExplicitAny: a payload of any event type, written as JSON
export function runlogBlock(e: { seq: number; ts: string; type: string; actor: string; item: string | null; payload: any }): string {
  const pl = e.payload;
  const what = e.type === "item_settled" ? pl.outcome : `requeued`;
  const attempt = pl.attempt > 0 ? ` · attempt ${pl.attempt}` : "";
  return (
    `<!-- loop:seq=${e.seq} -->\n` +
    `### ${e.item}${attempt} · ${what}\n\n` +
    `- at: ${e.ts} (seq ${e.seq}, by ${e.actor})\n` +
    `- reason: ${String(pl.reason).replace(/\n/g, " ")}\n` +
    `<!-- /loop:seq=${e.seq} -->\n\n`
  );
}

export const RUNLOG_HEADER = "# RUNLOG\n\nOne block per decided attempt, appended by `loop run`. Generated from the event log; do not edit.\n\n";

export function repairRunlog(path: string, db: Database): boolean {
  // Only loop's own file is read and appended to: a link in its place is never followed, and a FIFO
  // (which would hang every `loop run` and `loop ctl` holding the lease) is never opened. Either is
  // replaced by a RUNLOG written anew, like a missing or foreign one.
  const opened = openOwnFile(path, fsConstants.O_RDWR);
  const fd = opened.kind === "ok" ? opened.fd : null;
  try {
    let found = fd === null ? null : lastCompleteBlock(fd);
    // The last block must be the log's: a block someone appended (a forged "passed", or a seq beyond
    // the log's decisions) would otherwise stand, and hold back every block up to its seq. The file is
    // then written anew from the log. (loop replay compares every block: lib/reports/replay.ts.)
    if (fd !== null && found && found.lastSeq > 0 && !lastBlockIsTheLogs(fd, found, db)) found = null;
    const rows = db
      .query("SELECT seq, ts, type, actor, item, payload FROM events WHERE seq > ? AND type IN ('item_settled','item_requeued') ORDER BY seq")
      .all(found?.lastSeq ?? 0) as RunlogEventRow[];
    const add = rows.map((r) => runlogBlock({ ...r, payload: JSON.parse(r.payload) })).join("");
    if (!found || fd === null) {
      // Missing or foreign: written anew from the log (atomic).
      writeAtomic(path, RUNLOG_HEADER + add);
      return true;
    }
    if (found.keepBytes < found.size) ftruncateSync(fd, found.keepBytes); // a torn tail from a crash
    const text = Buffer.from((found.blankMissing ? "\n" : "") + add);
    for (let off = 0; off < text.length; ) off += writeSync(fd, text, off, text.length - off, found.keepBytes + off);
    return text.length > 0 || found.keepBytes < found.size;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

type RunlogEventRow = { seq: number; ts: string; type: string; actor: string; item: string | null; payload: string };

/** Is the last complete block of the file the block the log renders for its seq? */
function lastBlockIsTheLogs(fd: number, found: { lastSeq: number; blockStart: number; keepBytes: number }, db: Database): boolean {
  const row = db
    .query("SELECT seq, ts, type, actor, item, payload FROM events WHERE seq = ? AND type IN ('item_settled','item_requeued')")
    .get(found.lastSeq) as RunlogEventRow | null;
  if (!row || found.blockStart < 0) return false;
  const want = Buffer.from(runlogBlock({ ...row, payload: JSON.parse(row.payload) }));
  const buf = readAt(fd, found.blockStart, found.keepBytes - found.blockStart);
  // The kept bytes may lack the block's closing blank line (a torn write): repair adds it back.
  return buf.equals(want) || buf.equals(want.subarray(0, want.length - 1));
}

/**
 * The end of the last complete block of RUNLOG.md, read from the file's tail only: its seq, where it
 * opens and the byte length to keep. Null when the file is not a RUNLOG (then it is rewritten).
 */
function lastCompleteBlock(fd: number): { lastSeq: number; keepBytes: number; size: number; blankMissing: boolean; blockStart: number } | null {
  const size = fstatSync(fd).size;
  const head = readAt(fd, 0, Math.min(size, RUNLOG_HEADER.length));
  if (head.toString("utf8") !== RUNLOG_HEADER) return null;
  for (let window = TAIL_BYTES; ; window *= 4) {
    const start = Math.max(RUNLOG_HEADER.length, size - window);
    const buf = readAt(fd, start, size - start);
    for (let at = buf.lastIndexOf(END_OPEN); at >= 0; at = at > 0 ? buf.lastIndexOf(END_OPEN, at - 1) : -1) {
      const close = buf.indexOf(END_CLOSE, at);
      const digits = close < 0 ? "" : buf.toString("latin1", at + END_OPEN.length, close);
      if (!/^\d+$/.test(digits)) continue; // a marker cut short: look further back
      let end = close + END_CLOSE.length;
      const blankMissing = buf[end] !== 0x0a; // each block ends with a blank line
      if (!blankMissing) end += 1;
      // Where the block opens (its marker names the same seq); -1 when it is not in this window.
      const opened = buf.lastIndexOf(`<!-- loop:seq=${digits} -->\n`, at);
      return { lastSeq: Number(digits), keepBytes: start + end, size, blankMissing, blockStart: opened < 0 ? -1 : start + opened };
    }
    if (start === RUNLOG_HEADER.length) return { lastSeq: 0, keepBytes: RUNLOG_HEADER.length, size, blankMissing: false, blockStart: RUNLOG_HEADER.length };
  }
}
