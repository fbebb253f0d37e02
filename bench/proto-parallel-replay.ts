#!/usr/bin/env bun
// bench/proto-parallel-replay.ts — a measured prototype, not a replacement for lib/replay.ts: how fast
// could replay's event loop be on this machine if the hash-chain check ran in a Worker (its own
// read-only connection) while the main thread validates and folds?
//
//   bun bench/proto-parallel-replay.ts --root DIR [--passes 3] [--folds 1|2]
//
// Prints, best of --passes: the shipped foldAndCheck(); the same checks split over two threads
// (chain in a Worker; parse + valibot + fold on the main thread); and each half alone.
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { constants, Database } from "bun:sqlite";
import { isMainThread, parentPort, workerData, Worker } from "node:worker_threads";
import { payloadProblem, type StoredEvent } from "../lib/events.ts";
import { emptyProjection, reduceInto } from "../lib/reducer.ts";
import { foldAndCheck } from "../lib/replay.ts";
import { type EventRow, hashInput, iterateEvents, withReadSnapshot } from "../lib/store.ts";

const open = (stateRoot: string) =>
  new Database(`file:${join(stateRoot, "loop.db")}?immutable=1`, constants.SQLITE_OPEN_READONLY | constants.SQLITE_OPEN_URI);

/** The chain half: every stored hash recomputed and every prev_hash linked. */
function checkChain(db: Database): { n: number; bad: number | null } {
  let prev = "0".repeat(64);
  let n = 0;
  for (const r of iterateEvents(db)) {
    n++;
    if (r.prev_hash !== prev || (Bun.SHA256.hash(hashInput(r, r.payload), "hex") as string) !== r.hash) return { n, bad: r.seq };
    prev = r.hash;
  }
  return { n, bad: null };
}

/** The fold half: parse, validate and fold (once or twice). */
function fold(db: Database, folds: number) {
  const a = emptyProjection();
  const b = emptyProjection();
  for (const r of iterateEvents(db)) {
    const ea: StoredEvent = { seq: r.seq, id: r.id, ts: r.ts, type: r.type as StoredEvent["type"], actor: r.actor, item: r.item, payload: JSON.parse(r.payload), prev_hash: r.prev_hash, hash: r.hash };
    if (payloadProblem(ea.type, ea.payload)) throw new Error(`invalid payload at ${r.seq}`);
    reduceInto(a, ea);
    if (folds === 2) reduceInto(b, { ...ea, payload: JSON.parse(r.payload) });
  }
  return a;
}

if (!isMainThread) {
  const db = open(workerData.stateRoot);
  parentPort!.postMessage(checkChain(db));
  db.close();
} else {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { root: { type: "string" }, passes: { type: "string" }, folds: { type: "string" } }, strict: true });
  if (!values.root) {
    process.stderr.write("usage: bun bench/proto-parallel-replay.ts --root DIR [--passes 3] [--folds 1|2]\n");
    process.exit(2);
  }
  const stateRoot = join(resolve(values.root), ".loop");
  const PASSES = Number(values.passes ?? 3);
  const FOLDS = Number(values.folds ?? 2);
  const best = async (fn: () => unknown) => {
    let b = Infinity;
    for (let i = 0; i < PASSES; i++) {
      Bun.gc(true);
      const t = performance.now();
      await fn();
      b = Math.min(b, performance.now() - t);
    }
    return b;
  };
  const db = open(stateRoot);
  const n = (db.query("SELECT max(seq) AS n FROM events").get() as { n: number }).n;
  const line = (name: string, ms: number) =>
    process.stdout.write(`| ${name} | ${ms.toFixed(0)} | ${((ms * 1000) / n).toFixed(2)} | ${Math.round(n / (ms / 1000)).toLocaleString("en-US")} |\n`);
  process.stdout.write(`${n.toLocaleString("en-US")} events, best of ${PASSES}, ${FOLDS} fold(s)\n\n| variant | wall ms | µs/event | events/s |\n| --- | ---: | ---: | ---: |\n`);
  // Each in this order, so no variant warms the JIT for a later one more than the shipped code does.
  line("shipped foldAndCheck() (one thread, two folds)", await best(() => withReadSnapshot(stateRoot, ({ db }) => foldAndCheck(db))));
  line("chain half alone (read + hashInput + one-shot SHA-256)", await best(() => checkChain(db)));
  line(`fold half alone (read + parse + valibot + ${FOLDS} fold(s))`, await best(() => fold(db, FOLDS)));
  line("both halves in parallel (chain in a Worker)", await best(async () => {
    const w = new Worker(new URL(import.meta.url), { workerData: { stateRoot } });
    const chain = new Promise<{ n: number; bad: number | null }>((res, rej) => {
      w.once("message", res);
      w.once("error", rej);
    });
    fold(db, FOLDS);
    const c = await chain;
    await w.terminate();
    if (c.bad !== null || c.n !== n) throw new Error(`chain check failed at ${c.bad}`);
  }));
  db.close();
}
