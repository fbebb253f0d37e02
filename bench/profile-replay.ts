#!/usr/bin/env bun
// bench/profile-replay.ts — where does `loop replay` spend its time? Not a benchmark of the binary:
// it re-runs the phases of lib/replay.ts in-process on a generated root and times them.
//
//   bun bench/profile-replay.ts --root DIR [--passes 3]
//
// The fold loop is timed as cumulative passes over the whole log (each pass adds one phase to the
// previous one, so a phase's cost is the difference between two passes), which keeps timer calls out
// of the per-event path. The fixed phases (open, compare tables, compare files) are timed directly,
// and the complete replayReport() is timed last as the reference.
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Database } from "bun:sqlite";
import { payloadProblem, type StoredEvent } from "../lib/events.ts";
import { emptyProjection, reduceInto } from "../lib/reducer.ts";
import { compareFiles, compareProjection, foldAndCheck, replayReport } from "../lib/replay.ts";
import { ITEM_TABLES, itemRows, loopRow } from "../lib/rows.ts";
import { type EventRow, hashInput, headOf, iterateEvents, withReadSnapshot } from "../lib/store.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { root: { type: "string" }, passes: { type: "string" } },
  strict: true,
});
if (!values.root) {
  process.stderr.write("usage: bun bench/profile-replay.ts --root DIR [--passes 3]\n");
  process.exit(2);
}
const stateRoot = join(resolve(values.root), ".loop");
const PASSES = Number(values.passes ?? 3);

function best(fn: () => unknown): number {
  let b = Infinity;
  for (let i = 0; i < PASSES; i++) {
    Bun.gc(true);
    const t = performance.now();
    fn();
    b = Math.min(b, performance.now() - t);
  }
  return b;
}

const rows: [string, number, string][] = [];
const add = (name: string, ms: number, note = "") => rows.push([name, ms, note]);

withReadSnapshot(stateRoot, ({ db }) => {
  const N = headOf(db).seq;
  const perEv = (ms: number) => `${((ms * 1000) / N).toFixed(2)} µs/event`;
  process.stderr.write(`profiling ${N} events, best of ${PASSES} passes each\n`);

  // --- reading the log, four ways -----------------------------------------------------------
  const SQL = "SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events";
  const tGen = best(() => {
    let n = 0;
    for (const r of iterateEvents(db)) n += r.seq;
    return n;
  });
  add("read: iterateEvents() generator (as replay does)", tGen, perEv(tGen));
  const tIter = best(() => {
    let n = 0;
    for (const r of db.query(`${SQL} WHERE seq >= ? ORDER BY seq`).iterate(1) as IterableIterator<EventRow>) n += r.seq;
    return n;
  });
  add("read: stmt.iterate() without the generator", tIter, perEv(tIter));
  const CHUNK = 20_000;
  const chunked = (fn: (r: EventRow) => void) => {
    const q = db.query(`${SQL} WHERE seq > ? ORDER BY seq LIMIT ${CHUNK}`);
    let after = 0;
    for (;;) {
      const batch = q.all(after) as EventRow[];
      for (const r of batch) fn(r);
      if (batch.length < CHUNK) break;
      after = batch[batch.length - 1]!.seq;
    }
  };
  const tChunk = best(() => {
    let n = 0;
    chunked((r) => (n += r.seq));
    return n;
  });
  add(`read: .all() in chunks of ${CHUNK / 1000}k rows`, tChunk, perEv(tChunk));
  const tValues = best(() => {
    const q = db.query(`${SQL} WHERE seq > ? ORDER BY seq LIMIT ${CHUNK}`);
    let after = 0;
    let n = 0;
    for (;;) {
      const batch = q.values(after) as unknown[][];
      for (const r of batch) n += r[0] as number;
      if (batch.length < CHUNK) break;
      after = batch[batch.length - 1]![0] as number;
    }
    return n;
  });
  add(`read: .values() (arrays) in chunks of ${CHUNK / 1000}k rows`, tValues, perEv(tValues));

  // --- the fold loop, phase by phase ----------------------------------------------------------
  // One pass in batches of B rows: each phase runs over the whole batch between two timer reads,
  // so every phase is timed on the same data, in the same pass, with ~N/B timer calls.
  const B = 1000;
  const phases = ["read rows (iterateEvents)", "hashInput() strings", "sha256 update+hex digest", "2× {...row, payload: JSON.parse()}", "payloadProblem() (valibot)", "reduceInto() fold A", "reduceInto() fold B"];
  const bestT = phases.map(() => Infinity);
  for (let pass = 0; pass < PASSES; pass++) {
    Bun.gc(true);
    const t = phases.map(() => 0);
    const hasher = new Bun.CryptoHasher("sha256");
    const a = emptyProjection();
    const b = emptyProjection();
    const it = iterateEvents(db);
    const rowsB: EventRow[] = new Array(B);
    const inputs: string[] = new Array(B);
    const ea: StoredEvent[] = new Array(B);
    const eb: StoredEvent[] = new Array(B);
    let done = false;
    while (!done) {
      let t0 = performance.now();
      let n = 0;
      for (; n < B; n++) {
        const r = it.next();
        if (r.done) {
          done = true;
          break;
        }
        rowsB[n] = r.value;
      }
      let t1 = performance.now();
      t[0]! += t1 - t0;
      for (let i = 0; i < n; i++) inputs[i] = hashInput(rowsB[i]!, rowsB[i]!.payload);
      t0 = performance.now();
      t[1]! += t0 - t1;
      for (let i = 0; i < n; i++) if (hasher.update(inputs[i]!).digest("hex") !== rowsB[i]!.hash) throw new Error("hash mismatch");
      t1 = performance.now();
      t[2]! += t1 - t0;
      for (let i = 0; i < n; i++) {
        const r = rowsB[i]!;
        ea[i] = { ...r, type: r.type as StoredEvent["type"], payload: JSON.parse(r.payload) };
        eb[i] = { ...r, type: r.type as StoredEvent["type"], payload: JSON.parse(r.payload) };
      }
      t0 = performance.now();
      t[3]! += t0 - t1;
      for (let i = 0; i < n; i++) if (payloadProblem(ea[i]!.type, ea[i]!.payload)) throw new Error("invalid payload");
      t1 = performance.now();
      t[4]! += t1 - t0;
      for (let i = 0; i < n; i++) reduceInto(a, ea[i]!);
      t0 = performance.now();
      t[5]! += t0 - t1;
      for (let i = 0; i < n; i++) reduceInto(b, eb[i]!);
      t1 = performance.now();
      t[6]! += t1 - t0;
    }
    phases.forEach((_, i) => (bestT[i] = Math.min(bestT[i]!, t[i]!)));
  }
  const sum = bestT.reduce((x, y) => x + y, 0);
  phases.forEach((name, i) => add(`fold phase: ${name}`, bestT[i]!, `${perEv(bestT[i]!)}, ${((100 * bestT[i]!) / sum).toFixed(0)}%`));
  add("fold phases: sum", sum, `${perEv(sum)} → ${Math.round(N / (sum / 1000)).toLocaleString("en-US")} events/s`);

  // --- the fixed phases -----------------------------------------------------------------------
  const fold = foldAndCheck(db);
  if (!fold.projection) throw new Error(`fold failed: ${JSON.stringify(fold.findings[0])}`);
  const p = fold.projection;
  const tAll = best(() => {
    const m = new Map<string, string>();
    const lr = loopRow(p);
    m.set("proj_loop", lr.body);
    for (const id of Object.keys(p.items)) {
      const r = itemRows(p.items[id]!);
      for (const t of ITEM_TABLES) if (r[t] !== null) m.set(`${t}[${id}]`, r[t]!);
    }
  });
  add("end: allRows() of one fold (replay does it twice)", tAll, `${Object.keys(p.items).length} items`);
  const tProj = best(() => compareProjection(db as Database, p));
  add("end: compareProjection() (read tables + itemRows + compare)", tProj);
  const tFiles = best(() => compareFiles(stateRoot, p));
  add("end: compareFiles() (state.json, terminal_state.json)", tFiles);
  const tFoldAndCheck = best(() => foldAndCheck(db));
  add("total: foldAndCheck() as shipped", tFoldAndCheck, `${Math.round(N / (tFoldAndCheck / 1000)).toLocaleString("en-US")} events/s`);
});

const tOpen = best(() => withReadSnapshot(stateRoot, () => 0));
add("open+close: withReadSnapshot() (immutable open, schema check)", tOpen);
const tReport = best(() => replayReport(stateRoot));
add("total: replayReport() in-process", tReport);
const tJson = best(() => JSON.stringify(replayReport(stateRoot), null, 2));
add("total: replayReport() + JSON output text", tJson);

const w = Math.max(...rows.map((r) => r[0].length));
process.stdout.write("| phase | ms | note |\n| --- | ---: | --- |\n");
for (const [name, ms, note] of rows) process.stdout.write(`| ${name.padEnd(w)} | ${Number.isNaN(ms) ? "" : ms.toFixed(1)} | ${note} |\n`);
