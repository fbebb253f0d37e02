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

  // --- the fold loop, cumulatively, on the replay's own reader -------------------------------
  // Each pass streams the whole log like foldAndCheck and adds one phase to the previous pass, so
  // a phase's cost is the difference of two passes: its marginal cost in the real loop, GC included.
  let prev = tGen;
  const step = (name: string, ms: number) => {
    add(`fold: + ${name}`, ms - prev, `${perEv(ms - prev)} (cumulative ${ms.toFixed(0)} ms, ${perEv(ms)})`);
    prev = ms;
  };
  const tHashIn = best(() => {
    let n = 0;
    for (const r of iterateEvents(db)) n += hashInput(r, r.payload).length;
    return n;
  });
  step("hashInput() string building", tHashIn);
  const tHash = best(() => {
    const hasher = new Bun.CryptoHasher("sha256");
    for (const r of iterateEvents(db)) if (hasher.update(hashInput(r, r.payload)).digest("hex") !== r.hash) throw new Error("hash mismatch");
  });
  step("sha256 update + hex digest (reused CryptoHasher)", tHash);
  const tParse1 = best(() => {
    const hasher = new Bun.CryptoHasher("sha256");
    for (const r of iterateEvents(db)) {
      if (hasher.update(hashInput(r, r.payload)).digest("hex") !== r.hash) throw new Error("hash mismatch");
      const ea = { ...r, payload: JSON.parse(r.payload) };
      if (ea.seq < 0) throw new Error();
    }
  });
  step("{...row, payload: JSON.parse()} for fold A", tParse1);
  const tValid = best(() => {
    const hasher = new Bun.CryptoHasher("sha256");
    for (const r of iterateEvents(db)) {
      if (hasher.update(hashInput(r, r.payload)).digest("hex") !== r.hash) throw new Error("hash mismatch");
      const ea = { ...r, payload: JSON.parse(r.payload) };
      if (payloadProblem(ea.type, ea.payload)) throw new Error("invalid");
    }
  });
  step("payloadProblem() (valibot safeParse)", tValid);
  const tFoldA = best(() => {
    const hasher = new Bun.CryptoHasher("sha256");
    const a = emptyProjection();
    for (const r of iterateEvents(db)) {
      if (hasher.update(hashInput(r, r.payload)).digest("hex") !== r.hash) throw new Error("hash mismatch");
      const ea = { ...r, payload: JSON.parse(r.payload) } as StoredEvent;
      if (payloadProblem(ea.type, ea.payload)) throw new Error("invalid");
      reduceInto(a, ea);
    }
  });
  step("reduceInto() fold A", tFoldA);
  const tFoldB = best(() => {
    const hasher = new Bun.CryptoHasher("sha256");
    const a = emptyProjection();
    const b = emptyProjection();
    for (const r of iterateEvents(db)) {
      if (hasher.update(hashInput(r, r.payload)).digest("hex") !== r.hash) throw new Error("hash mismatch");
      const ea = { ...r, payload: JSON.parse(r.payload) } as StoredEvent;
      if (payloadProblem(ea.type, ea.payload)) throw new Error("invalid");
      reduceInto(a, ea);
      const eb = { ...r, payload: JSON.parse(r.payload) } as StoredEvent;
      reduceInto(b, eb);
    }
  });
  step("second parse + reduceInto() fold B (determinism)", tFoldB);

  // --- candidate changes, measured the same way ------------------------------------------------
  // Same checks, cheaper mechanics. Every variant verifies every hash, so each is a real alternative.
  const vShaStatic = best(() => {
    for (const r of iterateEvents(db)) if (Bun.SHA256.hash(hashInput(r, r.payload), "hex") !== r.hash) throw new Error("hash mismatch");
  });
  add('variant: read + hash with one-shot Bun.SHA256.hash(input, "hex")', vShaStatic, `${perEv(vShaStatic)} (shipped way: ${perEv(tHash)})`);
  const vShaStatic2 = best(() => {
    for (const r of iterateEvents(db)) if (Bun.CryptoHasher.hash("sha256", hashInput(r, r.payload), "hex") !== r.hash) throw new Error("hash mismatch");
  });
  add('variant: read + hash with Bun.CryptoHasher.hash("sha256", input, "hex")', vShaStatic2, perEv(vShaStatic2));

  // The proposed loop: one-shot hash; the event built field by field (no spread); type and item
  // strings interned through a Map, so the reducer's and valibot's property lookups hit strings
  // that are already atoms instead of atomizing a fresh SQLite string several times per event.
  const intern = new Map<string, string>();
  const I = (s: string) => {
    const v = intern.get(s);
    if (v !== undefined) return v;
    intern.set(s, s);
    return s;
  };
  const proposed = (twoFolds: boolean) => () => {
    const a = emptyProjection();
    const b = emptyProjection();
    for (const r of iterateEvents(db)) {
      if (Bun.SHA256.hash(hashInput(r, r.payload), "hex") !== r.hash) throw new Error("hash mismatch");
      const type = I(r.type) as StoredEvent["type"];
      const item = r.item === null ? null : I(r.item);
      const ea: StoredEvent = { seq: r.seq, id: r.id, ts: r.ts, type, actor: r.actor, item, payload: JSON.parse(r.payload), prev_hash: r.prev_hash, hash: r.hash };
      if (payloadProblem(type, ea.payload)) throw new Error("invalid");
      reduceInto(a, ea);
      if (twoFolds) reduceInto(b, { seq: r.seq, id: r.id, ts: r.ts, type, actor: r.actor, item, payload: JSON.parse(r.payload), prev_hash: r.prev_hash, hash: r.hash });
    }
  };
  const vTwo = best(proposed(true));
  add("variant: proposed loop, still two folds", vTwo, `${perEv(vTwo)} → ${Math.round(N / (vTwo / 1000)).toLocaleString("en-US")} events/s`);
  const vOne = best(proposed(false));
  add("variant: proposed loop, one fold", vOne, `${perEv(vOne)} → ${Math.round(N / (vOne / 1000)).toLocaleString("en-US")} events/s`);
  const vNoIntern = best(() => {
    const a = emptyProjection();
    for (const r of iterateEvents(db)) {
      if (Bun.SHA256.hash(hashInput(r, r.payload), "hex") !== r.hash) throw new Error("hash mismatch");
      const ea: StoredEvent = { seq: r.seq, id: r.id, ts: r.ts, type: r.type as StoredEvent["type"], actor: r.actor, item: r.item, payload: JSON.parse(r.payload), prev_hash: r.prev_hash, hash: r.hash };
      if (payloadProblem(ea.type, ea.payload)) throw new Error("invalid");
      reduceInto(a, ea);
    }
  });
  add("variant: proposed loop, one fold, without interning", vNoIntern, perEv(vNoIntern));

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
