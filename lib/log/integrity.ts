// The checks every event row passes on its own: seq order and the hash chain (its stored hash
// against its contents, its prev_hash against the row before). Neither needs the fold, so
// `loop replay` runs them in a worker thread beside it (lib/log/integrity-worker.ts), and this module
// keeps to what that thread needs. Payloads are validated by the fold, which parses them anyway.
import type { Database } from "bun:sqlite";
import { GENESIS_HASH } from "./canonical.ts";

/** The codes of `loop replay`'s findings (docs/cli/loop-replay.md). */
export const REPLAY_FINDING_CODES = [
  "event_chain_broken",
  "event_sequence_gap",
  "illegal_event_sequence",
  "invalid_event_payload",
  "nondeterministic_replay",
  "projection_mismatch",
  "state_file_missing",
  "unreadable_state_file",
  "state_field_mismatch",
  "desynced_terminal_window",
  "terminal_state_mismatch",
  "unreadable_terminal_file",
  "foreign_store",
  "runlog_mismatch",
  "head_mismatch",
] as const;
/** The codes of `loop status`'s findings (docs/cli/loop-status.md). */
export const STATUS_FINDING_CODES = [
  "projection_behind",
  "projection_ahead",
  "projection_hash_mismatch",
  "state_file_missing",
  "unreadable_state_file",
  "state_field_mismatch",
  "foreign_store",
  "disk_full",
  "store_locked",
  "owned_ref_changed",
] as const;
export type ReplayFindingCode = (typeof REPLAY_FINDING_CODES)[number];
export type StatusFindingCode = (typeof STATUS_FINDING_CODES)[number];

/**
 * One thing a read verb found wrong: a stable code, the event it concerns, and plain words. Each
 * verb's findings are typed by its own list of codes, so a code no page documents does not compile.
 */
export interface Finding<C extends string = ReplayFindingCode | StatusFindingCode> {
  code: C;
  seq?: number;
  message: string;
}

/** Every column of an event row but the payload and the hash. */
export type EventRowBase = { seq: number; id: string; ts: string; type: string; actor: string; item: string | null; prev_hash: string };

export interface EventRow extends EventRowBase {
  payload: string;
  hash: string;
}

/** The exact text every event hash is computed over: canonical JSON of all other columns. */
export function hashInput(r: EventRowBase, payloadText: string): string {
  // Same bytes as canonicalJson({actor,id,item,payload,prev_hash,seq,ts,type}) once payloadText is
  // canonical and the strings were checked by canonicalJson at append; built by hand for replay speed.
  return (
    `{"actor":${JSON.stringify(r.actor)},"id":${JSON.stringify(r.id)},"item":${r.item === null ? "null" : JSON.stringify(r.item)}` +
    `,"payload":${payloadText},"prev_hash":${JSON.stringify(r.prev_hash)},"seq":${r.seq},"ts":${JSON.stringify(r.ts)},"type":${JSON.stringify(r.type)}}`
  );
}

export const EVENT_COLUMNS = "seq, id, ts, type, actor, item, payload, prev_hash, hash";

export interface IntegrityResult {
  /** Rows read. */
  events: number;
  /** In log order: every gap or disorder in seq, and the first row whose hash or link is wrong (every later row is suspect). */
  findings: Finding<ReplayFindingCode>[];
}

/** Check seqs and the hash chain of the whole log, in one pass over the rows. Reads only. */
export function checkIntegrity(db: Database): IntegrityResult {
  const findings: Finding<ReplayFindingCode>[] = [];
  let broken = false;
  let expectSeq = 1;
  let prevHash = GENESIS_HASH;
  let n = 0;
  // A cursor: one row in memory at a time, whatever the length of the log.
  for (const r of db.query(`SELECT ${EVENT_COLUMNS} FROM events ORDER BY seq`).iterate() as IterableIterator<EventRow>) {
    n++;
    if (r.seq !== expectSeq)
      findings.push({
        code: "event_sequence_gap",
        seq: r.seq,
        message: r.seq > expectSeq ? `seq ${expectSeq}..${r.seq - 1} missing before seq ${r.seq}` : `seq ${r.seq} out of order`,
      });
    if (!broken) {
      const contentsOk = Bun.SHA256.hash(hashInput(r, r.payload), "hex") === r.hash;
      if (!contentsOk || r.prev_hash !== prevHash) {
        findings.push({
          code: "event_chain_broken",
          seq: r.seq,
          message: !contentsOk ? `seq ${r.seq}: stored hash does not match its contents` : `seq ${r.seq}: prev_hash does not link to seq ${r.seq - 1}`,
        });
        broken = true;
      }
    }
    prevHash = r.hash;
    expectSeq = r.seq + 1;
  }
  return { events: n, findings };
}
