#!/usr/bin/env bun
// bench/generate.ts — build a project root whose state root holds exactly N realistic events.
//
//   bun bench/generate.ts --events N --out DIR [--items K] [--seed S] [--force] [--quiet]
//
// DIR becomes a git repository (one commit) with a valid loop.json of K items (runner "demo"), and
// DIR/.loop a state root whose log is what `loop run` would have written over many cycles:
// store_opened, definition_imported, loop_started, then per item launch_reserved → session_started →
// session_ended → verify_finished (some fail → item_requeued → a second attempt) → landing_finished
// → item_settled → session_closed, with control/reply/needs_input/pause episodes and blocked
// dependents; when every item is settled, loop_drained, a work_item_reset of every item and
// loop_reopened — again and again until N events. The log is cut only between whole blocks (never
// with an item in flight) and padded with lease_taken_over events to hit N exactly.
//
// It is fast because it bypasses Store.append (one durable transaction per call): rows
// are inserted in large transactions with the store's own hash chain (hashInput, sha256Hex,
// canonicalJson), every event is checked with payloadProblem and folded with reduceInto (so an
// illegal event aborts generation), and the projection tables are written once at the end.
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { canonicalJson, sha256Hex } from "../lib/log/canonical.ts";
import { definitionHash } from "../lib/definition/normalize.ts";
import { parseDefinitionText } from "../lib/definition/loop-json.ts";
import { type EventDraft, payloadProblem, type StoredEvent } from "../lib/log/events.ts";
import { materialize } from "../lib/log/materialize.ts";
import { sessionDir, worktreeDir } from "../lib/shared/paths.ts";
import type { Projection } from "../lib/log/projection.ts";
import { reduceInto } from "../lib/log/reducer.ts";
import { counts } from "../lib/log/documents.ts";
import { Store } from "../lib/log/store.ts";
import { hashInput } from "../lib/log/integrity.ts";
import { writeWholeProjection } from "../lib/log/rows.ts";

export interface GenerateOptions {
  events: number;
  out: string;
  items?: number;
  seed?: number;
  force?: boolean;
  log?: (msg: string) => void;
  /** A command runner every item uses from now on (bench/scale.ts: an agent that sleeps, so a launched attempt stays in flight). The log's history still names "demo". */
  runner?: { name: string; command: string[] };
}

export interface GenerateResult {
  root: string;
  stateRoot: string;
  events: number;
  cycles: number;
  padded: number;
  byType: Record<string, number>;
  ms: number;
}

// ---------------------------------------------------------------------------------------------
// Deterministic randomness (mulberry32), so the same arguments give the same log shape.

function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const hex = (n: number) => {
    let s = "";
    while (s.length < n)
      s += Math.floor(next() * 0x100000000)
        .toString(16)
        .padStart(8, "0");
    return s.slice(0, n);
  };
  return {
    next,
    chance: (p: number) => next() < p,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
    hex,
    uuid: () => {
      const h = hex(32);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${"89ab"[parseInt(h[16]!, 16) & 3]}${h.slice(17, 20)}-${h.slice(20, 32)}`;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The project root.

const TOPICS = [
  "Fix the login redirect loop",
  "Add pagination to the /orders endpoint",
  "Retry webhook deliveries with exponential backoff",
  "Remove the deprecated v1 token parser",
  "Make the CSV export stream instead of buffering",
  "Validate email addresses on signup",
  "Cache the pricing table for five minutes",
  "Log the request id on every error response",
  "Upgrade the rate limiter to a sliding window",
  "Handle daylight-saving transitions in the scheduler",
];

export function definitionText(k: number, runner?: { name: string; command: string[] }): string {
  const items = [];
  for (let i = 0; i < k; i++) {
    const id = itemId(i);
    const item: Record<string, unknown> = {
      id,
      ref: `github:acme/api#${1000 + i}`,
      prompt: `${TOPICS[i % TOPICS.length]} (issue #${1000 + i}). Keep the change small and add a test.`,
    };
    // Some chains of dependencies, so a failed item blocks its dependents.
    const deps: string[] = [];
    if (i % 10 === 9) deps.push(itemId(i - 1));
    if (i % 25 === 24) deps.push(itemId(i - 3));
    if (deps.length) item.dependsOn = deps;
    if (i % 7 === 3) item.verify = `bun test tests/item-${i}.test.ts`;
    if (i % 50 === 17) item.maxAttempts = 3;
    items.push(item);
  }
  const def = {
    name: "bench-backlog",
    defaults: {
      runner: runner?.name ?? "demo",
      model: null,
      verify: "bun test",
      maxAttempts: 2,
      timeouts: { launch: "5m", stall: "60m", verify: "15m" },
      landing: "none",
    },
    runners: runner ? { [runner.name]: { command: runner.command } } : {},
    control: { requireStartCommand: false },
    sessions: { tmux: false },
    workspace: { keepCheckoutOnClose: false, base: "main" },
    items,
  };
  return JSON.stringify(def, null, 2) + "\n";
}

function itemId(i: number): string {
  return `item-${String(i + 1).padStart(4, "0")}`;
}

function git(cwd: string, args: string[]) {
  const r = Bun.spawnSync(["git", ...args], {
    cwd,
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "bench",
      GIT_AUTHOR_EMAIL: "bench@example.invalid",
      GIT_COMMITTER_NAME: "bench",
      GIT_COMMITTER_EMAIL: "bench@example.invalid",
      GIT_AUTHOR_DATE: "2025-01-01T00:00:00Z",
      GIT_COMMITTER_DATE: "2025-01-01T00:00:00Z",
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr.toString()}`);
}

// ---------------------------------------------------------------------------------------------

export function generate(opts: GenerateOptions): GenerateResult {
  const t0 = performance.now();
  const N = opts.events;
  const K = opts.items ?? 500;
  const log = opts.log ?? (() => {});
  if (!Number.isSafeInteger(N) || N < 3) throw new Error("--events must be an integer >= 3");
  if (!Number.isSafeInteger(K) || K < 1 || K > 9999) throw new Error("--items must be an integer from 1 to 9999");
  const root = resolve(opts.out);
  if (existsSync(root) && readdirSync(root).length > 0) {
    if (!opts.force) throw new Error(`${root} exists and is not empty (use --force to replace it)`);
    rmSync(root, { recursive: true, force: true });
  }
  mkdirSync(root, { recursive: true });
  const R = rng(opts.seed ?? 1);

  // 1. The project: a git repo with loop.json, one commit.
  const defText = definitionText(K, opts.runner);
  const def = parseDefinitionText(defText, "loop.json");
  writeFileSync(join(root, "loop.json"), defText);
  writeFileSync(join(root, "README.md"), `# bench project\n\nGenerated by bench/generate.ts: ${K} items, ${N} events.\n`);
  writeFileSync(join(root, ".gitignore"), ".loop/\n");
  git(root, ["init", "-q", "-b", "main"]);
  git(root, ["add", "-A"]);
  git(root, ["-c", "commit.gpgsign=false", "commit", "-q", "-m", "bench project"]);

  // 2. The store: schema and event 1 (store_opened) come from Store.open itself.
  const stateRoot = join(root, ".loop");
  mkdirSync(stateRoot, { recursive: true });
  writeFileSync(join(stateRoot, ".gitignore"), "# loop's state root: never commit it\n*\n");
  const store = Store.open(stateRoot, { create: true, actor: "bench@generator" });
  const db = store.db;
  const p: Projection = structuredClone(store.projection()); // folded into here; the store's own copy is read only
  if (p.seq !== 1) throw new Error(`fresh store is at seq ${p.seq}, expected 1`);

  const insert = db.prepare("INSERT INTO events(seq, id, ts, type, actor, item, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?)");
  const BATCH = 50_000;
  let inTx = 0;
  let clock = Date.parse(p.loop.updatedAt ?? "2025-01-01T00:00:00.000Z");
  const byType: Record<string, number> = { store_opened: 1 };
  const STEP = "loop@bench-host";
  const HUMAN = "alice@bench-host";

  const commit = () => {
    if (inTx === 0) return;
    db.run("COMMIT");
    db.run("PRAGMA wal_checkpoint(TRUNCATE)");
    inTx = 0;
  };

  /** Append one event: hash chain exactly as Store.append, validated and folded. */
  const emit = (d: EventDraft, advanceMs: number) => {
    const problem = payloadProblem(d.type, d.payload);
    if (problem) throw new Error(`generator bug: ${d.type}: ${problem}`);
    clock += advanceMs;
    const payloadText = canonicalJson(d.payload);
    const row = {
      seq: p.seq + 1,
      id: d.id ?? R.uuid(),
      ts: new Date(clock).toISOString(),
      type: d.type,
      actor: d.actor ?? STEP,
      item: d.item ?? null,
      prev_hash: p.hash,
    };
    const hash = sha256Hex(hashInput(row, payloadText));
    const ev = { ...row, payload: JSON.parse(payloadText), hash } as StoredEvent;
    reduceInto(p, ev); // throws IllegalEventError on a generator bug
    if (inTx === 0) db.run("BEGIN IMMEDIATE");
    insert.run(row.seq, row.id, row.ts, row.type, row.actor, row.item, payloadText, row.prev_hash, hash);
    byType[d.type] = (byType[d.type] ?? 0) + 1;
    if (++inTx >= BATCH) {
      commit();
      log(`  ${p.seq} events`);
    }
  };

  // A block is a list of (draft, advance) pairs emitted together or not at all, so the log is cut
  // only where no item is in flight.
  type Block = [EventDraft, number][];
  const sec = (a: number, b: number) => R.int(a, b) * 1000;
  const fits = (b: Block) => p.seq + b.length <= N;
  const emitBlock = (b: Block) => {
    for (const [d, ms] of b) emit(d, ms);
  };

  const leaseTakeover = (): [EventDraft, number] => {
    const started = new Date(clock - sec(600, 3600)).toISOString();
    return [
      {
        type: "lease_taken_over",
        payload: {
          previous: {
            owner: R.uuid(),
            pid: R.int(2000, 4_000_000),
            host: "bench-host",
            started,
            expires: new Date(Date.parse(started) + 300_000).toISOString(),
          },
          why: R.chance(0.7) ? "dead" : "expired",
        },
      },
      sec(1, 60),
    ];
  };

  /** Every event of one item's turn in a cycle, decided up front from the current projection. */
  const itemBlock = (id: string): Block => {
    const it = p.items[id]!;
    const b: Block = [];
    if (R.chance(0.003)) b.push(leaseTakeover());
    const failedDep = it.def.dependsOn.find((d) => p.items[d]!.status !== "passed");
    if (failedDep !== undefined) {
      b.push([
        {
          type: "item_settled",
          item: id,
          payload: {
            attempt: 0,
            outcome: "blocked",
            code: "dependency_failed",
            reason: `dependency "${failedDep}" did not pass (${p.items[failedDep]!.status})`,
          },
        },
        sec(1, 5),
      ]);
      return b;
    }
    if (R.chance(0.05)) b.push([{ type: "control_recorded", item: id, actor: HUMAN, payload: { verb: "start", text: null } }, sec(10, 600)]);
    if (R.chance(0.03))
      b.push([{ type: "reply_recorded", item: id, actor: HUMAN, payload: { text: "Prefer the smaller patch; do not touch the schema." } }, sec(10, 600)]);

    const epoch = it.epoch;
    const branch = `loop/${id}`;
    const worktree = worktreeDir(stateRoot, id);
    // Per-attempt verify outcome: most pass first time, some pass on retry, a few fail for good.
    const hard = R.chance(0.06);
    const flaky = !hard && R.chance(0.15);
    let failures = 0;
    let asked = false;
    for (let attempt = 1; ; attempt++) {
      const dir = sessionDir(stateRoot, id, epoch, attempt);
      b.push([
        {
          type: "launch_reserved",
          item: id,
          id: `launch:${id}:e${epoch}:a${attempt}`,
          payload: { attempt, key: `launch:${id}:e${epoch}:a${attempt}`, runner: "demo", model: null, branch, worktree, sessionDir: dir, sessionId: R.uuid() },
        },
        sec(1, 300),
      ]);
      if (R.chance(0.01)) {
        const reason = "the agent exited before its session started (exit 127: command not found)";
        b.push([{ type: "launch_failed", item: id, payload: { attempt, reason, interrupted: false } }, sec(1, 5)]);
        failures++;
        if (failures < it.def.maxAttempts) {
          b.push([{ type: "item_requeued", item: id, payload: { attempt, reason: `launch failed: ${reason}`, failed: true, resetBudget: false } }, sec(1, 2)]);
          b.push([
            { type: "session_closed", item: id, payload: { attempt, how: "never_started", worktreeRemoved: false, reason: "launch failed" } },
            sec(1, 2),
          ]);
          continue;
        }
        b.push([
          { type: "item_settled", item: id, payload: { attempt, outcome: "failed", code: "session_failed", reason: `launch failed ${failures} times` } },
          sec(1, 2),
        ]);
        b.push([{ type: "session_closed", item: id, payload: { attempt, how: "never_started", worktreeRemoved: true, reason: "settled failed" } }, sec(1, 2)]);
        return b;
      }
      b.push([
        {
          type: "session_started",
          item: id,
          payload: {
            attempt,
            pid: R.int(2000, 4_000_000),
            tmux: null,
            conversationId: null,
            argv: ["/usr/local/bin/loop", "__demo-agent"],
            log: join(dir, "agent.log"),
            resumed: false,
          },
        },
        sec(1, 3),
      ]);
      if (!asked && R.chance(0.02)) {
        asked = true;
        const question = "Should the migration also drop the legacy column?";
        b.push([{ type: "needs_input", item: id, payload: { attempt, question } }, sec(60, 1800)]);
        b.push([{ type: "loop_paused", payload: { reason: `${id} needs input: ${question}` } }, sec(0, 1)]);
        b.push([{ type: "control_recorded", item: id, actor: HUMAN, payload: { verb: "reply", text: "Yes, drop it." } }, sec(60, 7200)]);
        b.push([{ type: "reply_recorded", item: id, actor: HUMAN, payload: { text: "Yes, drop it." } }, sec(0, 1)]);
        b.push([{ type: "loop_resumed", payload: {} }, sec(0, 1)]);
        b.push([{ type: "item_requeued", item: id, payload: { attempt, reason: "reply received", failed: false, resetBudget: false } }, sec(1, 60)]);
        b.push([
          { type: "session_closed", item: id, payload: { attempt, how: "ended", worktreeRemoved: false, reason: "answered; relaunching with the reply" } },
          sec(1, 2),
        ]);
        continue;
      }
      const stalled = R.chance(0.02);
      b.push([
        {
          type: "session_ended",
          item: id,
          payload: stalled
            ? { attempt, verdict: "stalled", exitCode: null, signal: "SIGTERM", reason: "no output for 60m" }
            : { attempt, verdict: "exited", exitCode: 0, signal: null, reason: "agent exited with code 0" },
        },
        stalled ? 3_600_000 + sec(0, 60) : sec(120, 2400),
      ]);
      const passed = !hard && !(flaky && failures === 0) && !stalled;
      const vlog = join(dir, "verify.log");
      b.push([
        {
          type: "verify_finished",
          item: id,
          payload: passed
            ? {
                attempt,
                passed: true,
                exitCode: 0,
                timedOut: false,
                sha256: R.hex(64),
                tail: " 42 pass\n 0 fail\nRan 42 tests across 7 files. [1.84s]\n",
                log: vlog,
                code: "passed",
                noProgress: false,
                reason: "verify exited 0",
              }
            : {
                attempt,
                passed: false,
                exitCode: 1,
                timedOut: false,
                sha256: R.hex(64),
                tail: `(fail) ${TOPICS[R.int(0, TOPICS.length - 1)]} > handles the edge case [12.31ms]\n\nExpected: 200\nReceived: 500\n 41 pass\n 1 fail\n`,
                log: vlog,
                code: "exit_nonzero",
                noProgress: false,
                reason: "verify exited 1",
              },
        },
        sec(20, 300),
      ]);
      if (passed) {
        b.push([
          {
            type: "landing_finished",
            item: id,
            payload: {
              attempt,
              outcome: "none",
              branch,
              target: null,
              commit: R.hex(40),
              code: "branch_delivered",
              reason: "landing none: the branch is the deliverable",
            },
          },
          sec(1, 3),
        ]);
        b.push([{ type: "item_settled", item: id, payload: { attempt, outcome: "passed", code: "passed", reason: "verify passed" } }, sec(0, 1)]);
        b.push([{ type: "session_closed", item: id, payload: { attempt, how: "ended", worktreeRemoved: true, reason: "settled passed" } }, sec(1, 5)]);
        return b;
      }
      failures++;
      if (failures < it.def.maxAttempts) {
        b.push([
          {
            type: "item_requeued",
            item: id,
            payload: { attempt, reason: "verify exited 1; retrying with the failure tail", failed: true, resetBudget: false },
          },
          sec(0, 1),
        ]);
        b.push([
          { type: "session_closed", item: id, payload: { attempt, how: "ended", worktreeRemoved: false, reason: "requeued for another attempt" } },
          sec(1, 5),
        ]);
        continue;
      }
      b.push([
        { type: "item_settled", item: id, payload: { attempt, outcome: "failed", code: "verify_failed", reason: `verify failed in ${failures} attempts` } },
        sec(0, 1),
      ]);
      b.push([{ type: "session_closed", item: id, payload: { attempt, how: "ended", worktreeRemoved: true, reason: "settled failed" } }, sec(1, 5)]);
      return b;
    }
  };

  // 3. The log.
  let cycles = 0;
  const head: Block = [
    [
      {
        type: "definition_imported",
        payload: {
          revision: 1,
          hash: definitionHash(def),
          name: def.name,
          settings: {
            landing: def.landing,
            base: def.base,
            target: def.target,
            tmux: def.tmux,
            keepCheckoutOnClose: def.keepCheckoutOnClose,
            requireStartCommand: def.requireStartCommand,
            runners: def.runners,
          },
          items: def.items,
        },
      },
      1000,
    ],
    [{ type: "loop_started", payload: {} }, 10],
  ];
  let full = false;
  for (const [d, ms] of head) if (p.seq < N) emit(d, ms);
  while (!full && p.seq < N) {
    cycles++;
    for (const id of p.order) {
      const b = itemBlock(id);
      if (!fits(b)) {
        full = true;
        break;
      }
      emitBlock(b);
    }
    if (full) break;
    const c = counts(p);
    const drained: Block = [
      [{ type: "loop_drained", payload: { outcome: (c.failed ?? 0) + (c.blocked ?? 0) > 0 ? "Failed" : "Succeeded", counts: c } }, sec(1, 60)],
    ];
    if (!fits(drained)) break;
    emitBlock(drained);
    // An operator resets everything (one transaction: one work_item_reset per item), then the loop reopens.
    for (const id of p.order) {
      const reset: Block = [[{ type: "work_item_reset", item: id, actor: HUMAN, payload: { pieces: ["session", "control", "ledgers", "workspace"] } }, 0]];
      if (!fits(reset)) {
        full = true;
        break;
      }
      emitBlock(reset);
    }
    if (full) break;
    const reopen: Block = [[{ type: "loop_reopened", payload: { reason: `reset of ${p.order.length} items` } }, sec(30, 3600)]];
    if (!fits(reopen)) break;
    emitBlock(reopen);
  }
  let padded = 0;
  while (p.seq < N) {
    const [d, ms] = leaseTakeover();
    emit(d, ms);
    padded++;
  }
  commit();
  if (p.seq !== N) throw new Error(`internal: wrote ${p.seq} events, wanted ${N}`);

  // 4. Projection tables once, then the materializations, then close (checkpoints: no -wal left).
  store.tx(() => writeWholeProjection(db, p));
  materialize(stateRoot, store);
  // TRUNCATE here, where no reader can wait on it: the store's own close checkpoints PASSIVE (it must
  // never wait on a reader), and a statement this generator left unfinalized defers the close that
  // would delete the WAL. A WAL left behind makes every read verb copy the whole database to read it.
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  store.close();
  return { root, stateRoot, events: p.seq, cycles, padded, byType, ms: performance.now() - t0 };
}

// ---------------------------------------------------------------------------------------------

if (import.meta.main) {
  const USAGE = "usage: bun bench/generate.ts --events N --out DIR [--items K] [--seed S] [--force] [--quiet]";
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: process.argv.slice(2),
      options: {
        events: { type: "string" },
        out: { type: "string" },
        items: { type: "string" },
        seed: { type: "string" },
        force: { type: "boolean" },
        quiet: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(USAGE + "\n");
    process.exit(0);
  }
  const int = (s: unknown, name: string, dflt?: number): number => {
    if (s === undefined && dflt !== undefined) return dflt;
    const n = Number(String(s ?? "").replace(/_/g, ""));
    if (!/^[0-9_]+$/.test(String(s ?? "")) || !Number.isSafeInteger(n)) {
      process.stderr.write(`--${name} needs an integer\n${USAGE}\n`);
      process.exit(2);
    }
    return n;
  };
  if (!values.out) {
    process.stderr.write(`--out is required\n${USAGE}\n`);
    process.exit(2);
  }
  const quiet = Boolean(values.quiet);
  try {
    const r = generate({
      events: int(values.events, "events"),
      out: String(values.out),
      items: int(values.items, "items", 500),
      seed: int(values.seed, "seed", 1),
      force: Boolean(values.force),
      log: quiet ? undefined : (m) => process.stderr.write(m + "\n"),
    });
    process.stdout.write(
      JSON.stringify(
        { root: r.root, events: r.events, cycles: r.cycles, padded: r.padded, seconds: +(r.ms / 1000).toFixed(2), byType: r.byType },
        null,
        quiet ? 0 : 2,
      ) + "\n",
    );
  } catch (err) {
    process.stderr.write(`generate: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
