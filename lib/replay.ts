// `loop replay`: re-fold the whole log and prove every stored thing agrees with it.
// One pass over the events checks the hash chain and gaps, and folds each event into two
// independent projections (each from its own parse of the payload), so nondeterminism in the
// reducer shows up as a difference between them. Then the projection tables, state.json and
// terminal_state.json are compared with the fold.
import { readFileSync } from "node:fs";
import type { Database } from "bun:sqlite";
import { GENESIS_HASH, payloadProblem, type StoredEvent } from "./events.ts";
import { emptyProjection, IllegalEventError, type Projection, reduceInto } from "./reducer.ts";
import { hashInput, headOf, iterateEvents, readItemRows, readLoopRow, withReadSnapshot } from "./store.ts";
import { ITEM_TABLES, itemRows, loopRow } from "./rows.ts";
import { sha256Hex } from "./canonical.ts";
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

export interface FoldResult {
  events: number;
  head: { seq: number; hash: string };
  findings: Finding[];
  /** The fold, or null when the log could not be folded to its end. */
  projection: Projection | null;
}

/** Check chain and legality while folding twice. Pure with respect to the store (reads only). */
export function foldAndCheck(db: Database): FoldResult {
  const findings: Finding[] = [];
  const a = emptyProjection();
  const b = emptyProjection();
  let folding = true;
  let chainOk = true;
  let expectSeq = 1;
  let prevHash = GENESIS_HASH;
  let n = 0;
  for (const r of iterateEvents(db)) {
    n++;
    if (r.seq !== expectSeq) {
      findings.push({
        code: "event_sequence_gap",
        seq: r.seq,
        message: r.seq > expectSeq ? `seq ${expectSeq}..${r.seq - 1} missing before seq ${r.seq}` : `seq ${r.seq} out of order`,
      });
      chainOk = false;
    }
    if (chainOk || findings.every((f) => f.code !== "event_chain_broken")) {
      const computed = Bun.SHA256.hash(hashInput(r, r.payload), "hex");
      if (computed !== r.hash || r.prev_hash !== prevHash) {
        if (!findings.some((f) => f.code === "event_chain_broken"))
          findings.push({
            code: "event_chain_broken",
            seq: r.seq,
            message:
              computed !== r.hash
                ? `seq ${r.seq}: stored hash does not match its contents`
                : `seq ${r.seq}: prev_hash does not link to seq ${r.seq - 1}`,
          });
        chainOk = false;
      }
    }
    prevHash = r.hash;
    expectSeq = r.seq + 1;
    if (!folding) continue;
    let ea: StoredEvent, eb: StoredEvent;
    try {
      ea = { ...r, type: r.type as StoredEvent["type"], payload: JSON.parse(r.payload) };
      eb = { ...r, type: r.type as StoredEvent["type"], payload: JSON.parse(r.payload) };
    } catch (err) {
      findings.push({ code: "invalid_event_payload", seq: r.seq, message: `seq ${r.seq}: payload is not JSON` });
      folding = false;
      continue;
    }
    const problem = payloadProblem(r.type, ea.payload);
    if (problem) {
      findings.push({ code: "invalid_event_payload", seq: r.seq, message: `seq ${r.seq} ${r.type}: ${problem}` });
      folding = false;
      continue;
    }
    try {
      reduceInto(a, ea);
    } catch (err) {
      if (!(err instanceof IllegalEventError)) throw err;
      // A broken chain already names this seq; the reducer's own seq/prev_hash rules would repeat it.
      if (!(["seq_gap", "prev_hash"].includes(err.rule) && !chainOk))
        findings.push({ code: "illegal_event_sequence", seq: err.seq, message: err.message });
      folding = false;
      continue;
    }
    try {
      reduceInto(b, eb);
    } catch (err) {
      findings.push({ code: "nondeterministic_replay", seq: r.seq, message: `second fold rejected seq ${r.seq}: ${(err as Error).message}` });
      folding = false;
    }
  }
  if (folding) {
    const ra = allRows(a);
    const rb = allRows(b);
    for (const [k, v] of ra)
      if (rb.get(k) !== v) findings.push({ code: "nondeterministic_replay", message: `two folds disagree on ${k}` });
  }
  return { events: n, head: headOf(db), findings, projection: folding ? a : null };
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

export function replayReport(stateRoot: string) {
  return withReadSnapshot(stateRoot, ({ db }) => {
    const fold = foldAndCheck(db);
    const findings = [...fold.findings];
    const checks = { chain: "ok", legality: "ok", determinism: "ok", projection: "ok", files: "ok" };
    const has = (codes: string[]) => findings.some((f) => codes.includes(f.code));
    if (has(["event_chain_broken", "event_sequence_gap"])) checks.chain = "failed";
    if (has(["illegal_event_sequence", "invalid_event_payload"])) checks.legality = "failed";
    if (has(["nondeterministic_replay"])) checks.determinism = "failed";
    if (fold.projection) {
      const pf = compareProjection(db, fold.projection);
      if (pf.length) checks.projection = "failed";
      const ff = compareFiles(stateRoot, fold.projection);
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
      events: fold.events,
      head: fold.head,
      foldedTo: fold.projection ? fold.projection.seq : null,
      checks,
      findings,
    };
  });
}
export type ReplayReport = ReturnType<typeof replayReport>;
