#!/usr/bin/env bun
// bench/scale.ts — does a step cost what it changes, or what the backlog holds? (issue 20)
//
//   bun bench/scale.ts [--items 20,500,5000] [--runs 5] [--bin dist/loop] [--dir DIR] [--appends 25]
//
// For each backlog size K it generates a root with bench/generate.ts (12 events per item, so 5,000
// items is the 60k-event log of the issue; every item's agent is `sleep 3600`), then measures:
//   - append: one single-item event (`control_recorded`) through Store.append, in this process
//     (the library's sources, not the binary), median of --appends;
//   - launch tick: `loop run` that reserves, creates the worktree, writes the handoff, starts the
//     session detached and materializes the files (compiled binary, a fresh copy of the root each);
//   - observing tick: `loop run` that finds that agent still working (3 per launch);
//   - replay's peak RSS on the largest root.
// The sizes run round-robin (each round: every size once), so a disturbance of this shared machine
// hits them alike; the verdicts are ratios to the smallest size. Prints a markdown table.
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { generate } from "./generate.ts";
import { Store } from "../lib/log/store.ts";

const USAGE = "usage: bun bench/scale.ts [--items 20,500,5000] [--runs 5] [--bin dist/loop] [--dir DIR] [--appends 25]";
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    items: { type: "string" },
    runs: { type: "string" },
    bin: { type: "string" },
    dir: { type: "string" },
    appends: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
  strict: true,
});
if (values.help) {
  process.stdout.write(USAGE + "\n");
  process.exit(0);
}
const SIZES = (values.items ?? "20,500,5000").split(",").map((s) => Number(s.trim()));
const RUNS = Number(values.runs ?? 5);
const APPENDS = Number(values.appends ?? 25);
if (
  SIZES.some((k) => !Number.isSafeInteger(k) || k < 2 || k > 9999) ||
  !Number.isSafeInteger(RUNS) ||
  RUNS < 1 ||
  !Number.isSafeInteger(APPENDS) ||
  APPENDS < 1
) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}
const ROOT = resolve(import.meta.dir, "..");
const DIST = resolve(values.bin ?? join(ROOT, "dist", "loop"));
if (!existsSync(DIST)) {
  process.stderr.write(`scale: ${DIST} is missing (bun run build)\n`);
  process.exit(1);
}
const WORK = mkdtempSync(join(values.dir ?? tmpdir(), "loop-scale-"));
// A copy of the binary, so a concurrent `bun run build` cannot swap it mid-run.
const BIN = join(WORK, "loop");
copyFileSync(DIST, BIN);
const note = (m: string) => process.stderr.write(`scale: ${m}\n`);
// LOOP_CHAIN off: each tick is timed alone (docs/cli/loop-run.md#chained-steps).
const ENV = { ...process.env, NO_COLOR: "1", LOOP_KILL_GRACE_MS: "200", LOOP_STATE_ROOT: "", LOOP_FAILPOINT: "", LOOP_CHAIN: "off" };

function loop(cwd: string, args: string[]): { ms: number; code: number; out: string; err: string } {
  const t = performance.now();
  const r = Bun.spawnSync([BIN, ...args], { cwd, env: ENV, stdout: "pipe", stderr: "pipe" });
  return { ms: performance.now() - t, code: r.exitCode ?? -1, out: r.stdout.toString(), err: r.stderr.toString() };
}

function must(cwd: string, args: string[]) {
  const r = loop(cwd, args);
  if (r.code !== 0) throw new Error(`loop ${args.join(" ")} in ${cwd} exited ${r.code}: ${r.err.trim()}`);
  return r;
}

/** A timed `loop run` that must end with `action`. */
function tick(cwd: string, action: string): number {
  const r = loop(cwd, ["run", "--json"]);
  if (r.code !== 0) throw new Error(`loop run exited ${r.code}: ${r.err.trim()}`);
  const got = JSON.parse(r.out).action;
  if (got !== action) throw new Error(`loop run: expected ${action}, got ${got} (${r.out.slice(0, 300)})`);
  return r.ms;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// 1. One root per size: generated history, then bound and materialized by the binary (untimed), so
// the timed launch is a launch and nothing else. The store is bound to the path it was prepared
// at (docs/state.md#ownership), so every timed run uses a copy put back at that path.
const prepared = new Map<number, string>();
const runRoot = (k: number) => join(WORK, `k${k}`);
for (const k of SIZES) {
  const root = runRoot(k);
  const r = generate({ events: 12 * k, items: k, out: root, force: true, runner: { name: "sleeper", command: ["sleep", "3600"] } });
  must(root, ["ctl", "pause", "--json"]);
  must(root, ["run", "--json"]);
  must(root, ["ctl", "resume", "--json"]);
  const kept = join(WORK, `prepared-${k}`);
  cpSync(root, kept, { recursive: true });
  prepared.set(k, kept);
  note(`prepared ${k} items (${r.events.toLocaleString("en-US")} events)`);
}

// 2. Append cost, in process, on a copy of each root.
const appendMs = new Map<number, number>();
for (const k of SIZES) {
  const copy = runRoot(k);
  rmSync(copy, { recursive: true, force: true });
  cpSync(prepared.get(k)!, copy, { recursive: true });
  const store = Store.open(join(copy, ".loop"));
  try {
    const p = store.projection();
    const id = p.order.find((i) => p.items[i]!.status === "pending");
    if (!id) throw new Error(`no pending item at ${k} items`);
    const xs: number[] = [];
    for (let i = 0; i <= APPENDS; i++) {
      const t = performance.now();
      store.append([{ type: "control_recorded", item: id, payload: { verb: "start", text: `bench ${i}` } }]);
      if (i > 0) xs.push(performance.now() - t); // the first one warms the JIT and the page cache
    }
    appendMs.set(k, median(xs));
  } finally {
    store.close();
    rmSync(copy, { recursive: true, force: true });
  }
}

// 3. Ticks, round-robin over the sizes.
const launches = new Map<number, number[]>(SIZES.map((k) => [k, []]));
const observes = new Map<number, number[]>(SIZES.map((k) => [k, []]));
for (let round = 0; round < RUNS; round++) {
  for (let j = 0; j < SIZES.length; j++) {
    const k = SIZES[(round + j) % SIZES.length]!;
    const root = runRoot(k);
    rmSync(root, { recursive: true, force: true });
    cpSync(prepared.get(k)!, root, { recursive: true });
    try {
      launches.get(k)!.push(tick(root, "launched"));
      for (let i = 0; i < 3; i++) observes.get(k)!.push(tick(root, "waiting"));
    } finally {
      loop(root, ["ctl", "stop", "--yes", "--json"]); // ends the sleeping agent
      rmSync(root, { recursive: true, force: true });
    }
  }
  note(`round ${round + 1} of ${RUNS}`);
}

// 4. Replay's peak RSS on the largest root (GNU time, as bench/run.ts).
const largest = Math.max(...SIZES);
rmSync(runRoot(largest), { recursive: true, force: true });
cpSync(prepared.get(largest)!, runRoot(largest), { recursive: true });
let rss: number | null = null;
if (existsSync("/usr/bin/time")) {
  const out = join(WORK, "rss");
  const r = Bun.spawnSync(["/usr/bin/time", "-f", "%M", "-o", out, BIN, "replay", "--root", runRoot(largest), "--json"], {
    env: ENV,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0 || !JSON.parse(r.stdout.toString()).ok)
    throw new Error(`replay of the ${largest}-item root failed: ${r.stdout.toString().slice(0, 300)}`);
  rss = Number(readFileSync(out, "utf8").trim().split("\n").pop()) / 1024;
}

// 5. The table.
const small = Math.min(...SIZES);
const f1 = (x: number) => x.toFixed(1);
const header = ["measure", ...SIZES.map((k) => `${k.toLocaleString("en-US")} items`), `${largest.toLocaleString("en-US")} ÷ ${small}`, "target", "verdict"];
const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
const row = (name: string, by: Map<number, number>, target: number | null) => {
  const ratio = by.get(largest)! / by.get(small)!;
  return line([
    name,
    ...SIZES.map((k) => f1(by.get(k)!)),
    `${ratio.toFixed(2)}×`,
    target === null ? "" : `≤ ${target}×`,
    target === null ? "" : ratio <= target ? "ok" : "**MISS**",
  ]);
};
const med = (m: Map<number, number[]>) => new Map([...m].map(([k, xs]) => [k, median(xs)]));
const out = [
  `loop scale · ${DIST} · Bun ${Bun.version} · ${new Date().toISOString()} · ${RUNS} rounds; ticks: median ms of the compiled binary (${RUNS} launches, ${RUNS * 3} observing ticks per size); append: median ms of ${APPENDS} in-process Store.append calls`,
  "",
  line(header),
  line(header.map(() => "---")),
  row("append (one item event, in process)", appendMs, null),
  row("launch tick", med(launches), 3),
  row("observing tick", med(observes), 2),
  line([
    "replay peak RSS MiB",
    ...SIZES.map((k) => (k === largest && rss !== null ? f1(rss) : "")),
    "",
    "≤ 200 MiB",
    rss === null ? "–" : rss <= 200 ? "ok" : "**MISS**",
  ]),
  "",
];
process.stdout.write(out.join("\n"));
rmSync(WORK, { recursive: true, force: true });
