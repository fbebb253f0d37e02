// Materializations: files derived from the log for people and other tools, written after the
// commit with an atomic rename and rewritten by the next step if a crash cut one short. What
// state.json and terminal_state.json hold is lib/log/documents.ts; RUNLOG.md is rendered here.
import { appendFileSync, closeSync, existsSync, fstatSync, openSync, readSync, rmSync, truncateSync } from "node:fs";
import { sha256Hex } from "./canonical.ts";
import { hashFile, readTextOrNull, writeFileAtomic as writeAtomic } from "../shared/fsutil.ts";
import type { Database } from "bun:sqlite";
import type { Projection } from "./reducer.ts";
import { statePaths } from "../shared/paths.ts";
import { jsonText, stateDocument, terminalDocument } from "./documents.ts";
import { failpoint } from "../shared/failpoint.ts";

/**
 * What materializing reads and records: the store's database, its projection (read only when a file
 * must be rendered), and where to record the hash of the state.json written (Store does all three).
 */
export interface MaterializeSource {
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
  // Its bytes are hashed as they are read, in chunks; the file is read whole only when it is not current.
  const current = row !== null && row.state_sha !== "" && hashFile(paths.stateJson) === row.state_sha;
  if (!current) {
    const p = src.projection();
    const state = jsonText(stateDocument(p));
    if (readTextOrNull(paths.stateJson) !== state) {
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
    if (readTextOrNull(paths.terminal) !== text) {
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

const HEADER = "# RUNLOG\n\nOne block per decided attempt, appended by `loop run`. Generated from the event log; do not edit.\n\n";

export function repairRunlog(path: string, db: Database): boolean {
  const found = lastCompleteBlock(path);
  const rows = db
    .query("SELECT seq, ts, type, actor, item, payload FROM events WHERE seq > ? AND type IN ('item_settled','item_requeued') ORDER BY seq")
    .all(found?.lastSeq ?? 0) as { seq: number; ts: string; type: string; actor: string; item: string | null; payload: string }[];
  const add = rows.map((r) => runlogBlock({ ...r, payload: JSON.parse(r.payload) })).join("");
  if (!found) {
    // Missing or foreign: written anew from the log (atomic).
    writeAtomic(path, HEADER + add);
    return true;
  }
  if (found.keepBytes < found.size) truncateSync(path, found.keepBytes); // a torn tail from a crash
  const text = (found.blankMissing ? "\n" : "") + add;
  if (text) appendFileSync(path, text);
  return text !== "" || found.keepBytes < found.size;
}

/**
 * The end of the last complete block of RUNLOG.md, read from the file's tail only: its seq and the
 * byte length to keep. Null when the file is missing or is not a RUNLOG (then it is rewritten).
 */
function lastCompleteBlock(path: string): { lastSeq: number; keepBytes: number; size: number; blankMissing: boolean } | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    const head = Buffer.alloc(Math.min(size, HEADER.length));
    readSync(fd, head, 0, head.length, 0);
    if (head.toString("utf8") !== HEADER) return null;
    for (let window = TAIL_BYTES; ; window *= 4) {
      const start = Math.max(HEADER.length, size - window);
      const buf = Buffer.alloc(size - start);
      readSync(fd, buf, 0, buf.length, start);
      for (let at = buf.lastIndexOf(END_OPEN); at >= 0; at = at > 0 ? buf.lastIndexOf(END_OPEN, at - 1) : -1) {
        const close = buf.indexOf(END_CLOSE, at);
        const digits = close < 0 ? "" : buf.toString("latin1", at + END_OPEN.length, close);
        if (!/^\d+$/.test(digits)) continue; // a marker cut short: look further back
        let end = close + END_CLOSE.length;
        const blankMissing = buf[end] !== 0x0a; // each block ends with a blank line
        if (!blankMissing) end += 1;
        return { lastSeq: Number(digits), keepBytes: start + end, size, blankMissing };
      }
      if (start === HEADER.length) return { lastSeq: 0, keepBytes: HEADER.length, size, blankMissing: false };
    }
  } finally {
    closeSync(fd);
  }
}
