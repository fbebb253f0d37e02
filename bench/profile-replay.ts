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
import { sha256Hex } from "../lib/canonical.ts";
import { payloadProblem, PAYLOADS, type StoredEvent } from "../lib/events.ts";
import { emptyProjection, reduceInto } from "../lib/reducer.ts";
import { compareFiles, compareProjection, foldAndCheck, replayReport } from "../lib/replay.ts";
import { ITEM_TABLES, itemRows, loopRow } from "../lib/rows.ts";
import { type EventRow, hashInput, headOf, iterateEvents, withReadSnapshot } from "../lib/store.ts";
import * as v from "valibot";

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
  const hasher = new Bun.CryptoHasher("sha256");
  let base = tGen;
  const step = (name: string, ms: number) => {
    add(`fold: + ${name}`, ms - base, `${perEv(ms - base)} (cumulative ${ms.toFixed(0)} ms)`);
    base = ms;
  };
  const tHashIn = best(() => {
    let n = 0;
    for (const r of iterateEvents(db)) n += hashInput(r, r.payload).length;
    return n;
  });
  step("hashInput() string building", tHashIn);
  const tHash = best(() => {
    let ok = 0;
    for (const r of iterateEvents(db)) if (hasher.update(hashInput(r, r.payload)).digest("hex") === r.hash) ok++;
    if (ok !== N) throw new Error(`hash mismatch: ${ok}/${N}`);
  });
  step("sha256 digest (reused CryptoHasher)", tHash);
  const tParse = best(() => {
    for (const r of iterateEvents(db)) {
      hasher.update(hashInput(r, r.payload)).digest("hex");
      const ea = { ...r, payload: JSON.parse(r.payload) };
      const eb = { ...r, payload: JSON.parse(r.payload) };
      if (ea.seq !== eb.seq) throw new Error();
    }
  });
  step("2× {...row, payload: JSON.parse()}", tParse);
  const tValid = best(() => {
    for (const r of iterateEvents(db)) {
      hasher.update(hashInput(r, r.payload)).digest("hex");
      const ea = { ...r, payload: JSON.parse(r.payload) };
      const eb = { ...r, payload: JSON.parse(r.payload) };
      if (payloadProblem(ea.type, ea.payload) || ea.seq !== eb.seq) throw new Error("invalid");
    }
  });
  step("payloadProblem() (valibot safeParse)", tValid);
  const tFold = best(() => {
    const a = emptyProjection();
    const b = emptyProjection();
    for (const r of iterateEvents(db)) {
      hasher.update(hashInput(r, r.payload)).digest("hex");
      const ea = { ...r, payload: JSON.parse(r.payload) } as StoredEvent;
      const eb = { ...r, payload: JSON.parse(r.payload) } as StoredEvent;
      if (payloadProblem(ea.type, ea.payload)) throw new Error("invalid");
      reduceInto(a, ea);
      reduceInto(b, eb);
    }
  });
  step("2× reduceInto()", tFold);

  // --- isolated costs, for the per-event budget ---------------------------------------------
  const sampleRows: EventRow[] = [];
  for (const r of iterateEvents(db)) {
    sampleRows.push(r);
    if (sampleRows.length >= 100_000) break;
  }
  const per = (fn: (r: EventRow) => unknown) => {
    const ms = best(() => {
      for (const r of sampleRows) fn(r);
    });
    return `${((ms * 1000) / sampleRows.length).toFixed(2)} µs/event`;
  };
  const avgLen = sampleRows.reduce((s, r) => s + hashInput(r, r.payload).length, 0) / sampleRows.length;
  add("isolated: sha256Hex() (new hasher per call, as the store does)", NaN, per((r) => sha256Hex(hashInput(r, r.payload))));
  add(`isolated: reused hasher, hex digest (avg hash input ${avgLen.toFixed(0)} B)`, NaN, per((r) => hasher.update(hashInput(r, r.payload)).digest("hex")));
  add("isolated: one JSON.parse(payload)", NaN, per((r) => JSON.parse(r.payload)));
  add("isolated: valibot safeParse of a parsed payload", NaN, (() => {
    const parsed = sampleRows.map((r) => [r.type, JSON.parse(r.payload)] as const);
    const ms = best(() => {
      for (const [t, pl] of parsed) v.safeParse(PAYLOADS[t as keyof typeof PAYLOADS], pl);
    });
    return `${((ms * 1000) / parsed.length).toFixed(2)} µs/event`;
  })());
  add("isolated: valibot safeParse with abortEarly", NaN, (() => {
    const parsed = sampleRows.map((r) => [r.type, JSON.parse(r.payload)] as const);
    const ms = best(() => {
      for (const [t, pl] of parsed) v.safeParse(PAYLOADS[t as keyof typeof PAYLOADS], pl, { abortEarly: true });
    });
    return `${((ms * 1000) / parsed.length).toFixed(2)} µs/event`;
  })());

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
