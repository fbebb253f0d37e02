#!/usr/bin/env bun
// The test suite's time, file by file (bench/README.md, Test times): each test file in a `bun test`
// process of its own, one after the other, timed from start to exit, with its counts; then a markdown
// table of the slowest files and each tier's totals on stdout (progress on stderr). A file run alone
// pays bun's start (~0.2 s) that a run of the whole tier pays once, so the sum is above the tier's
// own time; `--tier fast --whole` times the tier as `npm run test:fast` runs it, too.
//
//   bun bench/test-times.ts [--tier fast|e2e|all] [--top 10] [--whole] [--json] [FILE…]
import { parseArgs } from "node:util";
import { loadavg } from "node:os";
import { isE2e, ROOT, testFiles, type Tier, tierFiles } from "../scripts/test-tier.ts";

export interface FileTime {
  file: string;
  tier: Tier;
  seconds: number;
  pass: number;
  fail: number;
  skip: number;
  exit: number | null;
}

/** The counts of bun test's summary (" 12 pass", " 1 fail", " 2 skip"); absent ones are 0. */
export function summaryCounts(output: string): { pass: number; fail: number; skip: number } {
  const count = (word: string) => Number(new RegExp(`^\\s*(\\d+) ${word}$`, "m").exec(output)?.[1] ?? 0);
  return { pass: count("pass"), fail: count("fail"), skip: count("skip") };
}

function runFile(file: string): FileTime {
  const t0 = performance.now();
  const r = Bun.spawnSync([process.execPath, "test", "--timeout", "120000", `./${file}`], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: process.env });
  const seconds = (performance.now() - t0) / 1000;
  const counts = summaryCounts(r.stdout.toString() + r.stderr.toString());
  return { file, tier: isE2e(file) ? "e2e" : "fast", seconds, ...counts, exit: r.exitCode };
}

const fmt = (s: number) => s.toFixed(1);

/** The markdown report: the `top` slowest files, then each tier's files, tests and summed seconds. */
export function report(times: FileTime[], top: number, whole: { tier: Tier; seconds: number; exit: number | null } | null): string {
  const rows = [...times].sort((a, b) => b.seconds - a.seconds).slice(0, top);
  const lines = [
    `| file | tier | s | tests |`,
    `|---|---|---:|---:|`,
    ...rows.map((t) => `| \`${t.file}\` | ${t.tier} | ${fmt(t.seconds)} | ${t.pass + t.fail + t.skip} |`),
  ];
  lines.push("", `| tier | files | tests | failed | s (files one by one) |`, `|---|---:|---:|---:|---:|`);
  for (const tier of ["fast", "e2e"] as const) {
    const of = times.filter((t) => t.tier === tier);
    if (!of.length) continue;
    const sum = (f: (t: FileTime) => number) => of.reduce((n, t) => n + f(t), 0);
    lines.push(`| ${tier} | ${of.length} | ${sum((t) => t.pass + t.fail + t.skip)} | ${sum((t) => t.fail)} | ${fmt(sum((t) => t.seconds))} |`);
  }
  if (whole) lines.push("", `\`npm run test:${whole.tier}\` as one run: ${fmt(whole.seconds)} s (exit ${whole.exit})`);
  return lines.join("\n") + "\n";
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: {
      tier: { type: "string", default: "all" },
      top: { type: "string", default: "10" },
      whole: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
    },
  });
  const tier = values.tier!;
  const top = Number(values.top);
  if (!["fast", "e2e", "all"].includes(tier) || !Number.isInteger(top) || top < 1) {
    process.stderr.write("usage: bun bench/test-times.ts [--tier fast|e2e|all] [--top N] [--whole] [--json] [FILE…]\n");
    process.exit(2);
  }
  const all = testFiles();
  const files = positionals.length ? positionals.map((f) => f.replace(/^\.\//, "")) : tier === "all" ? all : tierFiles(tier as Tier, all);
  process.stderr.write(
    `${files.length} files, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}\n`,
  );
  const times: FileTime[] = [];
  for (const f of files) {
    const t = runFile(f);
    times.push(t);
    process.stderr.write(`${fmt(t.seconds).padStart(6)} s  ${t.pass} pass ${t.fail} fail ${t.skip} skip  ${f}\n`);
  }
  let whole: { tier: Tier; seconds: number; exit: number | null } | null = null;
  if (values.whole && (tier === "fast" || tier === "e2e")) {
    const t0 = performance.now();
    const r = Bun.spawnSync([process.execPath, "scripts/test-tier.ts", tier], { cwd: ROOT, stdout: "ignore", stderr: "ignore", env: process.env });
    whole = { tier, seconds: (performance.now() - t0) / 1000, exit: r.exitCode };
  }
  process.stderr.write(
    `load after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}\n`,
  );
  process.stdout.write(values.json ? JSON.stringify({ times, whole }) + "\n" : report(times, top, whole));
  process.exit(times.some((t) => t.exit !== 0) || (whole && whole.exit !== 0) ? 1 : 0);
}
