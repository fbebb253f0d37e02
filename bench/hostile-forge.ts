#!/usr/bin/env bun
// bench/hostile-forge.ts: one `loop run` step against a forge that answers every request with the
// worst of docs/forge.md#bounds: GitHub answering every GET with 30 MiB pages (of `[{},{},…]`, or
// of long strings) and a Link to a next page for ever; GitLab with a storm of notes past 10,000
// (no page counts), `X-Total-Pages: Infinity` and a Link to another host. Each step is the real CLI
// (`bun cmd/loop.ts run --json`) on a project whose item's issue is on that forge, with
// authorizeWriters (permission reads). Prints a markdown table: the requests the forge saw, the
// step's peak RSS and its seconds; exits 1 when a row is over the bound docs/forge.md states.
//   bun bench/hostile-forge.ts
import { demoDefinition, git, Project } from "../tests/helpers/project.ts";
import { BUN, LOOP } from "../tests/helpers/cli.ts";
import { testEnv } from "../tests/helpers/env.ts";
import { startFakeGitHub } from "../tests/helpers/fake-github.ts";
import { startFakeGitLab } from "../tests/helpers/fake-gitlab.ts";

/** The bound docs/forge.md#bounds states for one step against such a forge. */
const BOUND = { requests: 60, rssMiB: 1024, seconds: 60 };

interface Row {
  name: string;
  requests: number;
  rssMiB: number;
  seconds: number;
  code: number | null;
}

async function step(p: Project, requests: () => number): Promise<Omit<Row, "name">> {
  const before = requests();
  const started = performance.now();
  // GNU time's %M: the step's peak resident set, in KiB (on stderr's last line).
  const proc = Bun.spawn(["/usr/bin/time", "-f", "maxrss=%M", BUN, LOOP, "run", "--json"], {
    cwd: p.root,
    env: testEnv({ LOOP_ACTOR: "cron@bench", ...p.env }),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  const seconds = (performance.now() - started) / 1000;
  const rssMiB = Number(/maxrss=(\d+)/.exec(stderr)?.[1] ?? "0") / 1024;
  return { requests: requests() - before, rssMiB, seconds, code: proc.exitCode };
}

function project(forge: { provider: "github" | "gitlab"; repo: string; apiUrl: string; bare: string }, ref: string): Project {
  const p = new Project(demoDefinition([{ id: "x", prompt: "p" }]), { env: { FAKE_FORGE_TOKEN: "bench-token" } });
  p.writeDefinition(
    demoDefinition([{ ref, prompt: "x\n@demo write a.txt a\n@demo commit a" }], {
      defaults: { landing: "merge", timeouts: { launch: "2m", stall: "10m", verify: "2m", landing: "30m" } },
      forge: {
        provider: forge.provider,
        repo: forge.repo,
        apiUrl: forge.apiUrl,
        tokenEnv: "FAKE_FORGE_TOKEN",
        authorizedUsers: [],
        authorizeWriters: true,
        pollInterval: "1s",
      },
    }),
  );
  git(p.root, "add", "-A");
  git(p.root, "commit", "-qm", "forge loop");
  git(p.root, "remote", "add", "origin", forge.bare);
  git(p.root, "push", "-q", "origin", "main");
  return p;
}

const rows: Row[] = [];
for (const shape of ["empties", "strings"] as const) {
  const gh = startFakeGitHub({ validate: false });
  gh.addIssue({ number: 1, title: "t", body: "b" });
  const p = project({ provider: "github", repo: `${gh.owner}/${gh.repo}`, apiUrl: gh.apiUrl, bare: gh.bare }, `github:${gh.owner}/${gh.repo}#1`);
  gh.switches.hugePages = { bytes: 30 * 1024 * 1024, shape };
  try {
    rows.push({
      name: `GitHub, every GET a 30 MiB page of ${shape === "empties" ? "`[{},{},…]`" : "long strings"}, next for ever`,
      ...(await step(p, () => gh.requests.length)),
    });
  } finally {
    gh.stop();
    p.dispose();
  }
}
{
  const gl = startFakeGitLab({ validate: false });
  gl.addIssue({ iid: 1 });
  for (let i = 0; i < 12_000; i++) gl.addNote({ issue: 1, login: `stranger${i}`, body: `storm ${i}` });
  gl.switches.paging = { linkOrigin: "https://gitlab.external.invalid", linkHeader: true, nextPageHeader: true, totalPages: "Infinity", over10k: false };
  const p = project({ provider: "gitlab", repo: gl.project, apiUrl: gl.apiUrl, bare: gl.bare }, `gitlab:${gl.project}#1`);
  try {
    // Two steps: the first baselines and launches, the second polls the storm.
    const first = await step(p, () => gl.requests.length);
    rows.push({ name: "GitLab, 12,000 notes by 12,000 people, X-Total-Pages Infinity, Link to another host: the launch step", ...first });
    await Bun.sleep(1_100);
    for (let i = 0; i < 3_000; i++) gl.addNote({ issue: 1, login: `late${i}`, body: `more ${i}` });
    rows.push({ name: "GitLab, the same and 3,000 more notes: the next step", ...(await step(p, () => gl.requests.length)) });
  } finally {
    gl.stop();
    p.dispose();
  }
}

console.log(`| step against | requests | peak RSS (MiB) | seconds | exit |\n|---|---|---|---|---|`);
for (const r of rows) console.log(`| ${r.name} | ${r.requests} | ${r.rssMiB.toFixed(0)} | ${r.seconds.toFixed(1)} | ${r.code} |`);
console.log(`\nbound: ${BOUND.requests} requests, ${BOUND.rssMiB} MiB, ${BOUND.seconds} s a step`);
const over = rows.filter((r) => r.requests > BOUND.requests || r.rssMiB > BOUND.rssMiB || r.seconds > BOUND.seconds);
if (over.length) {
  console.error(`over the bound: ${over.map((r) => r.name).join("; ")}`);
  process.exit(1);
}
