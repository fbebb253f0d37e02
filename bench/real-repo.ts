#!/usr/bin/env bun
// bench/real-repo.ts: loop's own time per item on a repository of a real project's size (issue 48).
// A generated repository whose one pack holds about `--objects` objects, a `workspace.setup` that
// writes a `--deps`-file dependency folder (node_modules, no network), an agent (a `command` runner)
// that changes one file and commits, a verify of fixed length (`sleep --verify-s`), landing `merge`.
// `loop run` drains `--items` items through chained steps (the wrappers run the next step; the bench
// only starts the first one and polls `loop status`). The figures come from the event log: each
// item's phases, from its launch's reservation to the next item's (the last: to the drain), and
// loop's own time = wall-clock − agent − setup − verify (what the work itself takes).
// `--setup-sleep-s`: setup also sleeps that long (what a real `npm ci` spends besides writing its files:
// resolving, reading its cache, running scripts), to see what running it once per setup key saves.
//   bun bench/real-repo.ts [--items 4] [--objects 20000] [--deps 10000] [--setup-sleep-s 0] [--verify-s 2] [--bin dist/loop] [--keep]
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { spawnSync } from "node:child_process";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    items: { type: "string" },
    objects: { type: "string" },
    deps: { type: "string" },
    "setup-sleep-s": { type: "string" },
    "verify-s": { type: "string" },
    bin: { type: "string" },
    keep: { type: "boolean" },
  },
  strict: true,
});
const ITEMS = Number(values.items ?? 4);
const OBJECTS = Number(values.objects ?? 20_000);
const DEPS = Number(values.deps ?? 10_000);
const VERIFY_S = Number(values["verify-s"] ?? 2);
const SETUP_SLEEP_S = Number(values["setup-sleep-s"] ?? 0);
const BIN = resolve(values.bin ?? join(import.meta.dir, "..", "dist", "loop"));

function sh(cwd: string, cmd: string[], env?: Record<string, string | undefined>): string {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { cwd, encoding: "utf8", env: env ?? process.env });
  if (r.status !== 0) throw new Error(`${cmd.join(" ")}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/**
 * One pack of about `objects` objects: files in 100 folders, each written four times, of bytes that do
 * not compress (about 7 MB for 20,000 objects, as a real project's); made once, in the temporary folder.
 */
function template(objects: number): string {
  const dir = join(tmpdir(), `loop-bench-real-repo-v2-${objects}`);
  if (existsSync(join(dir, ".git", "loop-template-done"))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  sh(dir, ["git", "init", "-q", "-b", "main"]);
  const files = Math.max(1, Math.floor(objects / 4));
  for (let round = 0; round < 4; round++) {
    for (let i = 0; i < files; i++) {
      const sub = join(dir, "src", `m${i % 100}`);
      if (round === 0 && i < 100) mkdirSync(sub, { recursive: true });
      writeFileSync(join(sub, `f${i}.ts`), `// file ${i}, round ${round}\nexport const v${i} = "${randomBytes(150).toString("hex")}";\n`);
    }
    sh(dir, ["git", "add", "-A"]);
    // No automatic gc: one running detached would race the repack below and leave two packs.
    sh(dir, ["git", "-c", "gc.auto=0", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-q", "-m", `round ${round}`]);
  }
  sh(dir, ["git", "repack", "-adq"]);
  writeFileSync(join(dir, ".git", "loop-template-done"), "");
  return dir;
}

// The setup: a dependency folder of DEPS small files in 100 packages, as `npm ci` would leave it (no network).
const SETUP_JS = `const fs = require("fs");
const n = Number(process.argv[2]);
for (let p = 0; p < 100; p++) fs.mkdirSync("node_modules/pkg" + p + "/lib", { recursive: true });
for (let i = 0; i < n; i++) fs.writeFileSync("node_modules/pkg" + (i % 100) + "/lib/m" + i + ".js", "module.exports = " + i + ";\\n" + "/* padding */ ".repeat(60) + "\\n");
`;

function prepare(): { root: string; env: Record<string, string | undefined> } {
  const base = mkdtempSync(join(tmpdir(), "loop-real-"));
  const root = join(base, "repo");
  sh(base, ["cp", "-a", template(OBJECTS), root]);
  sh(root, ["git", "config", "user.email", "bench@loop.invalid"]);
  sh(root, ["git", "config", "user.name", "bench"]);
  writeFileSync(join(root, ".gitignore"), ".loop/\nnode_modules/\n");
  writeFileSync(join(root, "setup.js"), SETUP_JS);
  const def = {
    name: "real",
    defaults: { runner: "edit", verify: `sleep ${VERIFY_S}`, landing: "merge", timeouts: { launch: "5m", stall: "60m", verify: "5m" } },
    runners: {
      // A small change to one file the repository has, committed as an agent would.
      edit: { command: ["sh", "-c", 'n="${LOOP_ITEM#item-}"; echo "// $LOOP_ITEM" >> "src/m$n/f$n.ts" && git add -A && git commit -qm "$LOOP_ITEM"'] },
    },
    workspace: { setup: `node setup.js ${DEPS}${SETUP_SLEEP_S > 0 ? ` && sleep ${SETUP_SLEEP_S}` : ""}` },
    items: Array.from({ length: ITEMS }, (_, i) => ({ id: `item-${i + 1}`, prompt: `change file ${i + 1}` })),
  };
  writeFileSync(join(root, "loop.json"), JSON.stringify(def, null, 2));
  sh(root, ["git", "add", "-A"]);
  sh(root, ["git", "commit", "-q", "-m", "loop.json"]);
  // Checkouts beside the repository, on its file system, removed with it.
  const env = { ...process.env, LOOP_WORKTREES: join(base, "worktrees"), LOOP_SESSION_SCOPE: "off", LOOP_CHAIN: "on", NO_COLOR: "1" };
  return { root, env };
}

interface Ev {
  ts: number;
  type: string;
  item: string | null;
  payload: Record<string, unknown>;
}

function events(root: string): Ev[] {
  const db = new Database(join(root, ".loop", "loop.db"), { readonly: true });
  try {
    return (
      db.query("SELECT ts, type, item, payload FROM events ORDER BY seq").all() as { ts: string; type: string; item: string | null; payload: string }[]
    ).map((r) => ({
      ts: Date.parse(r.ts),
      type: r.type,
      item: r.item,
      payload: JSON.parse(r.payload),
    }));
  } finally {
    db.close();
  }
}

async function drain(root: string, env: Record<string, string | undefined>): Promise<void> {
  const deadline = performance.now() + ITEMS * 180_000;
  let last = "";
  let still = performance.now();
  const step = () => {
    const r = spawnSync(BIN, ["run", "--quiet", "--root", root], { cwd: root, env, encoding: "utf8" });
    if (r.status !== 0 && r.status !== 75) throw new Error(`loop run exited ${r.status}: ${r.stderr}`);
  };
  step();
  while (performance.now() < deadline) {
    await Bun.sleep(250);
    const s = spawnSync(BIN, ["status", "--json", "--root", root], { cwd: root, env, encoding: "utf8" });
    const doc = JSON.parse(s.stdout);
    if (doc.loop.state === "drained") return;
    if (doc.loop.state !== "running") throw new Error(`the loop is ${doc.loop.state}: ${doc.loop.reason ?? ""}`);
    const now = JSON.stringify(doc.items.map((i: { status: string }) => i.status));
    if (now !== last) [last, still] = [now, performance.now()];
    // The backstop a cron would be: nothing moved for 20 s (a chained step that lost the lease race).
    else if (performance.now() - still > 20_000) {
      process.stderr.write("no progress for 20 s: running a step\n");
      step();
      still = performance.now();
    }
  }
  throw new Error("not drained in time");
}

const PHASES = ["launch", "setup", "agent", "agent→verify", "verify", "verify→landed", "cleanup", "→next launch"] as const;
type Phase = (typeof PHASES)[number];

/** Each item's phases (ms) from the log: reservation → setup → agent → the airlock and the gates → verify → landing → close → the next reservation. */
function phases(evs: Ev[]): { item: string; wall: number; work: number; parts: Record<Phase, number> }[] {
  const out: { item: string; wall: number; work: number; parts: Record<Phase, number> }[] = [];
  const reserved = evs.filter((e) => e.type === "launch_reserved");
  const drained = evs.find((e) => e.type === "loop_drained")?.ts ?? evs.at(-1)!.ts;
  for (const [i, r] of reserved.entries()) {
    const mine = evs.filter((e) => e.item === r.item && e.ts >= r.ts);
    const one = (type: string) => mine.find((e) => e.type === type);
    const end = reserved[i + 1]?.ts ?? drained;
    const setupMs = Number((one("workspace_prepared")?.payload.setup as { ms?: number } | null)?.ms ?? 0);
    const ended = one("session_ended")!;
    const at = (t: unknown, dflt: number) => (typeof t === "string" ? Date.parse(t) : dflt);
    const times = (ended.payload.times ?? {}) as { started?: string; ended?: string };
    const agentFrom = at(times.started, one("session_started")!.ts);
    const agentTo = at(times.ended, ended.ts);
    const vf = one("verify_finished")!;
    const vt = (vf.payload.times ?? {}) as { started?: string; ended?: string };
    const verifyFrom = at(vt.started, one("verify_started")!.ts);
    const verifyTo = at(vt.ended, vf.ts);
    const landed = one("landing_finished")?.ts ?? vf.ts;
    const closed = one("session_closed")?.ts ?? landed;
    const parts: Record<Phase, number> = {
      launch: agentFrom - r.ts - setupMs,
      setup: setupMs,
      agent: agentTo - agentFrom,
      "agent→verify": verifyFrom - agentTo,
      verify: verifyTo - verifyFrom,
      "verify→landed": landed - verifyTo,
      cleanup: closed - landed,
      "→next launch": end - closed,
    };
    out.push({ item: r.item!, wall: end - r.ts, work: parts.setup + parts.agent + parts.verify, parts });
  }
  return out;
}

const { root, env } = prepare();
const counted = sh(root, ["git", "count-objects", "-v"]);
process.stderr.write(
  `repository ${root}: ${counted.match(/in-pack: (\d+)/)?.[1]} objects in ${counted.match(/packs: (\d+)/)?.[1]} pack(s) of ${counted.match(/size-pack: (\d+)/)?.[1]} KiB\n`,
);
const t0 = performance.now();
try {
  await drain(root, env);
  const total = performance.now() - t0;
  const all = events(root);
  const rows = phases(all);
  // The verify on the base (docs/cli/loop-run.md#the-verify-on-the-base): setup and the verify once, before the first launch.
  const base = all.find((e) => e.type === "base_verify_finished");
  const s = (ms: number) => (ms / 1000).toFixed(2);
  const meanRow = (label: string, rs: typeof rows): string => {
    const total = (f: (r: (typeof rows)[number]) => number) => rs.reduce((t, r) => t + f(r), 0);
    const w = total((r) => r.wall);
    const o = w - total((r) => r.work);
    return `| ${label} | ${s(w / rs.length)} | ${s(total((r) => r.work) / rs.length)} | **${s(o / rs.length)}** | **${((o / w) * 100).toFixed(1)}%** | ${PHASES.map((p) => s(total((r) => r.parts[p]) / rs.length)).join(" | ")} |`;
  };
  const load = sh(root, ["cat", "/proc/loadavg"]).split(" ").slice(0, 3).join(" ");
  // Setup once per setup key (docs/operations.md#setup-once-per-lockfile): where it ran, where what it made was copied.
  const prepared = all.filter((e) => e.type === "workspace_prepared" && e.payload.setup);
  const copied = prepared.filter((e) => typeof (e.payload.setup as { reusedFrom?: unknown }).reusedFrom === "string").length;
  // The bench's setup runs in the verify on the base too (its key names the setup).
  const setupOnBase = base !== undefined;
  const lines = [
    `${rows.length} items, ${OBJECTS} objects, ${DEPS}-file setup${SETUP_SLEEP_S ? ` + sleep ${SETUP_SLEEP_S}` : ""}, verify sleep ${VERIFY_S}; binary ${BIN}; load ${load}; bench wall ${s(total)} s; setup ran ${prepared.length - copied}× in items${base?.payload.code === "passed" && setupOnBase ? " and once in the verify on the base" : ""}, reused ${copied}× (a copy or a spare checkout)`,
    "",
    `| item | wall s | setup+agent+verify s | loop's own s | share | ${PHASES.join(" | ")} |`,
    `|---|---:|---:|---:|---:|${PHASES.map(() => "---:").join("|")}|`,
    ...rows.map(
      (r) =>
        `| ${r.item} | ${s(r.wall)} | ${s(r.work)} | ${s(r.wall - r.work)} | ${(((r.wall - r.work) / r.wall) * 100).toFixed(1)}% | ${PHASES.map((p) => s(r.parts[p])).join(" | ")} |`,
    ),
    meanRow("**mean**", rows),
    // The first item writes its checkout whole and runs setup; every later one takes the spare checkout
    // the one before left (docs/state.md#the-spare-checkout): the backlog's pace is theirs.
    ...(rows.length > 1 ? [meanRow("**mean, items 2–**", rows.slice(1))] : []),
    "",
    base
      ? `verify on the base (once, before the first launch, not in the items' figures): ${s(Number((base.payload as { ms: number }).ms))} s, ${(base.payload as { code: string }).code}`
      : "verify on the base: none",
  ];
  console.log(lines.join("\n"));
} finally {
  if (!values.keep) {
    spawnSync(BIN, ["ctl", "stop", "--yes", "--json", "--root", root], { cwd: root, env: { ...env, LOOP_KILL_GRACE_MS: "200" } });
    // The last chained step may still be finishing (its sweep, its files): removed again until it is gone.
    const base = resolve(root, "..");
    for (let i = 0; i < 20 && existsSync(base); i++) {
      spawnSync("rm", ["-rf", base]);
      if (existsSync(base)) await Bun.sleep(500);
    }
    if (existsSync(base)) process.stderr.write(`could not remove ${base}\n`);
  } else process.stderr.write(`kept ${root}\n`);
}
