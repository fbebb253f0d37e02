#!/usr/bin/env bun
// bench/profile-replay.ts — where does `loop replay` spend its time? Not a benchmark of the binary:
// it runs the parts of lib/reports/replay.ts on a generated root and times them.
//
//   bun bench/profile-replay.ts --root DIR [--passes 3] [--clock wall|cpu]
//
// Rows: the fold's loop cut short after each of its parts (read; + parse; + schema check; + one
// fold), the integrity pass alone (lib/log/integrity.ts: read, hash chain, seqs), the fold alone (read,
// parse, payload schemas, two folds), both one after the other on one thread (replay below 20k events),
// and both side by side with the integrity pass in a worker thread (replay from 20k events). The
// last row is bounded by the slower of the two passes: that pass is what to make faster.
// Every row runs in a FRESH PROCESS: in one process, earlier passes leave the reducer's and
// valibot's inline caches megamorphic and the heap larger, which would charge one row for another.
// Within a process the best of --passes runs is kept. --clock cpu is process CPU time (all threads,
// GC included); wall time is what a user waits for.
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { checkIntegrity } from "../lib/log/integrity.ts";
import { compareFiles, compareProjection, foldLog, replayReport } from "../lib/reports/replay.ts";
import { headOf, withReadSnapshot } from "../lib/log/snapshot.ts";
import { payloadProblem, type StoredEvent } from "../lib/log/events.ts";
import { emptyProjection } from "../lib/log/projection.ts";
import { reduceInto } from "../lib/log/reducer.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    root: { type: "string" },
    passes: { type: "string" },
    clock: { type: "string" },
    variant: { type: "string" }, // internal: run one row and print its result as JSON
  },
  strict: true,
});
if (!values.root) {
  process.stderr.write("usage: bun bench/profile-replay.ts --root DIR [--passes 3] [--clock wall|cpu]\n");
  process.exit(2);
}
const root = resolve(values.root);
const stateRoot = join(root, ".loop");
const PASSES = Number(values.passes ?? 3);
const CLOCK = values.clock ?? "wall";
const now =
  CLOCK === "cpu"
    ? () => {
        const u = process.cpuUsage();
        return (u.user + u.system) / 1000;
      }
    : () => performance.now();

/** The fold's loop cut short after `upTo` of its parts, to see what each part adds. */
function foldPrefix(upTo: "read" | "parse" | "check" | "fold1") {
  return withReadSnapshot(stateRoot, ({ db }) => {
    const a = emptyProjection();
    let n = 0;
    for (const r of db.query("SELECT seq, ts, type, actor, item, payload FROM events ORDER BY seq").iterate() as IterableIterator<Record<string, any>>) {
      n++;
      if (upTo === "read") continue;
      const payload = JSON.parse(r.payload);
      if (upTo === "parse") continue;
      if (payloadProblem(r.type, payload)) throw new Error(`seq ${r.seq}: invalid payload`);
      if (upTo === "check") continue;
      reduceInto(a, { seq: r.seq, id: "", ts: r.ts, type: r.type, actor: r.actor, item: r.item, payload, prev_hash: a.hash, hash: "" } as StoredEvent);
    }
    return { events: n }; // not a number: a number is a row's own timing (the compare row)
  });
}

const VARIANTS: Record<string, { label: string; run: () => unknown }> = {
  read: { label: "fold's part: read 6 columns only", run: () => foldPrefix("read") },
  parse: { label: "fold's part: read + JSON.parse", run: () => foldPrefix("parse") },
  check: { label: "fold's part: read + parse + schema check", run: () => foldPrefix("check") },
  fold1: { label: "fold's part: read + parse + check + one fold", run: () => foldPrefix("fold1") },
  integrity: { label: "integrity pass alone (read 9 columns, sha256 chain, seqs)", run: () => withReadSnapshot(stateRoot, ({ db }) => checkIntegrity(db)) },
  fold: {
    label: "fold alone (read 6 columns, JSON.parse, schema check, two folds, fold comparison)",
    run: () => withReadSnapshot(stateRoot, ({ db }) => foldLog(db)),
  },
  inline: { label: "replayReport(), both passes on one thread", run: () => replayReport(stateRoot, { worker: false }) },
  worker: { label: "replayReport(), integrity pass in a worker thread", run: () => replayReport(stateRoot, { worker: true }) },
  compare: {
    label: "end: compareProjection() + compareFiles()",
    run: () =>
      withReadSnapshot(stateRoot, ({ db }) => {
        const p = foldLog(db).projection!;
        const t = now();
        compareProjection(db, p);
        compareFiles(stateRoot, p);
        return now() - t;
      }),
  },
};

if (values.variant) {
  const v = VARIANTS[values.variant]!;
  let best = Infinity;
  for (let i = 0; i < PASSES; i++) {
    const t = now();
    const r = await v.run();
    // The compare row times only its own part.
    best = Math.min(best, typeof r === "number" ? r : now() - t);
  }
  process.stdout.write(JSON.stringify({ ms: best }) + "\n");
  process.exit(0);
}

const events = withReadSnapshot(stateRoot, ({ db }) => headOf(db).seq);
process.stdout.write(`${events.toLocaleString("en-US")} events, ${root}; best of ${PASSES} passes, ${CLOCK} clock, one process per row\n\n`);
process.stdout.write("| part | ms | per event |\n| --- | ---: | --- |\n");
for (const [name, v] of Object.entries(VARIANTS)) {
  const r = Bun.spawnSync([process.execPath, import.meta.path, "--root", root, "--passes", String(PASSES), "--clock", CLOCK, "--variant", name], {
    stdout: "pipe",
    stderr: "inherit",
  });
  if (r.exitCode !== 0) {
    process.stdout.write(`| ${v.label} | failed | |\n`);
    continue;
  }
  const { ms } = JSON.parse(r.stdout.toString()) as { ms: number };
  const per = name === "compare" ? "" : `${((ms * 1000) / events).toFixed(2)} µs/event → ${Math.round(events / (ms / 1000)).toLocaleString("en-US")} events/s`;
  process.stdout.write(`| ${v.label} | ${ms.toFixed(1)} | ${per} |\n`);
}
