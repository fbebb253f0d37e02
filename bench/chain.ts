#!/usr/bin/env bun
// bench/chain.ts: how fast a backlog of instant items drains under a once-a-minute cron, with
// chained steps (docs/cli/loop-run.md#chained-steps) and without (LOOP_CHAIN=off). The minute is
// simulated: a tick runs, then the bench waits `--minute` real seconds (instant agents and verifies
// end well within it) before the next tick, until the loop drains; with chaining the minute is a real
// one (the wrappers' chained steps, not the ticks, carry the backlog). It counts the ticks and, with
// chaining, the real time from the first tick to the drain, and from the event log loop's own time
// per item (the first reservation to the drain, less each agent's and verify's own run, per item).
// Prints a markdown table.
//   bun bench/chain.ts [--items 10] [--minute 10] [--modes off,on] [--bin dist/loop]   (without --bin: bun cmd/loop.ts)
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { spawnSync } from "node:child_process";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { items: { type: "string" }, minute: { type: "string" }, modes: { type: "string" }, bin: { type: "string" } },
  strict: true,
});
const ITEMS = Number(values.items ?? 10);
const MINUTE_MS = Number(values.minute ?? 10) * 1000;
const MODES = (values.modes ?? "off,on").split(",").map((m) => m.trim() === "on");
const LOOP = values.bin ? [resolve(values.bin)] : [process.execPath, join(import.meta.dir, "..", "cmd", "loop.ts")];

function sh(cwd: string, ...cmd: string[]): string {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

function prepare(): string {
  const root = mkdtempSync(join(tmpdir(), "loop-chain-"));
  sh(root, "git", "init", "-q", "-b", "main");
  sh(root, "git", "config", "user.email", "bench@loop.invalid");
  sh(root, "git", "config", "user.name", "bench");
  writeFileSync(join(root, ".gitignore"), ".loop/\n");
  const def = {
    name: "chain",
    defaults: { runner: "instant", verify: "true", landing: "merge", timeouts: { launch: "5m", stall: "60m", verify: "5m" } },
    runners: { instant: { command: ["sh", "-c", 'echo "$LOOP_ITEM" > "$LOOP_ITEM.txt" && git add -A && git commit -qm "$LOOP_ITEM"'] } },
    items: Array.from({ length: ITEMS }, (_, i) => ({ id: `item-${i + 1}`, prompt: `item ${i + 1}` })),
  };
  writeFileSync(join(root, "loop.json"), JSON.stringify(def, null, 2));
  sh(root, "git", "add", "-A");
  sh(root, "git", "commit", "-q", "-m", "init");
  return root;
}

function status(root: string): { state: string; passed: number } {
  const r = spawnSync(LOOP[0]!, [...LOOP.slice(1), "status", "--json", "--root", root], { cwd: root, encoding: "utf8" });
  const doc = JSON.parse(r.stdout);
  return { state: doc.loop.state, passed: doc.items.filter((i: { status: string }) => i.status === "passed").length };
}

/**
 * From the log: the first launch's reservation to the drain, per item, and what of it was loop's own
 * (less each agent's and each verify's run as their wrappers timed them).
 */
function ownTime(root: string): { perItemMs: number; ownMs: number } {
  const db = new Database(join(root, ".loop", "loop.db"), { readonly: true });
  try {
    const evs = (db.query("SELECT ts, type, payload FROM events ORDER BY seq").all() as { ts: string; type: string; payload: string }[]).map((r) => ({
      ts: Date.parse(r.ts),
      type: r.type,
      payload: JSON.parse(r.payload),
    }));
    const first = evs.find((e) => e.type === "launch_reserved")!.ts;
    const last = evs.find((e) => e.type === "loop_drained")?.ts ?? evs.at(-1)!.ts;
    const span = (t: { started?: string; ended?: string } | undefined) => (t?.started && t.ended ? Date.parse(t.ended) - Date.parse(t.started) : 0);
    let work = 0;
    for (const e of evs) if (e.type === "session_ended" || e.type === "verify_finished") work += span(e.payload.times);
    return { perItemMs: (last - first) / ITEMS, ownMs: (last - first - work) / ITEMS };
  } finally {
    db.close();
  }
}

async function drain(chain: boolean): Promise<{ ticks: number; drainedMs: number; passed: number; perItemMs: number; ownMs: number }> {
  const root = prepare();
  const env = { ...process.env, LOOP_CHAIN: chain ? "on" : "off", NO_COLOR: "1" };
  const t0 = performance.now();
  try {
    for (let tick = 1; tick <= ITEMS * 4 + 5; tick++) {
      const r = spawnSync(LOOP[0]!, [...LOOP.slice(1), "run", "--quiet", "--root", root], { cwd: root, env, encoding: "utf8" });
      if (r.status !== 0 && r.status !== 75) throw new Error(`loop run exited ${r.status}: ${r.stderr}`);
      // The simulated minute: watched closely, so the drain's own moment is seen.
      const until = performance.now() + (chain ? 60_000 : MINUTE_MS);
      while (performance.now() < until) {
        const s = status(root);
        if (s.state === "drained") return { ticks: tick, drainedMs: performance.now() - t0, passed: s.passed, ...ownTime(root) };
        await Bun.sleep(100);
      }
    }
    throw new Error("not drained");
  } finally {
    await Bun.sleep(500);
    rmSync(root, { recursive: true, force: true });
  }
}

const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(", ");
const rows: string[] = [];
for (const chain of MODES) {
  const r = await drain(chain);
  // Under a real one-minute cron: without chaining every tick but the last costs a minute, the last
  // what it took; with chaining (real minutes between ticks) the real time from the first tick.
  const cronMinutes = chain ? r.drainedMs / 60_000 : r.ticks - 1 + (r.drainedMs - (r.ticks - 1) * MINUTE_MS) / 60_000;
  rows.push(
    `| ${chain ? "on" : "off"} | ${ITEMS} | ${r.passed} | ${r.ticks} | ${(r.ticks / ITEMS).toFixed(2)} | ${chain ? `${(r.drainedMs / 1000).toFixed(1)} s` : "—"} | ${(ITEMS / cronMinutes).toFixed(1)} | ${chain ? `${(r.perItemMs / 1000).toFixed(2)} s` : "—"} | ${chain ? `${(r.ownMs / 1000).toFixed(2)} s` : "—"} | ${load()} |`,
  );
  process.stderr.write(`chain ${chain ? "on" : "off"}: ${r.ticks} ticks\n`);
}
console.log(
  "| chaining | items | passed | ticks to drain | ticks per item | first tick → drained (real) | items per minute (1-minute cron) | wall per item | loop's own per item | load (1, 5, 15 min) at the end |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
