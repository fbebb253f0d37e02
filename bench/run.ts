#!/usr/bin/env bun
// bench/run.ts — `bun run bench`: time the compiled binary against generated logs of 10k, 100k and
// 1M events and print a markdown table with the targets. See bench/README.md.
//
//   bun bench/run.ts [--sizes 10000,100000,1000000] [--items 500] [--runs N] [--rebuild] [--regen]
//                    [--idle-wait SECONDS]
//
// Generated roots are cached under bench/out/ (git-ignored), keyed by size, item count and a hash
// of the generator and the library files that decide the log's format (events, reducer, rows,
// canonical JSON), so a change to the event vocabulary regenerates them; a cached root that the
// binary no longer replays cleanly is regenerated once too. The binary is dist/loop (built with
// `bun run build` when missing or with --rebuild), copied to bench/out/bin/loop first so a
// concurrent rebuild cannot swap it mid-run.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { generate } from "./generate.ts";

const ROOT = resolve(import.meta.dir, "..");
const OUT = join(ROOT, "bench", "out");
const DIST = join(ROOT, "dist", "loop");
const BUN = process.execPath;

const TARGETS = {
  versionMs: 25,
  statusMs: 50,
  statusFlatRatio: 1.5, // slowest size / fastest size
  replayEventsPerSec: 500_000,
  replayRssMiB: 200,
};

// ---------------------------------------------------------------------------------------------
// Arguments.

const USAGE = "usage: bun bench/run.ts [--sizes 10000,100000,1000000] [--items K] [--runs N] [--rebuild] [--regen] [--idle-wait SECONDS]";
let args: { sizes: number[]; items: number; runs: number | null; rebuild: boolean; regen: boolean; idleWait: number };
try {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      sizes: { type: "string" },
      items: { type: "string" },
      runs: { type: "string" },
      rebuild: { type: "boolean" },
      regen: { type: "boolean" },
      "idle-wait": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(USAGE + "\n");
    process.exit(0);
  }
  const int = (s: string, what: string) => {
    const n = Number(s.replace(/_/g, "").replace(/k$/i, "000").replace(/m$/i, "000000"));
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${what}: not a positive integer: ${JSON.stringify(s)}`);
    return n;
  };
  args = {
    sizes: (values.sizes ?? "10000,100000,1000000")
      .split(",")
      .filter(Boolean)
      .map((s) => int(s.trim(), "--sizes")),
    items: values.items ? int(values.items, "--items") : 500,
    runs: values.runs ? int(values.runs, "--runs") : null,
    rebuild: Boolean(values.rebuild),
    regen: Boolean(values.regen),
    idleWait: values["idle-wait"] !== undefined ? Number(values["idle-wait"]) : 120,
  };
  if (!Number.isFinite(args.idleWait) || args.idleWait < 0) throw new Error("--idle-wait: not a number of seconds");
  if (args.sizes.some((n) => n < 3)) throw new Error("--sizes: every size must be at least 3 events");
} catch (err) {
  process.stderr.write(`bench: ${(err as Error).message}\n${USAGE}\n`);
  process.exit(2);
}

const note = (msg: string) => process.stderr.write(`bench: ${msg}\n`);

// ---------------------------------------------------------------------------------------------
// The binary.

/** Run a build command; its output goes to stderr, so stdout carries only the table. */
function run(cmd: string[], opts: { cwd?: string } = {}) {
  const r = Bun.spawnSync(cmd, { cwd: opts.cwd ?? ROOT, stdout: "pipe", stderr: "pipe" });
  process.stderr.write(r.stdout);
  process.stderr.write(r.stderr);
  return r.exitCode;
}

function ensureBinary(): string {
  if (args.rebuild || !existsSync(DIST)) {
    note(args.rebuild ? "rebuilding dist/loop" : "dist/loop is missing: building it");
    let ok = false;
    if (existsSync(join(ROOT, "scripts", "build.ts"))) ok = run([BUN, "run", "build"]) === 0 && existsSync(DIST);
    if (!ok) {
      note("`bun run build` is unavailable or failed: compiling directly");
      mkdirSync(join(ROOT, "dist"), { recursive: true });
      ok =
        run([
          BUN,
          "build",
          "--compile",
          "--bytecode",
          "--format=esm",
          "--minify",
          "--no-compile-autoload-dotenv",
          "--no-compile-autoload-bunfig",
          "cmd/loop.ts",
          "--outfile",
          DIST,
        ]) === 0 || run([BUN, "build", "--compile", "--bytecode", "--format=esm", "--minify", "cmd/loop.ts", "--outfile", DIST]) === 0;
    }
    if (!ok || !existsSync(DIST)) {
      note("could not build dist/loop");
      process.exit(1);
    }
  }
  // A binary older than the sources would time yesterday's code (and may reject today's log format).
  const newest = ["lib", "cmd"]
    .flatMap((d) => (readdirSync(join(ROOT, d), { recursive: true }) as string[]).filter((f) => f.endsWith(".ts")).map((f) => join(ROOT, d, f)))
    .map((f) => ({ f, t: statSync(f).mtimeMs }))
    .sort((a, b) => b.t - a.t)[0];
  if (newest && newest.t > statSync(DIST).mtimeMs)
    note(`warning: dist/loop is older than ${newest.f.slice(ROOT.length + 1)}; pass --rebuild to time the current sources`);
  // Snapshot: `bun run build` deletes dist/loop first, so someone rebuilding meanwhile would break us.
  const bin = join(OUT, "bin", "loop");
  mkdirSync(join(OUT, "bin"), { recursive: true });
  rmSync(bin, { force: true });
  copyFileSync(DIST, bin);
  Bun.spawnSync(["chmod", "+x", bin]);
  return bin;
}

// ---------------------------------------------------------------------------------------------
// Generated roots, cached.

function formatKey(): string {
  const h = new Bun.CryptoHasher("sha256");
  for (const f of [
    "bench/generate.ts",
    "lib/log/store.ts",
    "lib/log/snapshot.ts",
    "lib/log/events.ts",
    "lib/log/vocabulary.ts",
    "lib/log/reducer.ts",
    "lib/log/reducer-rules.ts",
    "lib/log/reducer-forge.ts",
    "lib/log/reducer-spend.ts",
    "lib/log/projection.ts",
    "lib/log/rows.ts",
    "lib/log/canonical.ts",
    "lib/log/documents.ts",
    "lib/log/materialize.ts",
  ]) {
    const p = join(ROOT, f);
    h.update(f + "\0" + (existsSync(p) ? readFileSync(p) : "") + "\0");
  }
  return h.digest("hex").slice(0, 10);
}

function ensureRoot(n: number, key: string, force = false): { root: string; generatedIn: number | null } {
  const name = `ev-${n}-k${args.items}`;
  const root = join(OUT, `${name}-${key}`);
  mkdirSync(OUT, { recursive: true });
  // Older generations of the same size are dead weight (1M events is ~0.5 GB).
  for (const d of readdirSync(OUT)) if (d.startsWith(`${name}-`) && join(OUT, d) !== root) rmSync(join(OUT, d), { recursive: true, force: true });
  if (existsSync(root) && !args.regen && !force) return { root, generatedIn: null };
  rmSync(root, { recursive: true, force: true });
  const tmp = `${root}.partial`;
  note(`generating ${n.toLocaleString("en-US")} events over ${args.items} items in ${tmp}`);
  const r = generate({ events: n, out: tmp, items: args.items, force: true, log: n >= 500_000 ? (m) => note(m) : undefined });
  renameSync(tmp, root); // only a complete root is ever cached
  note(`generated ${root} in ${(r.ms / 1000).toFixed(1)} s (${r.cycles} cycles, ${r.padded} padding events)`);
  return { root, generatedIn: r.ms };
}

// ---------------------------------------------------------------------------------------------
// Measuring.

interface Sample {
  ms: number;
  /** user + system CPU time of the child: less disturbed than wall time by other load. */
  cpuMs: number;
  rssMiB: number;
  exitCode: number;
  stdout: string;
  stderr: string;
}

function sample(cmd: string[]): Sample {
  const t0 = performance.now();
  const r = Bun.spawnSync(cmd, { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  const ms = performance.now() - t0;
  return {
    ms,
    // wait4's CPU times are the child's own.
    cpuMs: Number(r.resourceUsage?.cpuTime.total ?? 0n) / 1000,
    rssMiB: NaN, // see peakRss(): wait4's ru_maxrss is not the child's own
    exitCode: r.exitCode ?? -1,
    stdout: r.stdout.toString(),
    stderr: r.stderr.toString(),
  };
}

// Peak RSS. Not Bun.spawnSync(...).resourceUsage.maxRSS: Linux records the *parent's* RSS into the
// child's ru_maxrss at exec (the forked mm's high-water mark), so every child would report at least
// this process's RSS (hundreds of MB after generating 1M events in-process). GNU time's own RSS is
// ~2 MB, so `/usr/bin/time -f %M` gives the child's real figure; without it, VmHWM is polled from
// /proc/<pid>/status while the child runs (may miss a peak in the last few ms of a short run).
const GNU_TIME = process.env.BENCH_NO_GNU_TIME
  ? undefined
  : ["/usr/bin/time", "/bin/time"].find((p) => {
      if (!existsSync(p)) return false;
      return Bun.spawnSync([p, "-f", "%M", "true"], { stdout: "pipe", stderr: "pipe" }).exitCode === 0;
    });
const RSS_METHOD = GNU_TIME ? `${GNU_TIME} -f %M` : "/proc/<pid>/status VmHWM, polled";

async function peakRss(cmd: string[]): Promise<Sample> {
  const env = { ...process.env, NO_COLOR: "1" };
  if (GNU_TIME) {
    const out = join(OUT, `.rss-${process.pid}`);
    const t0 = performance.now();
    const r = Bun.spawnSync([GNU_TIME, "-f", "%M", "-o", out, ...cmd], { cwd: ROOT, stdout: "pipe", stderr: "pipe", env });
    const ms = performance.now() - t0;
    const kb = Number(readFileSync(out, "utf8").trim().split("\n").pop());
    rmSync(out, { force: true });
    return { ms, cpuMs: NaN, rssMiB: kb / 1024, exitCode: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  }
  const t0 = performance.now();
  const child = Bun.spawn(cmd, { cwd: ROOT, stdout: "pipe", stderr: "pipe", env });
  const stdout = new Response(child.stdout).text();
  const stderr = new Response(child.stderr).text();
  let hwmKb = 0;
  let exited = false;
  void child.exited.then(() => (exited = true));
  while (!exited) {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
      if (m) hwmKb = Math.max(hwmKb, Number(m[1]));
    } catch {}
    await Bun.sleep(1);
  }
  const code = await child.exited;
  return { ms: performance.now() - t0, cpuMs: NaN, rssMiB: hwmKb / 1024, exitCode: code, stdout: await stdout, stderr: await stderr };
}

interface Measure {
  median: number;
  cpuMedian: number;
  /** 1-minute load average when the measurement started. */
  load: number;
  min: number;
  max: number;
  rssMiB: number;
  runs: number;
  exitCodes: number[];
  last: Sample;
}

/** Wait (up to --idle-wait seconds) until the 1-minute load average is under the core count. */
async function waitIdle(): Promise<number> {
  const limit = Math.max(1, cpus().length - 0.5);
  const until = Date.now() + args.idleWait * 1000;
  let said = false;
  while (loadavg()[0]! > limit && Date.now() < until) {
    if (!said) note(`load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs: waiting up to ${args.idleWait} s for it to drop under ${limit}`);
    said = true;
    await Bun.sleep(5000);
  }
  return loadavg()[0]!;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(cmd: string[], runs: number): Promise<Measure> {
  return (await measureRoundRobin([cmd], runs))[0]!;
}

/**
 * Time several commands in rounds, each round running every command once, so a disturbance of the
 * machine (this VM's load drifts within seconds) hits all of them alike instead of one row.
 */
async function measureRoundRobin(cmds: string[][], runs: number): Promise<Measure[]> {
  const load = await waitIdle();
  // The warm-up run (page cache warm, binary mapped; not timed) is the one whose peak RSS is taken.
  const warm: Sample[] = [];
  for (const cmd of cmds) warm.push(await peakRss(cmd));
  const xs: Sample[][] = cmds.map(() => []);
  // Each round starts with the next command, so none always runs first.
  for (let i = 0; i < runs; i++)
    for (let k = 0; k < cmds.length; k++) {
      const c = (i + k) % cmds.length;
      xs[c]!.push(sample(cmds[c]!));
    }
  return xs.map((samples, c) => {
    const ms = samples.map((x) => x.ms).sort((a, b) => a - b);
    return {
      median: ms[Math.floor(ms.length / 2)]!,
      cpuMedian: median(samples.map((x) => x.cpuMs)),
      load,
      min: ms[0]!,
      max: ms[ms.length - 1]!,
      rssMiB: warm[c]!.rssMiB,
      runs,
      exitCodes: [...new Set(samples.map((x) => x.exitCode))],
      last: samples[samples.length - 1]!,
    };
  });
}

const runsFor = (n: number, small: number, big: number) => args.runs ?? (n >= 500_000 ? big : small);

// ---------------------------------------------------------------------------------------------

const bin = ensureBinary();
const key = formatKey();
const version = sample([bin, "--version"]);
if (version.exitCode !== 0) {
  note(`${bin} --version failed (exit ${version.exitCode}): ${version.stderr}`);
  process.exit(1);
}

interface SizeResult {
  n: number;
  status: Measure;
  replay: Measure;
  replayEvents: number | null;
  problems: string[];
}

// Generate (or reuse) every root first, so the timing below runs back to back.
const roots = new Map<number, string>();
for (const n of args.sizes) {
  let { root, generatedIn } = ensureRoot(n, key);
  // A cached root that today's binary rejects (the store or materialization format moved on) is
  // regenerated once rather than timed.
  if (generatedIn === null && sample([bin, "replay", "--root", root, "--json"]).exitCode !== 0) {
    note(`cached root ${root} no longer replays cleanly: regenerating it`);
    ({ root, generatedIn } = ensureRoot(n, key, true));
  }
  roots.set(n, root);
}

// Start-up and status at every size in one round-robin: their margins (a few ms) are the size of
// this machine's drift, and flatness compares sizes, so all of them see the same conditions.
note(`timing --version and status at ${args.sizes.map((n) => n.toLocaleString("en-US")).join(", ")} events, round-robin`);
const [versionRow, ...statusMs] = await measureRoundRobin(
  [[bin, "--version"], ...args.sizes.map((n) => [bin, "status", "--root", roots.get(n)!, "--json"])],
  args.runs ?? 21,
);
const versionM = versionRow!;
const results: SizeResult[] = [];
for (const [i, n] of args.sizes.entries()) {
  const root = roots.get(n)!;
  note(`timing replay at ${n.toLocaleString("en-US")} events`);
  const status = statusMs[i]!;
  const replay = await measure([bin, "replay", "--root", root, "--json"], runsFor(n, 7, 3));
  const problems: string[] = [];
  if (status.exitCodes.some((c) => c !== 0)) problems.push(`status exit ${status.exitCodes.join("/")}: ${status.last.stderr.trim().split("\n")[0] ?? ""}`);
  let replayEvents: number | null = null;
  try {
    const doc = JSON.parse(replay.last.stdout);
    replayEvents = doc.events;
    if (!doc.ok)
      problems.push(
        `replay findings: ${doc.findings
          .slice(0, 3)
          .map((f: { code: string; message: string }) => `${f.code} ${f.message}`)
          .join("; ")}`,
      );
  } catch {
    problems.push(`replay printed no JSON (exit ${replay.last.exitCode}): ${replay.last.stderr.trim().split("\n")[0] ?? ""}`);
  }
  if (replay.exitCodes.some((c) => c !== 0)) problems.push(`replay exit ${replay.exitCodes.join("/")}`);
  if (replayEvents !== null && replayEvents !== n) problems.push(`replay folded ${replayEvents} events, expected ${n}`);
  for (const p of problems) note(`PROBLEM at ${n}: ${p}`);
  results.push({ n, status, replay, replayEvents, problems });
}

// ---------------------------------------------------------------------------------------------
// The table.

const f1 = (x: number) => x.toFixed(1);
const human = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));
const verdict = (ok: boolean) => (ok ? "ok" : "**MISS**");
const spread = (m: Measure) => `${f1(m.min)}–${f1(m.max)}`;

const rows: string[][] = [];
const cells = (m: Measure) => [String(m.runs), f1(m.median), spread(m), f1(m.cpuMedian), f1(m.rssMiB), m.load.toFixed(1)];
rows.push(["`--version`", "–", ...cells(versionM), "", `≤ ${TARGETS.versionMs} ms`, verdict(versionM.median <= TARGETS.versionMs)]);
for (const r of results)
  rows.push([
    "`status --json`",
    human(r.n),
    ...cells(r.status),
    "",
    `≤ ${TARGETS.statusMs} ms`,
    verdict(r.status.median <= TARGETS.statusMs && r.status.exitCodes.every((c) => c === 0)),
  ]);
if (results.length > 1) {
  const meds = results.map((r) => r.status.median);
  const ratio = Math.max(...meds) / Math.min(...meds);
  rows.push([
    "status flatness",
    `${human(results[0]!.n)}→${human(results[results.length - 1]!.n)}`,
    "",
    "",
    "",
    "",
    "",
    "",
    `slowest/fastest ${ratio.toFixed(2)}×`,
    `≤ ${TARGETS.statusFlatRatio}×`,
    verdict(ratio <= TARGETS.statusFlatRatio),
  ]);
}
for (const r of results) {
  const eps = r.n / (r.replay.median / 1000);
  rows.push([
    "`replay --json`",
    human(r.n),
    ...cells(r.replay),
    `${Math.round(eps).toLocaleString("en-US")} ev/s`,
    `≥ ${TARGETS.replayEventsPerSec.toLocaleString("en-US")} ev/s`,
    verdict(eps >= TARGETS.replayEventsPerSec && r.problems.length === 0),
  ]);
}
const largest = results.reduce<SizeResult | null>((a, r) => (a === null || r.n > a.n ? r : a), null);
if (largest)
  rows.push([
    "replay peak RSS",
    human(largest.n),
    "",
    "",
    "",
    "",
    f1(largest.replay.rssMiB),
    "",
    largest.n >= 1_000_000 ? "" : "(target is set at 1M)",
    `≤ ${TARGETS.replayRssMiB} MiB at 1M`,
    largest.n >= 1_000_000 ? verdict(largest.replay.rssMiB <= TARGETS.replayRssMiB) : "–",
  ]);

/**
 * What this machine charges for the first touch of a page of fresh memory. A cold command pays it
 * for every page it touches (~860 pages for `--version`, ~2,300 for status at 1M, some of them on
 * other threads): where it is ~0.2 µs that is noise; on the 2-vCPU bench VM it is ~11 µs, which
 * puts ~10 ms of `--version` and ~25 ms of status at 1M into page faults.
 */
function freshPageCost(): { usPerPage: number; pages: number } {
  const before = process.resourceUsage().minorPageFault;
  const t = performance.now();
  const a = new Uint8Array(64 * 2 ** 20);
  for (let i = 0; i < a.length; i += 4096) a[i] = 1;
  const ms = performance.now() - t;
  const pages = Math.max(1, process.resourceUsage().minorPageFault - before);
  return { usPerPage: (ms * 1000) / pages, pages };
}
const fresh = freshPageCost();

const header = ["measure", "events", "runs", "median ms", "min–max ms", "CPU ms", "peak RSS MiB", "load", "derived", "target", "verdict"];
const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
const cpu = cpus()[0]?.model ?? "unknown CPU";
const binStat = statSync(bin);
const out = [
  `loop ${version.stdout.trim()} · compiled dist/loop (${(binStat.size / 2 ** 20).toFixed(1)} MiB, built ${statSync(DIST).mtime.toISOString()}) · Bun ${Bun.version} · ${cpu} × ${cpus().length} · ${process.platform}/${process.arch} · ${new Date().toISOString()}`,
  `${args.items} items per loop. Median wall time of N runs after one warm-up run (page cache warm); CPU ms is the median user+sys time of the child; peak RSS is measured on the warm-up run with ${RSS_METHOD}; load the 1-minute load average (${cpus().length} CPUs) when the row was measured. First touch of a fresh memory page: ${fresh.usPerPage.toFixed(1)} µs (${fresh.pages} page faults filling 64 MiB).`,
  "",
  line(header),
  line(header.map(() => "---")),
  ...rows.map(line),
  "",
];
for (const r of results) for (const p of r.problems) out.push(`- problem at ${human(r.n)}: ${p}`);
process.stdout.write(out.join("\n") + "\n");

// The dispatch step's own ticks (issue 3): a launch tick and an observing tick, same binary; then
// what an append and a tick cost by the size of the backlog (issue 20).
let failed = results.some((r) => r.problems.length > 0);
// And what reading an attempt's usage costs an observing tick (issue 21: in process, no binary).
for (const script of ["tick.ts", "scale.ts", "usage.ts"]) {
  const r = Bun.spawnSync([BUN, join(ROOT, "bench", script), ...(script === "usage.ts" ? [] : ["--bin", bin])], { stdout: "pipe", stderr: "inherit" });
  process.stdout.write("\n" + r.stdout.toString());
  if (r.exitCode !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
