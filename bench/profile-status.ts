#!/usr/bin/env bun
// bench/profile-status.ts — where does `loop status --json` spend its time, apart from startup?
//
//   bun bench/profile-status.ts --root DIR [--root DIR2 …] [--passes 15]
//
// Times the phases of lib/reports/status.ts in-process (median of --passes): opening the read snapshot, the
// log head, reading and parsing the projection tables (status's path when state.json does not match),
// building state.json's document, reading state.json (status's usual path), the whole statusReport(), and JSON.stringify of the report. Sizes of state.json
// and of the JSON output are printed too, because they, not the log length, drive status's cost.
import { statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { jsonText, stateDocument } from "../lib/log/documents.ts";
import { stateView, statusReport } from "../lib/reports/status.ts";
import { headOf, readItemRows, readLoopRow, readProjection, withReadSnapshot } from "../lib/log/snapshot.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { root: { type: "string", multiple: true }, passes: { type: "string" } },
  strict: true,
});
if (!values.root?.length) {
  process.stderr.write("usage: bun bench/profile-status.ts --root DIR [--root DIR2 …] [--passes 15]\n");
  process.exit(2);
}
const PASSES = Number(values.passes ?? 15);

function median(fn: () => unknown): number {
  fn(); // warm the JIT and the page cache
  const xs: number[] = [];
  for (let i = 0; i < PASSES; i++) {
    const t = performance.now();
    fn();
    xs.push(performance.now() - t);
  }
  return xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

const roots = values.root.map((r) => resolve(r));
const cols: Record<string, string>[] = [];
for (const root of roots) {
  const sr = join(root, ".loop");
  const c: Record<string, string> = {};
  const f = (ms: number) => ms.toFixed(2);
  withReadSnapshot(sr, ({ db }) => {
    c.events = headOf(db).seq.toLocaleString("en-US");
    c["headOf() (last event)"] = f(median(() => headOf(db)));
    c["read projection rows (5 tables)"] = f(median(() => (readLoopRow(db), readItemRows(db))));
    c["readProjection() (rows + JSON.parse)"] = f(median(() => readProjection(db)));
    const p = readProjection(db);
    c["stateDocument() + jsonText()"] = f(median(() => jsonText(stateDocument(p))));
    const sha = readLoopRow(db).state_sha;
    c["stateView() (read state.json, hash, parse)"] = f(median(() => stateView(join(sr, "state.json"), sha, () => p)));
  });
  c["open + close the snapshot"] = f(median(() => withReadSnapshot(sr, () => 0)));
  c["statusReport() total"] = f(median(() => statusReport(sr)));
  const report = statusReport(sr);
  c["JSON.stringify(report, null, 2)"] = f(median(() => JSON.stringify(report, null, 2)));
  c["state.json size (KiB)"] = (statSync(join(sr, "state.json")).size / 1024).toFixed(0);
  c["status --json output size (KiB)"] = (Buffer.byteLength(JSON.stringify(report, null, 2)) / 1024).toFixed(0);
  c["loop.db size (MiB)"] = (statSync(join(sr, "loop.db")).size / 2 ** 20).toFixed(0);
  cols.push(c);
}
const names = Object.keys(cols[0]!);
process.stdout.write(
  `median of ${PASSES} in-process runs, ms\n\n| phase | ${roots.map((r) => r.split("/").pop()).join(" | ")} |\n| --- |${roots.map(() => " ---: |").join("")}\n`,
);
for (const n of names) process.stdout.write(`| ${n} | ${cols.map((c) => c[n]).join(" | ")} |\n`);
