#!/usr/bin/env bun
// bench/profile-replay.ts — where does `loop replay` spend its time? Not a benchmark of the binary:
// it re-runs the phases of lib/replay.ts on a generated root and times them.
//
//   bun bench/profile-replay.ts --root DIR [--passes 3] [--clock wall|cpu] [--only NAME,NAME]
//
// The fold loop is timed as an ablation: each pass streams the whole log like foldAndCheck() and
// adds one phase to the previous one, so a phase's cost is the difference between two passes (its
// marginal cost in the real loop, GC included), with no timer calls in the per-event path.
// Every pass runs in a FRESH PROCESS: in one process, feeding reduceInto() and valibot events of
// several object shapes makes their inline caches megamorphic and slows every later pass (we saw a
// pass take 2× longer after others had run), which would charge one variant for another's shapes.
// Within a process the best of --passes runs is kept. --clock cpu uses process CPU time (all
// threads, GC included), less disturbed by other load than wall time.
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
  options: {
    root: { type: "string" },
    passes: { type: "string" },
    clock: { type: "string" },
    only: { type: "string" },
    variant: { type: "string" }, // internal: run one variant and print its result as JSON
  },
  strict: true,
});
if (!values.root) {
  process.stderr.write("usage: bun bench/profile-replay.ts --root DIR [--passes 3] [--clock wall|cpu] [--only NAME,NAME]\n");
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

type Variant = { label: string; run: (db: Database) => unknown; base?: string };

const hashOk = (r: EventRow, hex: string) => {
  if (hex !== r.hash) throw new Error(`hash mismatch at seq ${r.seq}`);
};
const ev = (r: EventRow) => ({ ...r, type: r.type as StoredEvent["type"], payload: JSON.parse(r.payload) }) as StoredEvent;

// The proposed loop: one-shot hash; the event built field by field (no spread); type and item
// interned through a Map so property lookups in the reducer and valibot hit strings that are
// already atoms instead of atomizing a fresh SQLite string several times per event.
const proposed = (twoFolds: boolean, intern: boolean) => (db: Database) => {
  const pool = new Map<string, string>();
  const I = (s: string) => {
    if (!intern) return s;
    const v = pool.get(s);
    if (v !== undefined) return v;
    pool.set(s, s);
    return s;
  };
  const a = emptyProjection();
  const b = emptyProjection();
  for (const r of iterateEvents(db)) {
    hashOk(r, Bun.SHA256.hash(hashInput(r, r.payload), "hex") as string);
    const type = I(r.type) as StoredEvent["type"];
    const item = r.item === null ? null : I(r.item);
    const ea: StoredEvent = { seq: r.seq, id: r.id, ts: r.ts, type, actor: r.actor, item, payload: JSON.parse(r.payload), prev_hash: r.prev_hash, hash: r.hash };
    if (payloadProblem(type, ea.payload)) throw new Error("invalid payload");
    reduceInto(a, ea);
    if (twoFolds)
      reduceInto(b, { seq: r.seq, id: r.id, ts: r.ts, type, actor: r.actor, item, payload: JSON.parse(r.payload), prev_hash: r.prev_hash, hash: r.hash });
  }
};

const VARIANTS: Record<string, Variant> = {
  read: {
    label: "read rows: iterateEvents() generator (as replay does)",
    run: (db) => {
      let n = 0;
      for (const r of iterateEvents(db)) n += r.seq;
      return n;
    },
  },
  readDirect: {
    label: "read rows: stmt.iterate() without the generator",
    run: (db) => {
      let n = 0;
      for (const r of db.query("SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events WHERE seq >= ? ORDER BY seq").iterate(1) as IterableIterator<EventRow>) n += r.seq;
      return n;
    },
  },
  readValues: {
    label: "read rows: .values() arrays, 20k-row chunks",
    run: (db) => {
      const q = db.query("SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events WHERE seq > ? ORDER BY seq LIMIT 20000");
      let after = 0;
      let n = 0;
      for (;;) {
        const batch = q.values(after) as unknown[][];
        for (const r of batch) n += r[0] as number;
        if (batch.length < 20000) break;
        after = batch[batch.length - 1]![0] as number;
      }
      return n;
    },
  },
  hashInput: {
    label: "+ hashInput() string",
    base: "read",
    run: (db) => {
      let n = 0;
      for (const r of iterateEvents(db)) n += hashInput(r, r.payload).length;
      return n;
    },
  },
  sha: {
    label: "+ sha256 update + hex digest, reused CryptoHasher (as replay does)",
    base: "hashInput",
    run: (db) => {
      const h = new Bun.CryptoHasher("sha256");
      for (const r of iterateEvents(db)) hashOk(r, h.update(hashInput(r, r.payload)).digest("hex"));
    },
  },
  parseA: {
    label: "+ {...row, payload: JSON.parse()} (event for fold A)",
    base: "sha",
    run: (db) => {
      const h = new Bun.CryptoHasher("sha256");
      let n = 0;
      for (const r of iterateEvents(db)) {
        hashOk(r, h.update(hashInput(r, r.payload)).digest("hex"));
        n += ev(r).seq;
      }
      return n;
    },
  },
  valibot: {
    label: "+ payloadProblem() (valibot safeParse)",
    base: "parseA",
    run: (db) => {
      const h = new Bun.CryptoHasher("sha256");
      for (const r of iterateEvents(db)) {
        hashOk(r, h.update(hashInput(r, r.payload)).digest("hex"));
        const ea = ev(r);
        if (payloadProblem(ea.type, ea.payload)) throw new Error("invalid payload");
      }
    },
  },
  foldA: {
    label: "+ reduceInto() fold A",
    base: "valibot",
    run: (db) => {
      const h = new Bun.CryptoHasher("sha256");
      const a = emptyProjection();
      for (const r of iterateEvents(db)) {
        hashOk(r, h.update(hashInput(r, r.payload)).digest("hex"));
        const ea = ev(r);
        if (payloadProblem(ea.type, ea.payload)) throw new Error("invalid payload");
        reduceInto(a, ea);
      }
    },
  },
  foldB: {
    label: "+ second parse + reduceInto() fold B (determinism check)",
    base: "foldA",
    run: (db) => {
      const h = new Bun.CryptoHasher("sha256");
      const a = emptyProjection();
      const b = emptyProjection();
      for (const r of iterateEvents(db)) {
        hashOk(r, h.update(hashInput(r, r.payload)).digest("hex"));
        const ea = ev(r);
        const eb = ev(r);
        if (payloadProblem(ea.type, ea.payload)) throw new Error("invalid payload");
        reduceInto(a, ea);
        reduceInto(b, eb);
      }
    },
  },
  shipped: { label: "foldAndCheck() as shipped (whole event loop + allRows ×2)", run: (db) => foldAndCheck(db) },
  shaOneShot: {
    label: 'alt: read + hash with one-shot Bun.SHA256.hash(input, "hex")',
    run: (db) => {
      for (const r of iterateEvents(db)) hashOk(r, Bun.SHA256.hash(hashInput(r, r.payload), "hex") as string);
    },
  },
  proposed2: { label: "alt: proposed loop (one-shot hash, no spread, interned strings), two folds", run: proposed(true, true) },
  proposed1: { label: "alt: proposed loop, one fold", run: proposed(false, true) },
  proposed1NoIntern: { label: "alt: proposed loop, one fold, no interning", run: proposed(false, false) },
  noValibot: {
    label: "alt: shipped loop without valibot, one fold (lower bound of the current design)",
    run: (db) => {
      const h = new Bun.CryptoHasher("sha256");
      const a = emptyProjection();
      for (const r of iterateEvents(db)) {
        hashOk(r, h.update(hashInput(r, r.payload)).digest("hex"));
        reduceInto(a, ev(r));
      }
    },
  },
};

function best(fn: () => unknown): number {
  let b = Infinity;
  for (let i = 0; i < PASSES; i++) {
    Bun.gc(true);
    const t = now();
    fn();
    b = Math.min(b, now() - t);
  }
  return b;
}

// --- child mode: one variant, fresh JIT ------------------------------------------------------
if (values.variant) {
  const name = values.variant;
  const out: Record<string, number> = {};
  if (name === "end") {
    withReadSnapshot(stateRoot, ({ db }) => {
      const fold = foldAndCheck(db);
      if (!fold.projection) throw new Error(`fold failed: ${JSON.stringify(fold.findings[0])}`);
      const p = fold.projection;
      out.allRows = best(() => {
        const m = new Map<string, string>();
        m.set("proj_loop", loopRow(p).body);
        for (const id of Object.keys(p.items)) {
          const r = itemRows(p.items[id]!);
          for (const t of ITEM_TABLES) if (r[t] !== null) m.set(`${t}[${id}]`, r[t]!);
        }
      });
      out.compareProjection = best(() => compareProjection(db, p));
      out.compareFiles = best(() => compareFiles(stateRoot, p));
    });
    out.open = best(() => withReadSnapshot(stateRoot, () => 0));
    out.report = best(() => replayReport(stateRoot));
    out.reportJson = best(() => JSON.stringify(replayReport(stateRoot), null, 2));
  } else {
    const v = VARIANTS[name];
    if (!v) throw new Error(`unknown variant ${name}`);
    withReadSnapshot(stateRoot, ({ db }) => {
      out.n = headOf(db).seq;
      out.ms = best(() => v.run(db));
    });
  }
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
}

// --- parent: one child per variant ------------------------------------------------------------
function child(name: string): Record<string, number> {
  const r = Bun.spawnSync(
    [process.execPath, import.meta.path, "--root", root, "--passes", String(PASSES), "--clock", CLOCK, "--variant", name],
    { stdout: "pipe", stderr: "pipe" },
  );
  if (r.exitCode !== 0) throw new Error(`variant ${name} failed: ${r.stderr.toString().slice(0, 500)}`);
  return JSON.parse(r.stdout.toString());
}

const only = values.only ? new Set(values.only.split(",")) : null;
const rows: [string, string, string][] = [];
const res: Record<string, number> = {};
let N = 0;
for (const [name, v] of Object.entries(VARIANTS)) {
  if (only && !only.has(name) && !(v.base && only.has("ablation"))) continue;
  process.stderr.write(`  ${name}\n`);
  const r = child(name);
  N = r.n!;
  res[name] = r.ms!;
}
const us = (ms: number) => `${((ms * 1000) / N).toFixed(2)} µs/event`;
const eps = (ms: number) => `${Math.round(N / (ms / 1000)).toLocaleString("en-US")} events/s`;
for (const [name, v] of Object.entries(VARIANTS)) {
  const ms = res[name];
  if (ms === undefined) continue;
  if (v.base && res[v.base] !== undefined) {
    const d = ms - res[v.base]!;
    rows.push([`fold loop ${v.label}`, d.toFixed(1), `${us(d)} (pass total ${ms.toFixed(0)} ms = ${us(ms)})`]);
  } else rows.push([v.label, ms.toFixed(1), `${us(ms)} → ${eps(ms)}`]);
}
if (!only || only.has("end")) {
  process.stderr.write("  end\n");
  const e = child("end");
  rows.push(["end: allRows() of one fold (foldAndCheck does it for both folds)", e.allRows!.toFixed(1), ""]);
  rows.push(["end: compareProjection() (read tables, itemRows, compare)", e.compareProjection!.toFixed(1), ""]);
  rows.push(["end: compareFiles() (state.json, terminal_state.json)", e.compareFiles!.toFixed(1), ""]);
  rows.push(["open + close the read snapshot", e.open!.toFixed(1), ""]);
  rows.push(["replayReport() in-process, total", e.report!.toFixed(1), N ? eps(e.report!) : ""]);
  rows.push(["replayReport() + JSON text", e.reportJson!.toFixed(1), ""]);
}
const w = Math.max(...rows.map((r) => r[0].length));
process.stdout.write(`${N.toLocaleString("en-US")} events, ${root}; best of ${PASSES} passes, ${CLOCK} clock, one process per row\n\n`);
process.stdout.write(`| phase | ${CLOCK} ms | per event |\n| --- | ---: | --- |\n`);
for (const [name, ms, note] of rows) process.stdout.write(`| ${name.padEnd(w)} | ${ms} | ${note} |\n`);
