#!/usr/bin/env bun
// The main job on an embedded default: a real loop, driven to done with `loop run` steps.
// Creates a temporary git repository, drafts its backlog from a one-paragraph brief with `loop plan`
// and the built-in demo planner (offline, deterministic), adds one item by hand with `loop add`, then
// runs `loop run` as cron would until the loop drains — one item depends on another, one fails its
// first attempt and passes on the retry — and prints `loop status`, `loop replay` and `loop export`.
// Usage: npm run demo [-- --keep] [-- --dir DIR]
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnSync } from "node:child_process";

const args = process.argv.slice(2);
const keep = args.includes("--keep");
const dirArg = args.indexOf("--dir");
const root = dirArg >= 0 ? resolve(args[dirArg + 1]!) : mkdtempSync(join(tmpdir(), "loop-demo-"));
mkdirSync(root, { recursive: true });
const loop = [process.execPath, join(import.meta.dir, "..", "cmd", "loop.ts")];

function sh(cmd: string[], opts: { cwd?: string; quiet?: boolean } = {}) {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { cwd: opts.cwd ?? root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  if (!opts.quiet && r.stderr) process.stderr.write(r.stderr);
  return r;
}

const say = (s: string) => process.stderr.write(`\n== ${s}\n`);

say(`demo repository: ${root}`);
sh(["git", "init", "-q", "-b", "main"]);
sh(["git", "config", "user.email", "demo@loop.invalid"]);
sh(["git", "config", "user.name", "loop demo"]);
writeFileSync(join(root, "greet.sh"), '#!/bin/sh\necho "hello"\n');
writeFileSync(
  join(root, "check.sh"),
  '#!/bin/sh\n# The project\'s test suite: every file named in CHECKS must exist and be non-empty.\nfor f in $CHECKS; do test -s "$f" || { echo "missing or empty: $f"; exit 1; }; done\necho "all checks passed"\n',
);
sh(["git", "add", "-A"]);
sh(["git", "commit", "-q", "-m", "a tiny project"]);

// The backlog is drafted, not hand-written: a one-paragraph brief goes to `loop plan` with the
// built-in deterministic demo planner (offline), and one more item is added by hand with `loop add`.
writeFileSync(
  join(root, "loop.json"),
  `{
  // The demo loop. \`loop plan\` and \`loop add\` append to "items" and leave the rest of this file as it is.
  "name": "demo",
  "defaults": { "runner": "demo", "verify": "sh check.sh", "maxAttempts": 2, "timeouts": { "launch": "1m", "stall": "5m", "verify": "1m" }, "landing": "merge" },
  "items": []
}
`,
);
sh(["git", "add", "loop.json"]);
sh(["git", "commit", "-q", "-m", "loop definition, no items yet"]);

const brief =
  "The tiny project is a greeting script with a check script, and nothing tells a newcomer what it is. " +
  "Write a README.md that says what the project does and how to run it. " +
  "Then add a CHANGELOG.md that mentions the README.";
say("the brief:");
process.stderr.write(`${brief}\n`);
say("loop plan --runner demo --yes (one planner call drafts the backlog; --dry-run would only show it):");
const plan = sh([...loop, "plan", brief, "--runner", "demo", "--yes", "--text"], { quiet: true });
process.stderr.write(plan.stdout + plan.stderr);
if (plan.status !== 0) {
  process.stderr.write(`loop plan failed with exit ${plan.status}\n`);
  process.exit(1);
}
say("loop add (one more item, by hand; the demo agent forgets the file on its first attempt):");
const add = sh(
  [...loop, "add", "Add a LICENSE file.\n@demo attempt 1 write NOTES.md I will add the license later\n@demo attempt 2 write LICENSE MIT License", "--id", "add-license", "--ref", "github:acme/tiny#2", "--verify", "CHECKS=LICENSE sh check.sh", "--text"],
  { quiet: true },
);
process.stderr.write(add.stdout + add.stderr);
if (add.status !== 0) process.exit(1);
sh(["git", "commit", "-q", "-am", "the drafted backlog"]);

say("loop init is not needed when loop.json exists; `loop run` creates the store. Stepping as cron would:");
for (let tick = 1; tick <= 40; tick++) {
  const r = sh([...loop, "run", "--text"], { quiet: true });
  process.stderr.write(`-- tick ${tick} (exit ${r.status})\n${r.stdout}`);
  if (r.stderr.trim()) process.stderr.write(r.stderr);
  if (r.status !== 0 && r.status !== 75) {
    process.stderr.write(`loop run failed with exit ${r.status}\n`);
    process.exit(1);
  }
  if (r.stdout.startsWith("drained")) break;
  await Bun.sleep(300);
}

say("loop status");
const status = sh([...loop, "status", "--text"], { quiet: true });
process.stdout.write(status.stdout);
say("loop replay");
const replay = sh([...loop, "replay", "--text"], { quiet: true });
process.stdout.write(replay.stdout);
say("landed on loop/demo/landed:");
process.stdout.write(sh(["git", "log", "--oneline", "--graph", "loop/demo/landed"], { quiet: true }).stdout);
say("loop export --text (the backlog in the text format `loop add --from-file` reads):");
process.stdout.write(sh([...loop, "export", "--text"], { quiet: true }).stdout);
if (!keep && dirArg < 0) rmSync(root, { recursive: true, force: true });
else process.stderr.write(`\nkept ${root}\n`);
process.exitCode = status.status === 0 && replay.status === 0 ? 0 : 1;
