// `loop replay`: re-fold the whole log and prove every stored thing agrees with it.
// Two passes over the events run side by side (the first in a worker thread on large logs):
// - integrity (lib/log/integrity.ts): seq gaps and the hash chain;
// - the fold: each payload validated against its schema and folded into two independent
//   projections, so nondeterminism in the reducer shows up as a difference between them.
// Then the projection tables, state.json and terminal_state.json are compared with the fold.
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { ownerOf, readRegularFile } from "../shared/fsutil.ts";
import type { Database } from "bun:sqlite";
import { payloadProblem, type StoredEvent } from "../log/events.ts";
import { emptyProjection, itemOf, type Projection, requireItem } from "../log/projection.ts";
import { IllegalEventError, UsageError } from "../shared/errors.ts";
import { reduceInto } from "../log/reducer.ts";
import { findLoopRow, headOf, type ReadSnapshot, withReadSnapshotAsync } from "../log/snapshot.ts";
import { checkIntegrity, type EventRow, type Finding, type IntegrityResult, REPLAY_FINDING_CODES, type ReplayFindingCode } from "../log/integrity.ts";
import type { IntegrityRequest } from "../log/integrity-worker.ts";
import { ITEM_TABLES, itemRow, loopRow } from "../log/rows.ts";
import { sha256Hex } from "../log/canonical.ts";
import { statePaths } from "../shared/paths.ts";
import { jsonDiff, getPath } from "./diff.ts";
import { jsonText, stateDocument, terminalDocument } from "../log/documents.ts";
import { RUNLOG_HEADER, runlogBlock } from "../log/materialize.ts";
import { noWorkYet, ownershipFinding, type ProjectIdentity } from "../log/ownership.ts";

/** The codes of replay's findings (docs/cli/loop-replay.md). */
export const FINDING_CODES = REPLAY_FINDING_CODES;
type ReplayFinding = Finding<ReplayFindingCode>;

type FoldRow = Pick<EventRow, "seq" | "ts" | "type" | "actor" | "item" | "payload">;
/** The hash a fold carries until the end: links are checked by the integrity pass, not read here. */
const UNREAD_HASH = "";

/** Below this many events both passes run on the main thread: a worker costs more to start. */
const WORKER_MIN_EVENTS = 20_000;

interface FoldOutcome {
  /** The fold of the whole log, or null when folding stopped. */
  projection: Projection | null;
  /** Why folding stopped (an invalid payload, an illegal event, the second fold disagreeing), or how the folds differ. */
  findings: (ReplayFinding & { rule?: string })[];
}

/**
 * Validate, parse and fold every event twice. Stops at the first event it cannot fold. Reads only.
 * The links between events (id, prev_hash, hash) are the integrity pass's to check; the fold takes
 * them as given and does not read them: a third of each row, on the pass that bounds replay's time.
 */
export function foldLog(db: Database, runlog?: RunlogCheck): FoldOutcome {
  const a = emptyProjection();
  const b = emptyProjection();
  const stop = (f: ReplayFinding & { rule?: string }): FoldOutcome => ({ projection: null, findings: [f] });
  const rows = db.query("SELECT seq, ts, type, actor, item, payload FROM events ORDER BY seq").iterate() as IterableIterator<FoldRow>;
  for (const r of rows) {
    let payload: unknown;
    try {
      payload = JSON.parse(r.payload);
    } catch {
      return stop({ code: "invalid_event_payload", seq: r.seq, message: `seq ${r.seq}: payload is not JSON` });
    }
    const problem = payloadProblem(r.type, payload);
    if (problem) return stop({ code: "invalid_event_payload", seq: r.seq, message: `seq ${r.seq} ${r.type}: ${problem}` });
    // Both folds get the same event: the reducer never changes its input, and if it did, the
    // second fold would see the change and disagree with the first. Its prev_hash is the folds'
    // own head, which the reducer's link rule then accepts; the hashes are set once at the end.
    const e = { seq: r.seq, id: "", ts: r.ts, type: r.type, actor: r.actor, item: r.item, payload, prev_hash: a.hash, hash: UNREAD_HASH } as StoredEvent;
    try {
      reduceInto(a, e);
    } catch (err) {
      if (!(err instanceof IllegalEventError)) throw err;
      return stop({ code: "illegal_event_sequence", seq: err.seq, message: err.message, rule: err.rule });
    }
    try {
      reduceInto(b, e);
    } catch (err) {
      return stop({ code: "nondeterministic_replay", seq: r.seq, message: `second fold rejected seq ${r.seq}: ${(err as Error).message}` });
    }
    if (runlog && (r.type === "item_settled" || r.type === "item_requeued")) runlog.feed(runlogBlock(e));
  }
  a.hash = b.hash = headOf(db).hash;
  const findings: ReplayFinding[] = disagreements(a, b).map((what) => ({ code: "nondeterministic_replay", message: `two folds disagree on ${what}` }));
  return { projection: findings.length ? null : a, findings };
}

/** Where two projections' rows differ (the loop row, then each item's rows), one row at a time. */
function disagreements(a: Projection, b: Projection): string[] {
  const out: string[] = [];
  const la = loopRow(a);
  const lb = loopRow(b);
  if (la.seq !== lb.seq || la.hash !== lb.hash || la.state !== lb.state || la.body !== lb.body) out.push("proj_loop");
  for (const id of new Set([...Object.keys(a.items), ...Object.keys(b.items)])) {
    const ia = itemOf(a, id);
    const ib = itemOf(b, id);
    for (const t of ITEM_TABLES) if ((ia ? itemRow(ia, t) : null) !== (ib ? itemRow(ib, t) : null)) out.push(`${t}[${id}]`);
  }
  return out;
}

/**
 * Both passes' findings in log order. A gap the integrity pass reports is where the reducer's own
 * seq rule stops the fold, so that is not repeated.
 */
function mergeFindings(integrity: IntegrityResult, fold: FoldOutcome): ReplayFinding[] {
  const firstChain = Math.min(...integrity.findings.map((f) => f.seq ?? Infinity));
  const foldFindings = fold.findings.filter((f) => !(f.rule === "seq_gap" && (f.seq ?? Infinity) >= firstChain)).map(({ rule: _rule, ...f }) => f);
  return [...integrity.findings, ...foldFindings].sort((x, y) => (x.seq ?? Infinity) - (y.seq ?? Infinity));
}

/** Both passes on this thread, one after the other (small logs, tests). */
export function foldAndCheck(db: Database): { events: number; findings: ReplayFinding[]; projection: Projection | null } {
  const fold = foldLog(db);
  const integrity = checkIntegrity(db);
  return { events: integrity.events, findings: mergeFindings(integrity, fold), projection: fold.projection };
}

/** Run the integrity pass over the snapshot in a worker thread, beside the fold on this one. */
function integrityInWorker(open: ReadSnapshot["open"]): { result: Promise<IntegrityResult>; stop(): void } {
  // In the compiled binary the worker is an entry point of its own (scripts/build.ts), named from the root.
  const url = import.meta.url.includes("/$bunfs/") ? "./lib/log/integrity-worker.ts" : new URL("../log/integrity-worker.ts", import.meta.url).href;
  const worker = new Worker(url);
  const result = new Promise<IntegrityResult>((resolve, reject) => {
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
  // Settled either way, so a worker failing while the fold throws is not an unhandled rejection.
  result.catch(() => {});
  return { result, stop: () => void worker.terminate() };
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

/**
 * The projection tables against the fold, row by row. Streamed, table by table, so that replay holds
 * the fold and one stored row at a time, not a second copy of every row.
 */
export function compareProjection(db: Database, p: Projection): ReplayFinding[] {
  const out: ReplayFinding[] = [];
  // A missing loop row is one more difference from the fold, reported beside the others (replay
  // reports what it finds; status, which reads from that row, cannot report and exits 2).
  const lr = findLoopRow(db);
  const fl = loopRow(p);
  if (!lr) out.push({ code: "projection_mismatch", message: "proj_loop has no row; the fold has one" });
  else {
    if (lr.seq !== fl.seq) out.push({ code: "projection_mismatch", seq: lr.seq, message: `proj_loop is at seq ${lr.seq}, the fold at seq ${fl.seq}` });
    else if (lr.hash !== fl.hash)
      out.push({ code: "projection_mismatch", seq: lr.seq, message: `proj_loop's hash at seq ${lr.seq} is not the log's hash of that event` });
    // "" until state.json is written; once recorded, it must name the fold's document (status trusts a file with that hash).
    if (lr.state_sha !== "") {
      const sha = sha256Hex(jsonText(stateDocument(p)));
      if (lr.state_sha !== sha)
        out.push({ code: "projection_mismatch", message: `proj_loop.state_sha is ${lr.state_sha}, the fold's state.json hashes to ${sha}` });
    }
    if (lr.body !== fl.body || lr.state !== fl.state)
      out.push({ code: "projection_mismatch", message: `proj_loop differs: ${describeRowDiff(lr.body, fl.body)}` });
  }
  const found: { id: string; message: string }[] = [];
  for (const t of ITEM_TABLES) {
    const seen = new Set<string>();
    for (const [id, stored] of db.query(`SELECT item, body FROM ${t}`).values() as [string, string][]) {
      seen.add(id);
      const it = itemOf(p, id);
      const folded = it ? itemRow(it, t) : null;
      if (folded === stored) continue;
      found.push({ id, message: folded === null ? `${t}[${id}] exists; the fold has no such row` : `${t}[${id}] differs: ${describeRowDiff(stored, folded)}` });
    }
    for (const id of Object.keys(p.items))
      if (!seen.has(id) && itemRow(requireItem(p, id), t) !== null) found.push({ id, message: `${t}[${id}] is missing; the fold has it` });
  }
  // By item, then table: the order a reader compares them in.
  const rank = new Map(ITEM_TABLES.map((t, i) => [t, i]));
  const tableOf = (m: string) => rank.get(m.slice(0, m.indexOf("[")) as (typeof ITEM_TABLES)[number]) ?? 0;
  found.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : tableOf(x.message) - tableOf(y.message)));
  for (const f of found) out.push({ code: "projection_mismatch", message: f.message });
  return out;
}

export function compareFiles(stateRoot: string, p: Projection): ReplayFinding[] {
  const paths = statePaths(stateRoot);
  const out: ReplayFinding[] = [];
  // Loop's own files, never followed: a link planted in their place is reported, not read. They
  // belong to whoever runs the loop, which may not be who reads the report (root, say).
  const owner = ownerOf(stateRoot);
  const state = readRegularFile(paths.stateJson, { noLinks: true, owner });
  const expected = stateDocument(p);
  if (state.kind === "absent") out.push({ code: "state_file_missing", message: "state.json is missing" });
  else if (state.kind === "error") out.push({ code: "unreadable_state_file", message: `state.json cannot be read: ${state.message}` });
  // Bytes, not decoded text: bytes that are not UTF-8 decode to U+FFFD, which the document may hold.
  else if (!state.bytes.equals(Buffer.from(jsonText(expected)))) {
    const parsed = tryParse(state.bytes.toString("utf8"));
    if (parsed.ok) {
      const diffs = jsonDiff(parsed.value, expected);
      for (const d of diffs)
        out.push({
          code: "state_field_mismatch",
          message: `state.json ${d}: ${JSON.stringify(getPath(parsed.value, d)) ?? "nothing"} on file, ${JSON.stringify(getPath(expected, d)) ?? "nothing"} in the fold`,
        });
      if (diffs.length === 0)
        out.push({ code: "state_field_mismatch", message: "state.json has the right values but not the exact bytes of the canonical document" });
    } else out.push({ code: "unreadable_state_file", message: `state.json is not valid JSON: ${parsed.message}` });
  }
  const term = readRegularFile(paths.terminal, { noLinks: true, owner });
  const expectedTerm = terminalDocument(p);
  if (term.kind === "error") {
    out.push({ code: "unreadable_terminal_file", message: `terminal_state.json cannot be read: ${term.message}` });
  } else if (term.kind === "absent") {
    if (expectedTerm)
      out.push({ code: "desynced_terminal_window", seq: p.loop.drainedSeq ?? undefined, message: "the loop is drained but terminal_state.json is missing" });
  } else {
    const parsed = tryParse(term.bytes.toString("utf8"));
    if (!parsed.ok) out.push({ code: "unreadable_terminal_file", message: `terminal_state.json is not valid JSON: ${parsed.message}` });
    else if (!expectedTerm) out.push({ code: "desynced_terminal_window", message: `terminal_state.json exists but the loop is ${p.loop.state}, not drained` });
    else if (!term.bytes.equals(Buffer.from(jsonText(expectedTerm)))) {
      const diffs = jsonDiff(parsed.value, expectedTerm);
      out.push({
        code: "terminal_state_mismatch",
        message: `terminal_state.json differs from the fold at ${diffs.join(", ") || "its bytes (the values agree)"}`,
      });
    }
  }
  return out;
}

/** How many of RUNLOG.md's blocks a replay names one by one. */
const RUNLOG_NAMED = 10;

/**
 * RUNLOG.md against the log, fed the blocks the log renders as the fold meets them. The file must be
 * those blocks in order, or the start of them: a torn last block or blocks not yet appended are a
 * crash's leftovers, which the next `loop run` repairs. While the file agrees, only a window of it
 * is in memory (the file grows forever); once it differs, `finish` reads it whole and names each
 * block that is not the log's (a forged "passed", one that says something else) or text outside
 * the blocks. A missing file is not a finding: the next step writes it whole, and it claims nothing.
 */
class RunlogCheck {
  private fd: number | null = null;
  private size = 0;
  private pos = 0;
  private buf = Buffer.alloc(0);
  private bufAt = 0;
  /** The file ended inside a block (torn) or before it: nothing after can be compared. */
  private ended = false;
  private diverged = false;
  private problem: string | null = null;

  constructor(private readonly path: string) {
    try {
      // Non-blocking: a FIFO in its place must not hang a read verb; it is then no regular file.
      this.fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
      const st = fstatSync(this.fd);
      if (!st.isFile()) throw Object.assign(new Error("not a regular file"), { code: "EFTYPE" });
      this.size = st.size;
    } catch (err) {
      if (this.fd !== null) closeSync(this.fd);
      this.fd = null;
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") this.problem = `RUNLOG.md cannot be read: ${(err as Error).message}`;
      return;
    }
    this.compare(Buffer.from(RUNLOG_HEADER));
  }

  /** The next block the log renders. */
  feed(block: string): void {
    if (this.fd !== null && !this.diverged && !this.ended) this.compare(Buffer.from(block));
  }

  private compare(want: Buffer): void {
    const have = this.read(want.length);
    if (have.equals(want)) return;
    if (have.length < want.length && want.subarray(0, have.length).equals(have)) this.ended = true;
    else this.diverged = true;
  }

  /** The next `n` bytes of the file (fewer at its end), through a window of at least 64 KiB. */
  private read(n: number): Buffer {
    if (this.pos + n > this.bufAt + this.buf.length) {
      const len = Math.min(Math.max(n, 64 * 1024), this.size - this.pos);
      this.buf = Buffer.alloc(Math.max(len, 0));
      readSync(this.fd!, this.buf, 0, this.buf.length, this.pos);
      this.bufAt = this.pos;
    }
    const from = this.pos - this.bufAt;
    const out = this.buf.subarray(from, Math.min(from + n, this.buf.length));
    this.pos += out.length;
    return out;
  }

  /** The findings, once the fold has fed every block. `db` renders a block the file names by its seq. */
  finish(db: Database): ReplayFinding[] {
    try {
      if (this.problem) return [{ code: "runlog_mismatch", message: this.problem }];
      if (this.fd === null || (!this.diverged && (this.ended || this.pos === this.size))) return [];
      return this.explain(db);
    } finally {
      if (this.fd !== null) closeSync(this.fd);
      this.fd = null;
    }
  }

  private explain(db: Database): ReplayFinding[] {
    const text = readFileSync(this.path, "utf8");
    if (!text.startsWith(RUNLOG_HEADER))
      return [
        { code: "runlog_mismatch", message: "RUNLOG.md does not start with the header loop writes: it is not the log's (the next loop run writes it anew)" },
      ];
    const render = db.query("SELECT seq, ts, type, actor, item, payload FROM events WHERE seq = ? AND type IN ('item_settled','item_requeued')");
    const heading = (block: string) => /^### (.*)$/m.exec(block)?.[1] ?? "";
    const out: ReplayFinding[] = [];
    let last = 0;
    for (const m of text.matchAll(/<!-- loop:seq=(\d+) -->\n[\s\S]*?<!-- \/loop:seq=\1 -->\n\n?/g)) {
      const seq = Number(m[1]);
      const block = m[0].endsWith("\n\n") ? m[0] : `${m[0]}\n`;
      const row = render.get(seq) as { seq: number; ts: string; type: string; actor: string; item: string | null; payload: string } | null;
      const want = row ? runlogBlock({ ...row, payload: JSON.parse(row.payload) }) : null;
      if (want === null)
        out.push({
          code: "runlog_mismatch",
          seq,
          message: `RUNLOG.md has a block for seq ${seq} ("${heading(block)}") that is not in the log: no decision was recorded at seq ${seq}`,
        });
      else if (block !== want)
        out.push({ code: "runlog_mismatch", seq, message: `RUNLOG.md's block for seq ${seq} ("${heading(block)}") is not the log's ("${heading(want)}")` });
      else if (seq <= last) out.push({ code: "runlog_mismatch", seq, message: `RUNLOG.md repeats the block for seq ${seq}, or has it out of order` });
      last = Math.max(last, seq);
    }
    if (out.length === 0)
      out.push({
        code: "runlog_mismatch",
        message: `RUNLOG.md differs from what the log renders after byte ${this.pos}: text outside its blocks, or a block missing between two others`,
      });
    if (out.length > RUNLOG_NAMED) {
      const more = out.length - RUNLOG_NAMED;
      out.splice(RUNLOG_NAMED, more, { code: "runlog_mismatch", message: `… and ${more} more blocks of RUNLOG.md that are not the log's` });
    }
    return out;
  }
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

/**
 * `project`: the project replay runs for (lib/log/ownership.ts); a store bound to another one is
 * reported as a finding. Undefined or null (run outside any repository): not compared.
 */
/** A head as replay prints it, `<seq>:<hash>`: what `--expect-head` takes. Throws UsageError when it is not one. */
export function parseHead(text: string): { seq: number; hash: string } {
  const m = /^(\d{1,15}):([0-9a-f]{64})$/.exec(text.trim());
  if (!m || Number(m[1]) < 1)
    throw new UsageError(
      `--expect-head must be <seq>:<hash> as loop replay prints the head (a seq from 1 and 64 lowercase hex digits), got ${JSON.stringify(text)}`,
    );
  return { seq: Number(m[1]), hash: m[2]! };
}

/**
 * The event at the anchor's seq must still hash to the anchor's hash. With the chain intact (the
 * integrity pass), that proves every event up to it is the one that was there when the anchor was
 * taken, whoever can write the file: the anchor was kept outside the machine.
 */
function checkAnchor(db: Database, anchor: { seq: number; hash: string }): ReplayFinding[] {
  const row = db.query("SELECT hash FROM events WHERE seq = ?").get(anchor.seq) as { hash: string } | null;
  const head = headOf(db);
  if (!row)
    return [
      {
        code: "head_mismatch",
        seq: anchor.seq,
        message: `the expected head is at seq ${anchor.seq}, but the log ends at seq ${head.seq}: events recorded since were removed, or this is another log`,
      },
    ];
  if (row.hash !== anchor.hash)
    return [
      {
        code: "head_mismatch",
        seq: anchor.seq,
        message: `the event at seq ${anchor.seq} has hash ${row.hash}, not the expected ${anchor.hash}: the log up to there was rewritten since the head was recorded, or this is another log`,
      },
    ];
  return [];
}

export async function replayReport(
  stateRoot: string,
  opts: { worker?: boolean; project?: ProjectIdentity | null; expectHead?: { seq: number; hash: string } | null } = {},
) {
  return withReadSnapshotAsync(stateRoot, async (snap) => {
    const { db } = snap;
    const head = headOf(db);
    const useWorker = opts.worker ?? head.seq >= WORKER_MIN_EVENTS;
    const worker = useWorker ? integrityInWorker(snap.open) : null;
    let fold: FoldOutcome;
    const runlog = new RunlogCheck(statePaths(stateRoot).runlog);
    let runlogFindings: ReplayFinding[];
    try {
      fold = foldLog(db, runlog);
    } catch (err) {
      worker?.stop();
      throw err;
    } finally {
      runlogFindings = runlog.finish(db);
    }
    const integrity = worker ? await worker.result : checkIntegrity(db);
    const findings = mergeFindings(integrity, fold);
    const projection = fold.projection;
    const checks = { chain: "ok", legality: "ok", determinism: "ok", projection: "ok", files: "ok" };
    const has = (codes: string[]) => findings.some((f) => codes.includes(f.code));
    if (has(["event_chain_broken", "event_sequence_gap"])) checks.chain = "failed";
    if (has(["illegal_event_sequence", "invalid_event_payload"])) checks.legality = "failed";
    if (has(["nondeterministic_replay"])) checks.determinism = "failed";
    if (projection) {
      const pf = compareProjection(db, projection);
      if (pf.length) checks.projection = "failed";
      const ff = [...compareFiles(stateRoot, projection), ...runlogFindings];
      if (ff.length) checks.files = "failed";
      findings.push(...pf, ...ff);
      const foreign = ownershipFinding(projection.loop.owner, opts.project ?? null, stateRoot, { renameFree: noWorkYet(projection) });
      if (foreign) findings.push(foreign);
    } else {
      checks.determinism = checks.determinism === "ok" ? "skipped" : checks.determinism;
      checks.projection = "skipped";
      checks.files = "skipped";
    }
    // Checked whether or not the fold got through: it needs only the stored hashes.
    const anchor = opts.expectHead ? { ...opts.expectHead, ok: true } : null;
    if (anchor) {
      const af = checkAnchor(db, anchor);
      anchor.ok = af.length === 0;
      findings.push(...af);
    }
    return {
      schema: "loop/replay@1",
      ok: findings.length === 0,
      events: integrity.events,
      head,
      expectedHead: anchor,
      foldedTo: projection ? projection.seq : null,
      owner: projection ? projection.loop.owner : null,
      checks,
      findings,
    };
  });
}
export type ReplayReport = Awaited<ReturnType<typeof replayReport>>;
