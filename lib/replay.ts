// `loop replay`: re-fold the whole log and prove every stored thing agrees with it.
// Two passes over the events run side by side (the second in a worker thread on large logs):
// - integrity (lib/integrity.ts): seq gaps, the hash chain, and every payload against its schema;
// - the fold: each event folded into two independent projections, so nondeterminism in the reducer
//   shows up as a difference between them.
// Then the projection tables, state.json and terminal_state.json are compared with the fold.
import { readFileSync } from "node:fs";
import type { Database } from "bun:sqlite";
import type { StoredEvent } from "./events.ts";
import { emptyProjection, IllegalEventError, type Projection, reduceInto } from "./reducer.ts";
import { headOf, readItemRows, readLoopRow, type ReadSnapshot, withReadSnapshotAsync } from "./store.ts";
import { checkIntegrity, EVENT_COLUMNS, type EventRow, type IntegrityResult } from "./integrity.ts";
import type { IntegrityRequest } from "./integrity-worker.ts";
import { ITEM_TABLES, itemRows, loopRow } from "./rows.ts";
import { statePaths } from "./paths.ts";
import { jsonDiff, getPath } from "./diff.ts";
import { jsonText, stateDocument, terminalDocument } from "./materialize.ts";
import type { Finding } from "./status.ts";

export const FINDING_CODES = [
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
] as const;

/** Below this many events both passes run on the main thread: a worker costs more to start. */
export const WORKER_MIN_EVENTS = 20_000;

export interface FoldOutcome {
  /** The fold of the whole log, or null when folding stopped. */
  projection: Projection | null;
  /** Why folding stopped (an illegal event, the second fold disagreeing), or how the folds differ. */
  findings: (Finding & { rule?: string })[];
  /**
   * Folding stopped on something other than a broken rule: a payload that does not parse, or an
   * error thrown by the reducer. Payloads are validated by the integrity pass, so this must be an
   * event that pass reports as invalid, at or before this seq; anything else is a bug (mergeFindings).
   */
  crashed?: { seq: number; error: unknown };
}

/** Parse and fold every event twice. Stops at the first event it cannot fold. Reads only. */
export function foldLog(db: Database): FoldOutcome {
  const a = emptyProjection();
  const b = emptyProjection();
  const stop = (f: Finding & { rule?: string }): FoldOutcome => ({ projection: null, findings: [f] });
  for (const r of db.query(`SELECT ${EVENT_COLUMNS} FROM events ORDER BY seq`).iterate() as IterableIterator<EventRow>) {
    // Both folds get the same event: the reducer never changes its input, and if it did, the
    // second fold would see the change and disagree with the first.
    let e: StoredEvent;
    try {
      const payload = JSON.parse(r.payload);
      e = { seq: r.seq, id: r.id, ts: r.ts, type: r.type, actor: r.actor, item: r.item, payload, prev_hash: r.prev_hash, hash: r.hash } as StoredEvent;
      reduceInto(a, e);
    } catch (err) {
      if (!(err instanceof IllegalEventError)) return { projection: null, findings: [], crashed: { seq: r.seq, error: err } };
      return stop({ code: "illegal_event_sequence", seq: err.seq, message: err.message, rule: err.rule });
    }
    try {
      reduceInto(b, e);
    } catch (err) {
      return stop({ code: "nondeterministic_replay", seq: r.seq, message: `second fold rejected seq ${r.seq}: ${(err as Error).message}` });
    }
  }
  const ra = allRows(a);
  const rb = allRows(b);
  const findings: Finding[] = [];
  for (const [k, v] of ra) if (rb.get(k) !== v) findings.push({ code: "nondeterministic_replay", message: `two folds disagree on ${k}` });
  return { projection: findings.length ? null : a, findings };
}

/**
 * Both passes' findings in log order, and the fold if it stands. The fold ends at the first invalid
 * payload (what it did past that is discarded), and a broken chain already names the seq where the
 * reducer's own seq/prev_hash rules would fail, so those are not repeated.
 */
export function mergeFindings(integrity: IntegrityResult, fold: FoldOutcome): { findings: Finding[]; projection: Projection | null } {
  const at = (code: string) => Math.min(...integrity.findings.filter((f) => f.code === code).map((f) => f.seq ?? Infinity));
  const firstInvalid = at("invalid_event_payload");
  const firstChain = Math.min(at("event_chain_broken"), at("event_sequence_gap"));
  // The reducer trusts payload shapes, so an invalid one may make it throw; nothing else may.
  if (fold.crashed && fold.crashed.seq < firstInvalid) throw fold.crashed.error;
  const foldFindings = fold.findings
    .filter((f) => (f.seq ?? Infinity) < firstInvalid || (f.seq === undefined && firstInvalid === Infinity))
    .filter((f) => !(f.rule && ["seq_gap", "prev_hash"].includes(f.rule) && (f.seq ?? Infinity) >= firstChain))
    .map(({ rule: _rule, ...f }) => f);
  return {
    findings: [...integrity.findings, ...foldFindings].sort((x, y) => (x.seq ?? Infinity) - (y.seq ?? Infinity)),
    projection: firstInvalid === Infinity ? fold.projection : null,
  };
}

/** Both passes on this thread, one after the other (small logs, tests). */
export function foldAndCheck(db: Database): { events: number; findings: Finding[]; projection: Projection | null } {
  const fold = foldLog(db);
  const integrity = checkIntegrity(db);
  return { events: integrity.events, ...mergeFindings(integrity, fold) };
}

/** Run the integrity pass over the snapshot in a worker thread, beside the fold on this one. */
function integrityInWorker(open: ReadSnapshot["open"]): Promise<IntegrityResult> {
  // In the compiled binary the worker is an entry point of its own (scripts/build.ts), named from the root.
  const url = import.meta.url.includes("/$bunfs/") ? "./lib/integrity-worker.ts" : new URL("./integrity-worker.ts", import.meta.url).href;
  const worker = new Worker(url);
  return new Promise((resolve, reject) => {
    worker.onmessage = (e: MessageEvent<{ ok: true; result: IntegrityResult } | { ok: false; message: string; code?: string }>) => {
      void worker.terminate();
      if (e.data.ok) resolve(e.data.result);
      // The code lets withReadSnapshot retry an SQLite error caused by a writer moving the files.
      else reject(Object.assign(new Error(`replay's integrity pass: ${e.data.message}`), { code: e.data.code }));
    };
    worker.onerror = (e) => {
      void worker.terminate();
      reject(new Error(`replay's integrity pass: ${e.message}`));
    };
    worker.postMessage({ path: open.path, flags: open.flags } satisfies IntegrityRequest);
  });
}

function allRows(p: Projection): Map<string, string> {
  const m = new Map<string, string>();
  const lr = loopRow(p);
  m.set("proj_loop", `${lr.seq}|${lr.hash}|${lr.state}|${lr.body}|${lr.state_sha}`);
  for (const id of Object.keys(p.items)) {
    const rows = itemRows(p.items[id]!);
    for (const t of ITEM_TABLES) if (rows[t] !== null) m.set(`${t}[${id}]`, rows[t]!);
  }
  return m;
}

function describeRowDiff(stored: string, folded: string): string {
  try {
    const d = jsonDiff(JSON.parse(stored), JSON.parse(folded), "", [], 3);
    const a = JSON.parse(stored);
    const b = JSON.parse(folded);
    return d.map((path) => `${path}: ${JSON.stringify(getPath(a, path))} stored, ${JSON.stringify(getPath(b, path))} folded`).join("; ");
  } catch {
    return "row is not valid JSON";
  }
}

export function compareProjection(db: Database, p: Projection): Finding[] {
  const out: Finding[] = [];
  const lr = readLoopRow(db);
  const fl = loopRow(p);
  if (lr.seq !== fl.seq || lr.hash !== fl.hash)
    out.push({ code: "projection_mismatch", seq: lr.seq, message: `proj_loop is at seq ${lr.seq}, the fold at seq ${fl.seq}` });
  if (lr.state_sha !== fl.state_sha)
    out.push({ code: "projection_mismatch", message: `proj_loop.state_sha is ${lr.state_sha}, the fold's state.json hashes to ${fl.state_sha}` });
  if (lr.body !== fl.body || lr.state !== fl.state)
    out.push({ code: "projection_mismatch", message: `proj_loop differs: ${describeRowDiff(lr.body, fl.body)}` });
  const stored = readItemRows(db);
  const ids = new Set([...stored.keys(), ...Object.keys(p.items)]);
  for (const id of [...ids].sort()) {
    const folded = p.items[id] ? itemRows(p.items[id]!) : null;
    for (const t of ITEM_TABLES) {
      const s = stored.get(id)?.[t] ?? null;
      const f = folded?.[t] ?? null;
      if (s === f) continue;
      if (s === null) out.push({ code: "projection_mismatch", message: `${t}[${id}] is missing; the fold has it` });
      else if (f === null) out.push({ code: "projection_mismatch", message: `${t}[${id}] exists; the fold has no such row` });
      else out.push({ code: "projection_mismatch", message: `${t}[${id}] differs: ${describeRowDiff(s, f)}` });
    }
  }
  return out;
}

export function compareFiles(stateRoot: string, p: Projection): Finding[] {
  const paths = statePaths(stateRoot);
  const out: Finding[] = [];
  const state = readMaybe(paths.stateJson);
  const expected = stateDocument(p);
  if (state.kind === "absent") out.push({ code: "state_file_missing", message: "state.json is missing" });
  else if (state.kind === "error") out.push({ code: "unreadable_state_file", message: `state.json cannot be read: ${state.message}` });
  else if (state.text !== jsonText(expected)) {
    const parsed = tryParse(state.text);
    if (parsed.ok) {
      const diffs = jsonDiff(parsed.value, expected);
      for (const d of diffs)
        out.push({ code: "state_field_mismatch", message: `state.json ${d}: ${JSON.stringify(getPath(parsed.value, d))} on file, ${JSON.stringify(getPath(expected, d))} in the fold` });
      if (diffs.length === 0) out.push({ code: "state_field_mismatch", message: "state.json has the right values but not the canonical layout" });
    } else out.push({ code: "unreadable_state_file", message: `state.json is not valid JSON: ${parsed.message}` });
  }
  const term = readMaybe(paths.terminal);
  const expectedTerm = terminalDocument(p);
  if (term.kind === "error") {
    out.push({ code: "unreadable_terminal_file", message: `terminal_state.json cannot be read: ${term.message}` });
  } else if (term.kind === "absent") {
    if (expectedTerm)
      out.push({ code: "desynced_terminal_window", seq: p.loop.drainedSeq ?? undefined, message: "the loop is drained but terminal_state.json is missing" });
  } else {
    const parsed = tryParse(term.text);
    if (!parsed.ok) out.push({ code: "unreadable_terminal_file", message: `terminal_state.json is not valid JSON: ${parsed.message}` });
    else if (!expectedTerm)
      out.push({ code: "desynced_terminal_window", message: `terminal_state.json exists but the loop is ${p.loop.state}, not drained` });
    else if (term.text !== jsonText(expectedTerm)) {
      const diffs = jsonDiff(parsed.value, expectedTerm);
      out.push({ code: "terminal_state_mismatch", message: `terminal_state.json differs from the fold at ${diffs.join(", ") || "layout"}` });
    }
  }
  return out;
}

type MaybeFile = { kind: "absent" } | { kind: "error"; message: string } | { kind: "ok"; text: string };
function readMaybe(path: string): MaybeFile {
  try {
    return { kind: "ok", text: readFileSync(path, "utf8") };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === "ENOENT") return { kind: "absent" };
    return { kind: "error", message: e.message };
  }
}
function tryParse(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

export async function replayReport(stateRoot: string, opts: { worker?: boolean } = {}) {
  return withReadSnapshotAsync(stateRoot, async (snap) => {
    const { db } = snap;
    const head = headOf(db);
    const useWorker = opts.worker ?? head.seq >= WORKER_MIN_EVENTS;
    const pending = useWorker ? integrityInWorker(snap.open) : null;
    // Settle the promise either way, so a worker failure while the fold throws is not unhandled.
    pending?.catch(() => {});
    const fold = foldLog(db);
    const integrity = pending ? await pending : checkIntegrity(db);
    const { findings, projection } = mergeFindings(integrity, fold);
    const checks = { chain: "ok", legality: "ok", determinism: "ok", projection: "ok", files: "ok" };
    const has = (codes: string[]) => findings.some((f) => codes.includes(f.code));
    if (has(["event_chain_broken", "event_sequence_gap"])) checks.chain = "failed";
    if (has(["illegal_event_sequence", "invalid_event_payload"])) checks.legality = "failed";
    if (has(["nondeterministic_replay"])) checks.determinism = "failed";
    if (projection) {
      const pf = compareProjection(db, projection);
      if (pf.length) checks.projection = "failed";
      const ff = compareFiles(stateRoot, projection);
      if (ff.length) checks.files = "failed";
      findings.push(...pf, ...ff);
    } else {
      checks.determinism = checks.determinism === "ok" ? "skipped" : checks.determinism;
      checks.projection = "skipped";
      checks.files = "skipped";
    }
    return {
      schema: "loop/replay@1",
      ok: findings.length === 0,
      events: integrity.events,
      head,
      foldedTo: projection ? projection.seq : null,
      checks,
      findings,
    };
  });
}
export type ReplayReport = Awaited<ReturnType<typeof replayReport>>;
