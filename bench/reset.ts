#!/usr/bin/env bun
// bench/reset.ts: what `loop reset` costs, on the compiled binary (a benchmark, not a test).
//   - `loop reset --all --yes` over K items (default 1,000) that each hold state but no live
//     session: a passed attempt in the log (reservation, start, end, verify, landing, settle,
//     close), a session folder with the files a real attempt leaves, and an item branch;
//   - `loop reset --work-item <id> --yes` of one item on the 1M-event bench root (bench/generate.ts;
//     cached under bench/out exactly as `bun bench/run.ts` caches it, and made when missing).
// Reset is destructive, so every timed run gets its own copy of the prepared root (the copy is not
// timed); the one-item rows reset a different item of one copy each time. Prints a markdown table.
//
//   bun bench/reset.ts [--runs N] [--items K] [--events N] [--bin dist/loop] [--skip-big] [--idle-wait SECONDS] [--dir DIR]
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { definitionText, generate } from "./generate.ts";
import { importedDefinition } from "../lib/definition/normalize.ts";
import { itemBranch } from "../lib/definition/branches.ts";
import { loadDefinition } from "../lib/definition/loop-json.ts";
import type { EventDraft } from "../lib/log/events.ts";
import { Store } from "../lib/log/store.ts";
import { materialize } from "../lib/log/materialize.ts";
import { sessionDir, worktreeDir } from "../lib/shared/paths.ts";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    runs: { type: "string" },
    items: { type: "string" },
    events: { type: "string" },
    bin: { type: "string" },
    "skip-big": { type: "boolean" },
    "idle-wait": { type: "string" },
    dir: { type: "string" },
  },
  strict: true,
});
const ROOT = resolve(import.meta.dir, "..");
const RUNS = Number(values.runs ?? 7);
const ITEMS = Number(values.items ?? 1000);
const EVENTS = Number(values.events ?? 1_000_000);
const BIN = resolve(values.bin ?? join(ROOT, "dist", "loop"));
const IDLE_WAIT_S = Number(values["idle-wait"] ?? 120);
/** Where the timed roots are made (`--dir /dev/shm` takes the disk out of the figures). */
const DIR = resolve(values.dir ?? tmpdir());
const TARGET_ALL_MS = 1000;
const TARGET_ONE_MS = 150;
const note = (m: string) => process.stderr.write(`bench/reset: ${m}\n`);

function sh(cwd: string, cmd: string[], input?: string): string {
  const r = Bun.spawnSync(cmd, { cwd, stdin: input === undefined ? "ignore" : new TextEncoder().encode(input), stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

if (!existsSync(BIN)) {
  note(`building ${BIN}`);
  sh(ROOT, [process.execPath, "run", "build"]);
}

// ---------------------------------------------------------------------------------------------
// The K-item root: every item passed once, its checkout removed at close, its folder and branch kept.

/** `onDisk`: each item also has its session folder and its branch; without, its state is in the log only. */
function prepareItems(k: number, onDisk: boolean): string {
  const root = mkdtempSync(join(DIR, "loop-bench-reset-"));
  writeFileSync(join(root, "loop.json"), definitionText(k));
  writeFileSync(join(root, ".gitignore"), ".loop/\n");
  sh(root, ["git", "init", "-q", "-b", "main"]);
  sh(root, ["git", "-c", "user.email=bench@loop.invalid", "-c", "user.name=bench", "add", "-A"]);
  sh(root, ["git", "-c", "user.email=bench@loop.invalid", "-c", "user.name=bench", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "bench"]);
  const head = sh(root, ["git", "rev-parse", "HEAD"]).trim();
  const def = loadDefinition(root);
  const stateRoot = join(root, ".loop");
  const store = Store.open(stateRoot, { create: true, actor: "bench" });
  try {
    const events: EventDraft[] = [
      { type: "definition_imported", payload: importedDefinition(def, 1) },
      { type: "loop_started", payload: {} },
    ];
    const refs: string[] = [];
    for (const it of def.items) {
      const dir = sessionDir(stateRoot, it.id, 0, 1);
      const branch = itemBranch(def.name, it.id);
      const sessionId = crypto.randomUUID();
      if (onDisk) mkdirSync(dir, { recursive: true });
      for (const [f, text] of Object.entries(
        onDisk
          ? {
              "handoff.md": `${it.prompt}\n`.repeat(20),
              "launch.json": JSON.stringify({ argv: ["demo"], cwd: worktreeDir(stateRoot, it.id), env: {}, tee: false, mark: sessionId }),
              "spawned.json": '{"pid":999999,"tmux":null}\n',
              "started.json": '{"wrapperPid":999999,"agentPid":999998}\n',
              "output.log": "working…\n".repeat(400),
              "exit.json": '{"code":0,"signal":null}\n',
              "verify.log": "12 pass\n0 fail\n",
            }
          : {},
      ))
        writeFileSync(join(dir, f), text);
      if (onDisk) refs.push(`create refs/heads/${branch} ${head}\n`);
      events.push(
        {
          type: "launch_reserved",
          item: it.id,
          id: `launch:${it.id}:e0:a1`,
          payload: {
            attempt: 1,
            key: `launch:${it.id}:e0:a1`,
            runner: "demo",
            model: null,
            branch,
            worktree: worktreeDir(stateRoot, it.id),
            sessionDir: dir,
            sessionId,
          },
        },
        {
          type: "session_started",
          item: it.id,
          payload: { attempt: 1, pid: 999999, tmux: null, conversationId: null, argv: ["demo"], log: join(dir, "output.log"), resumed: false },
        },
        { type: "session_ended", item: it.id, payload: { attempt: 1, verdict: "exited", exitCode: 0, signal: null, reason: "exited 0" } },
        {
          type: "verify_finished",
          item: it.id,
          payload: {
            attempt: 1,
            passed: true,
            exitCode: 0,
            timedOut: false,
            sha256: null,
            tail: "12 pass",
            log: join(dir, "verify.log"),
            code: "passed",
            noProgress: false,
            reason: "exit 0",
          },
        },
        {
          type: "landing_finished",
          item: it.id,
          payload: { attempt: 1, outcome: "none", branch, target: null, commit: null, code: "branch_delivered", reason: `branch ${branch} is the deliverable` },
        },
        { type: "session_closed", item: it.id, payload: { attempt: 1, how: "not_running", worktreeRemoved: true, reason: "item passed" } },
        { type: "item_settled", item: it.id, payload: { attempt: 1, outcome: "passed", code: "passed", reason: "verify passed" } },
      );
    }
    if (refs.length) sh(root, ["git", "update-ref", "--stdin"], refs.join(""));
    store.append(events, { actor: "bench" });
    materialize(stateRoot, store);
  } finally {
    store.close();
  }
  return root;
}

// ---------------------------------------------------------------------------------------------
// The 1M-event root: the one bench/run.ts caches under bench/out (same name, same key), made here
// when it is missing.

/** bench/run.ts's key of a generated root: the files that define the log format. */
function formatKey(): string {
  const h = new Bun.CryptoHasher("sha256");
  for (const f of [
    "bench/generate.ts",
    "lib/log/store.ts",
    "lib/log/snapshot.ts",
    "lib/log/events.ts",
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

function bigRoot(): string {
  const out = join(ROOT, "bench", "out");
  const root = join(out, `ev-${EVENTS}-k500-${formatKey()}`);
  if (existsSync(root)) return root;
  mkdirSync(out, { recursive: true });
  const tmp = `${root}.partial`;
  note(`generating ${EVENTS.toLocaleString("en-US")} events in ${tmp}`);
  generate({ events: EVENTS, out: tmp, items: 500, force: true, log: (m) => note(m) });
  renameSync(tmp, root); // only a complete root is ever cached
  return root;
}

// ---------------------------------------------------------------------------------------------

interface Timed {
  ms: number;
  /** user + system CPU of the command and the git processes it waited for: what load and I/O waits do not inflate. */
  cpuMs: number;
  code: number;
  doc: any;
  stderr: string;
}

function timed(cmd: string[]): Timed {
  const t0 = performance.now();
  const r = Bun.spawnSync(cmd, { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, LOOP_ACTOR: "bench@reset" } });
  const ms = performance.now() - t0;
  const cpuMs = Number(r.resourceUsage.cpuTime.user + r.resourceUsage.cpuTime.system) / 1000;
  let doc: any = null;
  try {
    doc = JSON.parse(r.stdout.toString());
  } catch {}
  return { ms, cpuMs, code: r.exitCode ?? -1, doc, stderr: r.stderr.toString() };
}

/** Wait (up to --idle-wait seconds) until the 1-minute load average is under the core count, as bench/run.ts does. */
async function waitIdle(): Promise<number> {
  const limit = Math.max(1, cpus().length - 0.5);
  const until = Date.now() + IDLE_WAIT_S * 1000;
  let said = false;
  while (loadavg()[0]! > limit && Date.now() < until) {
    if (!said) note(`load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs: waiting up to ${IDLE_WAIT_S} s for it to drop under ${limit}`);
    said = true;
    await Bun.sleep(5000);
  }
  return loadavg()[0]!;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const f1 = (x: number) => x.toFixed(1);
const rows: string[][] = [];
let failed = false;

function row(what: string, samples: Timed[], target: number, load: number, check: string) {
  const ms = samples.map((t) => t.ms);
  const m = median(ms);
  rows.push([
    what,
    String(samples.length),
    f1(m),
    `${f1(Math.min(...ms))}–${f1(Math.max(...ms))}`,
    f1(median(samples.map((t) => t.cpuMs))),
    load.toFixed(1),
    `≤ ${target} ms`,
    m <= target ? "ok" : "**MISS**",
    check,
  ]);
}

// 1. --all over K items: with their folders and branches, and (to tell loop's own cost from the
// file system's) with their state in the log only.
async function resetAll(onDisk: boolean): Promise<void> {
  note(`preparing ${ITEMS} items with state (a passed attempt${onDisk ? ", a session folder, a branch" : ", in the log only"})`);
  const template = prepareItems(ITEMS, onDisk);
  const pieces = onDisk ? "session,ledger,branch" : "session,ledger";
  try {
    const dry = timed([BIN, "reset", "--all", "--dry-run", "--json", "--root", template]);
    if (dry.code !== 0 || dry.doc?.items?.length !== ITEMS) throw new Error(`dry run: exit ${dry.code}: ${dry.stderr}`);
    const all: Timed[] = [];
    const dryRuns: Timed[] = [];
    const load = await waitIdle();
    for (let i = 0; i <= RUNS; i++) {
      const copy = `${template}-run${i}`;
      cpSync(template, copy, { recursive: true });
      Bun.spawnSync(["sync"]); // the copy's dirty pages are not the reset's to write
      try {
        const r = timed([BIN, "reset", "--all", "--yes", "--json", "--root", copy]);
        const ok = r.code === 0 && r.doc?.ok === true && r.doc.items.length === ITEMS && r.doc.items.every((x: any) => x.removed.join() === pieces);
        if (!ok) throw new Error(`reset --all: exit ${r.code}: ${r.stderr.slice(0, 2000)} ${JSON.stringify(r.doc?.items?.[0])}`);
        if (existsSync(join(copy, ".loop", "sessions", "item-0001"))) throw new Error("a session folder is left");
        if (i > 0) all.push(r); // the first run warms the page cache and the binary
        if (i > 0) dryRuns.push(timed([BIN, "reset", "--all", "--dry-run", "--json", "--root", template]));
      } finally {
        rmSync(copy, { recursive: true, force: true });
      }
    }
    const what = onDisk ? "with state (folders and branches)" : "with state in the log only";
    row(
      `\`reset --all --yes\`, ${ITEMS} items ${what}`,
      all,
      TARGET_ALL_MS,
      load,
      onDisk ? `${ITEMS} items reset, folders deleted, branches archived` : `${ITEMS} items reset`,
    );
    row(`\`reset --all --dry-run\`, ${ITEMS} items ${what}`, dryRuns, TARGET_ALL_MS, load, "plan only, for comparison");
  } finally {
    rmSync(template, { recursive: true, force: true });
  }
}
await resetAll(true);
await resetAll(false);

// 2. One item on the 1M-event root.
if (!values["skip-big"]) {
  const big = bigRoot();
  const copy = mkdtempSync(join(DIR, "loop-bench-reset-1m-"));
  try {
    note(`copying ${big} to ${copy} (reset changes it; the cached root stays as it was)`);
    cpSync(big, copy, { recursive: true });
    const state = JSON.parse(readFileSync(join(copy, ".loop", "state.json"), "utf8"));
    const withState = state.items.filter((i: any) => i.attempts > 0 || (i.status !== "pending" && i.status !== "withdrawn")).map((i: any) => i.id as string);
    if (withState.length < RUNS + 1) throw new Error(`only ${withState.length} items with state in the 1M root`);
    const one: Timed[] = [];
    Bun.spawnSync(["sync"]);
    const loadOne = await waitIdle();
    for (let i = 0; i <= RUNS; i++) {
      const id = withState[i]!;
      const r = timed([BIN, "reset", "--work-item", id, "--yes", "--json", "--root", copy]);
      if (r.code !== 0 || r.doc?.items?.[0]?.found !== true) throw new Error(`reset ${id}: exit ${r.code}: ${r.stderr}`);
      if (i > 0) one.push(r);
    }
    const replay = Bun.spawnSync([BIN, "replay", "--json", "--root", copy], { stdout: "pipe", stderr: "pipe" });
    if (replay.exitCode !== 0) throw new Error(`replay after the resets: ${replay.stdout.toString().slice(0, 2000)}`);
    row(
      `\`reset --work-item X --yes\`, ${(state.seq as number).toLocaleString("en-US")}-event root`,
      one,
      TARGET_ONE_MS,
      loadOne,
      "each run a different item; replay clean after",
    );
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

const header = ["measure", "runs", "median ms", "min–max ms", "CPU ms", "load", "target", "verdict", "checked"];
const line = (c: string[]) => `| ${c.join(" | ")} |`;
console.log(
  `bench/reset.ts · ${BIN} · roots in ${DIR} · bun ${Bun.version} · ${cpus().length}× ${cpus()[0]?.model ?? "?"} · load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}\n`,
);
console.log([line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n"));
for (const r of rows) if (r[7] !== "ok") failed = true;
process.exitCode = failed ? 1 : 0;
