#!/usr/bin/env bun
// The main job on an embedded default: a real loop, driven to done with `loop run` steps.
// Creates a temporary git repository, drafts its backlog from a one-paragraph brief with `loop plan`
// and the built-in demo planner (offline, deterministic), adds one item by hand with `loop add`, then
// runs `loop run` as cron would until the loop drains — one item depends on another, one fails its
// first attempt and passes on the retry — and prints `loop status` (with what each item's attempts
// used, reported by the demo agent through LOOP_USAGE_FILE, and the total), `loop replay` and `loop export`.
// With --forge (GitHub) or --forge gitlab, the same backlog runs against a fake forge on 127.0.0.1
// (tests/helpers/fake-github.ts or fake-gitlab.ts, backed by a real bare repository as `origin`) with
// landing "merge": the hand-added item names an issue (its context goes in the handoff), pull
// requests (GitLab: merge requests, in a project of nested groups) open, checks go green a tick
// later, and merges land; one more item's pull request fails its fake CI once, and loop reacts with
// a rework whose fix goes green (docs/forge.md#reactions). Still offline.
// With --serve, `loop serve` shows the loop's page (a live timeline) on a printed address from the
// first step on, the steps come slower so the page can be watched, and the page stays up after the
// loop drains until Ctrl-C (--listen HOST:PORT picks the address; default a free port on 127.0.0.1).
// With --tracker linear or --tracker jira, the items' issues and their conversation live in a fake
// Linear or Jira on 127.0.0.1 (tests/helpers/fake-linear.ts, fake-jira.ts) beside the fake GitHub,
// which still lands the code (docs/trackers.md): the hand-added item names the tracker's issue (its
// context in the handoff), the issue moves to "In Progress" as its attempt launches and to "Done"
// as it lands, and each outcome is said on its issue with the pull request's link.
// Usage: npm run demo [-- --keep] [-- --dir DIR] [-- --forge [github|gitlab]] [-- --tracker linear|jira] [-- --serve [--listen HOST:PORT]]
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { startFakeGitHub } from "../tests/helpers/fake-github.ts";
import { startFakeGitLab } from "../tests/helpers/fake-gitlab.ts";
import { FakeLinear } from "../tests/helpers/fake-linear.ts";
import { FakeJira } from "../tests/helpers/fake-jira.ts";
import { adfToText } from "../lib/forge/adf.ts";

const args = process.argv.slice(2);
const keep = args.includes("--keep");
const forgeAt = args.indexOf("--forge");
const trackerAt = args.indexOf("--tracker");
const trackerKind = trackerAt < 0 ? null : args[trackerAt + 1];
if (trackerKind !== null && trackerKind !== "linear" && trackerKind !== "jira") {
  process.stderr.write(`demo: --tracker takes linear or jira, not ${JSON.stringify(trackerKind ?? "")}\n`);
  process.exit(2);
}
// A tracker's items land their code on a forge: GitHub, unless --forge says otherwise.
const forgeKind = forgeAt < 0 ? (trackerKind ? "github" : null) : args[forgeAt + 1] === "gitlab" ? "gitlab" : "github";
if (forgeAt >= 0 && args[forgeAt + 1] !== undefined && !args[forgeAt + 1]!.startsWith("--") && !["github", "gitlab"].includes(args[forgeAt + 1]!)) {
  process.stderr.write(`demo: --forge takes github or gitlab, not ${JSON.stringify(args[forgeAt + 1])}\n`);
  process.exit(2);
}
const serve = args.includes("--serve");
const listenArg = args.indexOf("--listen");
const listen = listenArg >= 0 ? args[listenArg + 1]! : "127.0.0.1:0";
const dirArg = args.indexOf("--dir");
const root = dirArg >= 0 ? resolve(args[dirArg + 1]!) : mkdtempSync(join(tmpdir(), "loop-demo-"));
/** What the demo leaves behind: nothing, unless --keep (or a --dir of the user's own). */
const kept = keep || dirArg >= 0;
mkdirSync(root, { recursive: true });
const loop = [process.execPath, join(import.meta.dir, "..", "cmd", "loop.ts")];

function sh(cmd: string[], opts: { cwd?: string; quiet?: boolean } = {}) {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { cwd: opts.cwd ?? root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  if (!opts.quiet && r.stderr) process.stderr.write(r.stderr);
  return r;
}

const say = (s: string) => process.stderr.write(`\n== ${s}\n`);

say(`demo repository: ${root} (${kept ? "kept at the end" : "deleted at the end; --keep keeps it"})`);
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

/** The demo's view of its fake forge: the same few things whichever forge it is. */
interface DemoForge {
  name: string;
  apiUrl: string;
  bare: string;
  ref: string;
  /** Each open pull request's number, head sha and state. */
  pulls(): { number: number; label: string; title: string; sha: string | null; state: string }[];
  green(sha: string): boolean;
  makeGreen(sha: string): void;
  /** The fake CI fails on this head: a `build` check whose output says why. */
  makeRed(sha: string): void;
  stop(): void;
  /** Its folder (the bare repository the remote is). */
  dir: string;
}
let gh: DemoForge | null = null;
const env: Record<string, string> = { NO_COLOR: "1" };
let forgeSection = "";
if (forgeKind === "github") {
  const forgeDir = mkdtempSync(join(tmpdir(), "loop-demo-gh-"));
  const f = startFakeGitHub({ owner: "acme", repo: "tiny", dir: forgeDir });
  f.addIssue({ number: 2, title: "Add a license", body: "MIT, please. <!-- invisible on GitHub, and stripped by loop -->" });
  f.addComment({ issue: 2, login: "alice", body: "Keep it short." });
  f.switches.checks = "pending";
  forgeSection = `
  "forge": ${JSON.stringify({ provider: "github", repo: "acme/tiny", apiUrl: f.apiUrl, gitUrl: f.bare, tokenEnv: "DEMO_FORGE_TOKEN", authorizedUsers: ["alice"], pollInterval: "1s" })},`;
  gh = {
    name: "GitHub",
    apiUrl: f.apiUrl,
    bare: f.bare,
    ref: "github:acme/tiny#2",
    pulls: () =>
      [...f.pulls.values()].map((p) => ({
        number: p.number,
        label: `PR #${p.number}`,
        title: p.title,
        sha: f.headOf(p.head),
        state: p.merged ? "merged" : p.state,
      })),
    green: (sha) => f.switches.checksBySha.get(sha) === "passing",
    makeGreen: (sha) => void f.switches.checksBySha.set(sha, "passing"),
    makeRed: (sha) =>
      void f.switches.checksBySha.set(sha, {
        runs: [
          {
            name: "build",
            status: "completed",
            conclusion: "failure",
            output: { title: "CONTRIBUTING.md must say how to run the checks", summary: "docs-lint: CONTRIBUTING.md does not mention `sh check.sh`" },
            annotations: [{ path: "CONTRIBUTING.md", line: 1, level: "failure", message: "mention sh check.sh" }],
          },
        ],
        statuses: [],
      }),
    stop: () => {
      f.stop();
      // The fake forge's folder (its bare repository) is the demo's too: gone with it, unless kept.
      if (!kept) rmSync(forgeDir, { recursive: true, force: true });
    },
    dir: forgeDir,
  };
} else if (forgeKind === "gitlab") {
  const forgeDir = mkdtempSync(join(tmpdir(), "loop-demo-gl-"));
  const f = startFakeGitLab({ project: "acme/tools/tiny", dir: forgeDir });
  f.addIssue({ iid: 2, title: "Add a license", description: "MIT, please. <!-- invisible on GitLab, and stripped by loop -->" });
  f.addNote({ issue: 2, login: "alice", body: "Keep it short." });
  f.switches.checks = "pending";
  forgeSection = `
  "forge": ${JSON.stringify({ provider: "gitlab", repo: "acme/tools/tiny", apiUrl: f.apiUrl, gitUrl: f.bare, tokenEnv: "DEMO_FORGE_TOKEN", authorizedUsers: ["alice"], pollInterval: "1s" })},`;
  gh = {
    name: "GitLab",
    apiUrl: f.apiUrl,
    bare: f.bare,
    ref: "gitlab:acme/tools/tiny#2",
    pulls: () => [...f.mrs.values()].map((m) => ({ number: m.iid, label: `MR !${m.iid}`, title: m.title, sha: f.headOf(m.source_branch), state: m.state })),
    green: (sha) => f.switches.checksBySha.get(sha) === "succeeded",
    makeGreen: (sha) => void f.switches.checksBySha.set(sha, "succeeded"),
    makeRed: (sha) =>
      void f.switches.checksBySha.set(sha, {
        pipelines: [{ status: "failed", source: "push" }],
        statuses: [{ name: "build", status: "failed", reason: "script_failure", log: "$ docs-lint\nCONTRIBUTING.md does not mention `sh check.sh`\n" }],
      }),
    stop: () => {
      f.stop();
      // The fake forge's folder (its bare repository) is the demo's too: gone with it, unless kept.
      if (!kept) rmSync(forgeDir, { recursive: true, force: true });
    },
    dir: forgeDir,
  };
}
if (gh) {
  env.DEMO_FORGE_TOKEN = "demo-token";
  env.LOOP_ALLOW_AUTO_MERGE = "1";
}

/** The demo's fake Linear or Jira: where its issue is, what loop did to it, and what loop said on it. */
interface DemoTracker {
  name: string;
  ref: string;
  state(): string;
  said(): string[];
  stop(): void;
}
let tracker: DemoTracker | null = null;
if (trackerKind === "linear") {
  const f = new FakeLinear({ authorization: "lin_api_demo" }).start();
  f.addIssue({ number: 2, title: "Add a license", description: "MIT, please. <!-- stripped by loop -->" });
  f.addComment({ issue: 2, body: "Keep it short.", user: [...f.users.keys()][0]! });
  env.LINEAR_API_KEY = "lin_api_demo";
  forgeSection += `
  "tracker": ${JSON.stringify({ provider: "linear", apiUrl: f.url, team: "ENG", authorizedUsers: ["ada@acme.dev"], pollInterval: "1s", moveTo: { started: "In Progress", completed: "Done" } })},`;
  tracker = {
    name: "Linear",
    ref: "linear:ENG-2",
    state: () => f.issue(2).state,
    said: () => f.comments.filter((c) => c.issue === 2 && c.user === f.viewer).map((c) => c.body),
    stop: () => f.stop(),
  };
} else if (trackerKind === "jira") {
  const f = new FakeJira().start();
  f.addIssue({ number: 2, summary: "Add a license" });
  f.addComment({ issue: 2, body: "Keep it short." });
  env.JIRA_API_TOKEN = f.token;
  forgeSection += `
  "tracker": ${JSON.stringify({ provider: "jira", apiUrl: f.url, email: f.email, project: "PROJ", authorizedUsers: [[...f.users.keys()][0]!], pollInterval: "1s", moveTo: { started: "In Progress", completed: "Done" } })},`;
  tracker = {
    name: "Jira",
    ref: "jira:PROJ-2",
    state: () => f.issue(2).status,
    said: () => f.comments.filter((c) => c.issue === 2 && c.author === f.me).map((c) => adfToText(c.body).text),
    stop: () => f.stop(),
  };
}

/** A loop command, run asynchronously: the fake GitHub answers from this process meanwhile. */
async function loopCmd(argv: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([...loop, ...argv], { cwd: root, env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, status] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { status, stdout, stderr };
}

/**
 * CI of the fake: a new head's checks are pending for one tick, then green; except the first head
 * of the contributing item's PR, whose CI fails once (loop reacts: a rework fixes it, issue 22).
 */
const seenPending = new Set<string>();
const decided = new Set<string>();
const failedOnce = new Set<number>();
function advanceChecks(): void {
  if (!gh) return;
  for (const pr of gh.pulls()) {
    const sha = pr.sha;
    if (!sha || (pr.state !== "opened" && pr.state !== "open") || gh.green(sha) || decided.has(sha)) continue;
    if (!seenPending.has(sha)) {
      seenPending.add(sha);
      continue;
    }
    decided.add(sha);
    if (pr.title.includes("add-contributing") && !failedOnce.has(pr.number)) {
      failedOnce.add(pr.number);
      gh.makeRed(sha);
      process.stderr.write(`   (fake CI: checks on ${sha.slice(0, 12)} of ${pr.label} FAILED: loop reworks it)\n`);
    } else {
      gh.makeGreen(sha);
      process.stderr.write(`   (fake CI: checks on ${sha.slice(0, 12)} of ${pr.label} went green)\n`);
    }
  }
}

// The backlog is drafted, not hand-written: a one-paragraph brief goes to `loop plan` with the
// built-in deterministic demo planner (offline), and one more item is added by hand with `loop add`.
writeFileSync(
  join(root, "loop.json"),
  `{
  // The demo loop. \`loop plan\` and \`loop add\` append to "items" and leave the rest of this file as it is.
  "name": "demo",
  "defaults": { "runner": "demo", "verify": "sh check.sh", "maxAttempts": 2, "timeouts": { "launch": "1m", "stall": "5m", "verify": "1m" }, "landing": "merge" },${forgeSection}
  // As loop init writes it: nothing launches until a person has read the review and run \`loop ctl start\`.
  "control": { "review": true },
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
const plan = await loopCmd(["plan", brief, "--runner", "demo", "--yes", "--text"]);
process.stderr.write(plan.stdout + plan.stderr);
if (plan.status !== 0) {
  process.stderr.write(`loop plan failed with exit ${plan.status}\n`);
  process.exit(1);
}
say(
  `loop add (one more item, by hand; the demo agent forgets the file on its first attempt${tracker ? `; its ${tracker.name} issue ${tracker.ref} gives the handoff context` : gh ? "; its issue #2 gives the handoff context" : ""}):`,
);
const add = await loopCmd([
  "add",
  "Add a LICENSE file.\n@demo attempt 1 write NOTES.md I will add the license later\n@demo attempt 2 write LICENSE MIT License",
  "--id",
  "add-license",
  "--ref",
  tracker?.ref ?? gh?.ref ?? "github:acme/tiny#2",
  "--verify",
  "CHECKS=LICENSE sh check.sh",
  "--text",
]);
process.stderr.write(add.stdout + add.stderr);
if (add.status !== 0) process.exit(1);
if (gh) {
  say("loop add (one more item, by hand: its pull request's CI fails once, and a rework fixes it):");
  const ci = await loopCmd([
    "add",
    "Add CONTRIBUTING.md.\n@demo attempt 1 write CONTRIBUTING.md Send patches.\n@demo attempt 2 write CONTRIBUTING.md Send patches; run sh check.sh first.",
    "--id",
    "add-contributing",
    "--verify",
    "CHECKS=CONTRIBUTING.md sh check.sh",
    "--text",
  ]);
  process.stderr.write(ci.stdout + ci.stderr);
  if (ci.status !== 0) process.exit(1);
}
sh(["git", "commit", "-q", "-am", "the drafted backlog"]);
if (gh) {
  sh(["git", "remote", "add", "origin", gh.bare]);
  sh(["git", "push", "-q", "origin", "main"]);
  say(`fake ${gh.name} at ${gh.apiUrl} (remote ${gh.bare}); landing "merge" with LOOP_ALLOW_AUTO_MERGE=1`);
}

/** `loop serve` over the demo loop, as its own process; its first line of stdout says where. */
let server = null as Bun.Subprocess | null;
async function startServe(): Promise<void> {
  const proc = Bun.spawn([...loop, "serve", "--root", root, "--listen", listen, "--json"], {
    cwd: root,
    env: { ...process.env, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  });
  server = proc;
  const reader = proc.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const first = out.split("\n")[0]!;
  if (!first.startsWith("{")) {
    process.stderr.write(`loop serve did not start (exit ${await proc.exited})\n`);
    process.exit(1);
  }
  page = JSON.parse(first).loops[0].url as string;
  say(`the loop's page, live: ${page}`);
  process.stdout.write(`${page}\n`);
}
let page: string | null = null;

say(
  "loop init is not needed when loop.json exists; `loop run` creates the store. With control.review on, the first step launches nothing: it prints the review and exits 1:",
);
const first = await loopCmd(["run", "--text"]);
process.stderr.write(`${first.stdout}${first.stderr}`);
if (first.status !== 1 || !first.stdout.startsWith("review")) {
  process.stderr.write(`loop run did not wait for review (exit ${first.status})\n`);
  process.exit(1);
}
say("loop ctl start --yes (the demo starts the loop itself; at a terminal `loop ctl start` shows the review and asks):");
const started = await loopCmd(["ctl", "start", "--yes", "--text"]);
process.stderr.write(`${started.stdout}${started.stderr}`);
if (started.status !== 0) {
  process.stderr.write(`loop ctl start failed with exit ${started.status}\n`);
  process.exit(1);
}
say("stepping as cron would:");
for (let tick = 1; tick <= 40; tick++) {
  advanceChecks();
  const r = await loopCmd(["run", "--text"]);
  process.stderr.write(`-- tick ${tick} (exit ${r.status})\n${r.stdout}`);
  if (r.stderr.trim()) process.stderr.write(r.stderr);
  if (r.status !== 0 && r.status !== 75) {
    process.stderr.write(`loop run failed with exit ${r.status}\n`);
    process.exit(1);
  }
  if (serve && server === null) await startServe();
  if (r.stdout.startsWith("drained")) break;
  // Slower with a page to watch: one step a second and a half.
  await Bun.sleep(serve ? 1500 : 300);
}

say("loop status");
const status = await loopCmd(["status", "--text"]);
process.stdout.write(status.stdout);
say("loop replay");
const replay = await loopCmd(["replay", "--text"]);
process.stdout.write(replay.stdout);
if (gh) {
  say(`${gh.name === "GitLab" ? "merge requests" : "pull requests"} on the fake ${gh.name}:`);
  for (const pr of gh.pulls()) process.stdout.write(`${pr.label} ${pr.title} [${pr.state}]\n`);
  say("main on the remote:");
  process.stdout.write(sh(["git", "log", "--oneline", "--graph", "main"], { cwd: gh.bare, quiet: true }).stdout);
} else {
  say("landed on loop/demo/landed:");
  process.stdout.write(sh(["git", "log", "--oneline", "--graph", "loop/demo/landed"], { quiet: true }).stdout);
}
if (tracker) {
  say(`${tracker.ref} on the fake ${tracker.name}: ${tracker.state()}; what loop said on it:`);
  for (const c of tracker.said()) process.stdout.write(`${c}\n`);
}
say("loop export --text (the backlog in the text format `loop add --from-file` reads):");
process.stdout.write((await loopCmd(["export", "--text"])).stdout);
if (server) {
  // Last, where it is seen: everything above scrolled it away.
  say(`the page stays up at ${page}; Ctrl-C ends the demo`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  server.kill("SIGTERM");
  await server.exited;
}
gh?.stop();
tracker?.stop();
if (!kept) {
  rmSync(root, { recursive: true, force: true });
  process.stderr.write(`\ndeleted the demo repository ${root}${gh ? ` and the fake ${gh.name}'s folder ${gh.dir}` : ""} (--keep keeps them)\n`);
} else process.stderr.write(`\nkept ${root}${gh ? ` and the fake ${gh.name}'s folder ${gh.dir}` : ""}\n`);
process.exitCode = status.status === 0 && replay.status === 0 ? 0 : 1;
