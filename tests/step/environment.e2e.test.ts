// Unattended operation through the CLI (docs/cli/loop-run.md#environment-faults, #exit-codes,
// docs/operations.md#hearing-about-trouble): environment faults spend no attempt and pause the loop;
// the presets against the real agent CLIs' failure modes (played by scripts); notify; exit codes and
// --quiet; a lease takeover reported. Steps run as cron runs them: `env -i HOME=$HOME
// PATH=/usr/bin:/bin` plus only what a test adds. No assertion measures time.
import { TEST_DEFAULTS } from "../helpers/env.ts";
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunResult } from "../../lib/step/step.ts";
import { resumePrompt } from "../../lib/definition/runners.ts";
import { BUN, demoDefinition, git, LOOP, pollUntil, Project, scenario } from "../helpers/project.ts";

const T = 120_000;
const CRON_PATH = "/usr/bin:/bin";

interface CronRun {
  code: number;
  stdout: string;
  stderr: string;
  doc: RunResult;
}

/** `loop <args>` with cron's environment: HOME and PATH only (plus the tests' defaults and `extra`), nothing inherited. */
async function cron(p: Project, extra: Record<string, string> = {}, args = ["run", "--json"]): Promise<CronRun> {
  // The tests' own defaults (no chained steps, worktrees under a test folder) are no inheritance.
  const env = { HOME: process.env.HOME ?? "/root", PATH: CRON_PATH, ...TEST_DEFAULTS, LOOP_ACTOR: "cron@test", ...extra };
  const proc = Bun.spawn([BUN, LOOP, ...args, "--root", p.root], { cwd: p.root, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  let doc: RunResult = null as never;
  try {
    doc = JSON.parse(stdout.trim().split("\n").at(-1) ?? "");
    p.runs.push(doc);
  } catch {
    // --quiet, or text: the caller looks at stdout itself.
  }
  return { code, stdout, stderr, doc };
}

/** Cron steps until the loop drains (bounded polls); each step's exit code must be in `codes`. */
async function cronToDrain(p: Project, extra: Record<string, string> = {}, codes = [0]): Promise<CronRun> {
  for (let i = 0; i < 150; i++) {
    const r = await cron(p, extra);
    if (!codes.includes(r.code)) throw new Error(`loop run exited ${r.code}:\n${r.stderr}\n${r.stdout}\n${p.history()}`);
    if (r.doc.action === "drained") return r;
    await Bun.sleep(150);
  }
  throw new Error(`the loop did not drain\n${p.history()}`);
}

/** Steps until one launches (a verify runs detached in between: observed by later steps). */
async function cronUntilLaunched(p: Project, extra: Record<string, string> = {}): Promise<CronRun> {
  for (let i = 0; i < 100; i++) {
    const r = await cron(p, extra);
    if (r.code !== 0) throw new Error(`loop run exited ${r.code}:\n${r.stderr}\n${r.stdout}\n${p.history()}`);
    if (r.doc.action === "launched") return r;
    await Bun.sleep(100);
  }
  throw new Error(`no launch\n${p.history()}`);
}

/** An executable script in the project's aux/bin. */
function script(p: Project, name: string, body: string): string {
  const dir = join(p.aux, "bin");
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** A scenario without any session (nothing could launch): status and replay still agree with the log. */
async function bare(def: Record<string, unknown>, body: (p: Project) => Promise<void>): Promise<void> {
  const p = new Project(def);
  try {
    await body(p);
    for (const verb of ["status", "replay"]) expect((await p.loop([verb, "--json", "--root", p.root])).code).toBe(0);
  } finally {
    p.dispose();
  }
}

const threeItems = [
  { id: "a", prompt: "A.\n@demo write a.txt a", verify: "test -s a.txt" },
  { id: "b", prompt: "B.\n@demo write b.txt b", verify: "test -s b.txt" },
  { id: "c", prompt: "C.\n@demo write c.txt c", dependsOn: ["a"], verify: "test -s c.txt" },
];

function expectUntouched(p: Project, ids: string[]): void {
  const st = p.projection();
  for (const id of ids) {
    const it = st.items[id]!;
    expect({ id, status: it.status, attempts: it.attempts.length, failures: it.failures }).toEqual({ id, status: "pending", attempts: 0, failures: 0 });
  }
  expect(p.eventsOf("launch_reserved")).toEqual([]);
}

describe("environment faults spend no attempt", () => {
  test.concurrent(
    "a runner program not on cron's PATH: one step leaves every item pending with 0 attempts, the loop paused with the reason, exit 1; fixed and resumed, the items run",
    () =>
      scenario(demoDefinition(threeItems, { defaults: { runner: "agent" }, runners: { agent: { command: ["loop-test-agent"] } } }), {}, async (p) => {
        const r = await cron(p);
        expect(r.code).toBe(1);
        expect(r.doc.action).toBe("paused");
        expect(r.doc.loop.state).toBe("paused");
        expect(r.doc.loop.reason).toContain('runner "agent": program "loop-test-agent" was not found on PATH (/usr/bin:/bin)');
        expect(r.doc.loop.reason).toContain("crontab");
        expect(r.doc.loop.reason).toContain("then `loop ctl resume`");
        // The fault is the step's result, said once: the reason and attention (naming the item), not an error besides.
        expect(r.doc.attention).toEqual([{ kind: "environment", item: "a", reason: r.doc.loop.reason! }]);
        expect(r.doc.item).toBe("a");
        expect(r.doc.errors).toEqual([]);
        // Said at import already, as a warning (this PATH may not be the next step's), on stderr once.
        expect(r.doc.warnings).toEqual([
          expect.stringContaining("runner \"agent\" (used by a, b, c): a command runner's model requests go through its session's gateway"),
          expect.stringContaining('runner "agent" (used by a, b, c): program "loop-test-agent" is not found on this PATH (/usr/bin:/bin)'),
        ]);
        expect(r.stderr).toBe(r.doc.warnings.map((w: string) => `warn: ${w}\n`).join(""));
        expect(r.doc.transitions.map((t) => t.type)).toEqual(["definition_imported", "loop_started", "environment_fault"]);
        expectUntouched(p, ["a", "b", "c"]);

        // Cron goes on ticking: nothing is spent, and every tick says the loop needs a person.
        const head = p.head();
        const again = await cron(p);
        expect({ code: again.code, action: again.doc.action, item: again.doc.item, head: p.head() }).toEqual({ code: 1, action: "paused", item: "a", head });
        expect({ attention: again.doc.attention, changed: again.doc.attentionChanged }).toEqual({ attention: r.doc.attention, changed: false });

        script(p, "loop-test-agent", `exec '${BUN}' '${LOOP}' __demo-agent`);
        expect((await p.ctl(["resume"])).code).toBe(0);
        const fixed = { PATH: `${join(p.aux, "bin")}:${CRON_PATH}` };
        const launched = await cron(p, fixed);
        expect({ code: launched.code, action: launched.doc.action, item: launched.doc.item }).toEqual({ code: 0, action: "launched", item: "a" });
        const last = await cronToDrain(p, fixed);
        expect(last.doc.reason).toBe("Succeeded");
        const st = p.projection();
        expect(st.order.map((id) => [id, st.items[id]!.status, st.items[id]!.attempts.length])).toEqual([
          ["a", "passed", 1],
          ["b", "passed", 1],
          ["c", "passed", 1],
        ]);
      }),
    T,
  );

  test.concurrent(
    "workspace.base main in a master repository: paused before anything is reserved; fixed in loop.json and resumed, the items run",
    () =>
      scenario(demoDefinition(threeItems), {}, async (p) => {
        git(p.root, "branch", "-m", "main", "master");
        const r = await cron(p);
        expect(r.code).toBe(1);
        expect(r.doc.loop.state).toBe("paused");
        expect(r.doc.loop.reason).toContain('the branch items start from, "main", is not a branch or commit of the repository');
        expect(r.doc.loop.reason).toContain('"workspace.base"');
        expect(r.doc.warnings).toEqual([expect.stringContaining('"workspace.base" "main" is not a branch or commit of')]);
        expectUntouched(p, ["a", "b", "c"]);

        p.writeDefinition(demoDefinition(threeItems, { workspace: { base: "master" } }));
        expect((await p.ctl(["resume"])).code).toBe(0);
        expect((await cronToDrain(p)).doc.reason).toBe("Succeeded");
        expect(git(p.root, "rev-list", "--count", "master..loop/t/item/a")).toBe("1");
      }),
    T,
  );

  test.concurrent(
    "a fault met after the reservation gives the attempt back: not counted, the loop paused",
    () =>
      scenario(
        demoDefinition([threeItems[0]!], { defaults: { runner: "agent", maxAttempts: 1 }, runners: { agent: { command: ["./bin/agent"] } } }),
        {},
        async (p) => {
          // A program relative to the worktree cannot be checked before the worktree exists.
          const r = await cron(p);
          expect(r.code).toBe(1);
          expect(r.doc.transitions.map((t) => t.type)).toEqual([
            "definition_imported",
            "loop_started",
            "launch_reserved",
            "workspace_prepared",
            "environment_fault",
          ]);
          expect(r.doc.loop.reason).toContain('program "./bin/agent" not found');
          const a = p.projection().items.a!;
          expect({ status: a.status, failures: a.failures, outcome: a.attempts[0]!.outcome }).toEqual({
            status: "pending",
            failures: 0,
            outcome: "requeued: environment fault (program_not_found)",
          });

          p.writeDefinition(demoDefinition([threeItems[0]!], { defaults: { runner: "demo", maxAttempts: 1 } }));
          expect((await p.ctl(["resume"])).code).toBe(0);
          expect((await cronToDrain(p)).doc.reason).toBe("Succeeded");
          const done = p.projection().items.a!;
          expect({ status: done.status, attempts: done.attempts.length, failures: done.failures }).toEqual({ status: "passed", attempts: 2, failures: 0 });
        },
      ),
    T,
  );

  test.concurrent(
    "git without a committer identity is a fault for the agent presets",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "x", verify: "test -s codex.txt" }], { defaults: { runner: "codex" } }), {}, async (p) => {
        script(p, "codex", `printf '{"type":"thread.started","thread_id":"t-1"}\\n'; echo done > codex.txt`);
        git(p.root, "config", "--unset", "user.name");
        git(p.root, "config", "--unset", "user.email");
        git(p.root, "config", "user.useConfigOnly", "true");
        const env = { HOME: join(p.aux, "home"), GIT_CONFIG_NOSYSTEM: "1", PATH: `${join(p.aux, "bin")}:${CRON_PATH}` };
        mkdirSync(env.HOME);
        const r = await cron(p, env);
        expect(r.code).toBe(1);
        expect(r.doc.loop.reason).toContain("git has no committer identity");
        expectUntouched(p, ["a"]);
        git(p.root, "config", "user.name", "ops");
        git(p.root, "config", "user.email", "ops@example.invalid");
        expect((await p.ctl(["resume"])).code).toBe(0);
        expect((await cronToDrain(p, env)).doc.reason).toBe("Succeeded");
      }),
    T,
  );
});

describe("what a new operator meets first (docs/runners.md#environment-faults)", () => {
  const two = threeItems.slice(0, 2);
  const placeholder = two.map(({ verify: _, ...it }) => it);

  test.concurrent(
    "verify still the placeholder `exit 1` loop init writes: said at import, nothing launched, the loop paused saying to set `verify`; the ticks after it print nothing under --quiet (exit 1 still), the same item every tick; set and resumed, the items run",
    () =>
      scenario(demoDefinition(placeholder, { defaults: { verify: "exit 1" } }), {}, async (p) => {
        const quiet = () => cron(p, {}, ["run", "--quiet", "--json"]);
        const r = await quiet();
        expect(r.code).toBe(1);
        expect({ action: r.doc.action, item: r.doc.item, changed: r.doc.attentionChanged, errors: r.doc.errors }).toEqual({
          action: "paused",
          item: "a",
          changed: true,
          errors: [],
        });
        expect(r.doc.loop.reason).toContain('its verify command is still "exit 1", the placeholder `loop init` writes');
        expect(r.doc.loop.reason).toContain('To fix: set "verify" in loop.json');
        expect(r.doc.attention).toEqual([{ kind: "environment", item: "a", reason: r.doc.loop.reason! }]);
        expect(r.doc.warnings).toEqual([expect.stringContaining('items a, b still have the verify placeholder "exit 1" that `loop init` writes')]);
        expect(p.eventsOf("environment_fault").map((e) => [e.item, e.payload.kind, e.payload.attempt])).toEqual([["a", "verify_placeholder", null]]);
        expectUntouched(p, ["a", "b"]);
        // Cron ticks on: nothing new, nothing printed, nothing recorded; the exit code still says it.
        const head = p.head();
        for (let i = 0; i < 2; i++) {
          const q = await quiet();
          expect({ code: q.code, stdout: q.stdout, stderr: q.stderr }).toEqual({ code: 1, stdout: "", stderr: "" });
        }
        const full = await cron(p);
        expect({ code: full.code, item: full.doc.item, attention: full.doc.attention, changed: full.doc.attentionChanged, head: p.head() }).toEqual({
          code: 1,
          item: "a",
          attention: r.doc.attention,
          changed: false,
          head,
        });

        p.writeDefinition(demoDefinition(two));
        expect((await p.ctl(["resume"])).code).toBe(0);
        expect((await cronToDrain(p)).doc.reason).toBe("Succeeded");
        const st = p.projection();
        expect(["a", "b"].map((id) => [st.items[id]!.status, st.items[id]!.attempts.length])).toEqual([
          ["passed", 1],
          ["passed", 1],
        ]);
      }),
    T,
  );

  test.concurrent(
    "a repository with no commit yet: loop init warns; loop run pauses saying the repository has no commit (no_commit, not base_missing with advice to name the same branch); after the first commit and a resume the items run",
    () =>
      scenario({}, {}, async (p) => {
        rmSync(join(p.root, ".git"), { recursive: true, force: true });
        git(p.root, "init", "-q", "-b", "main");
        const init = await p.loop(["init", "--force", "--json"]);
        expect(init.code).toBe(0);
        const says = 'the repository has no commit yet: "workspace.base" "main" is made by its first commit';
        // Besides it, the demo runner's warning when no agent CLI is on PATH; each printed once on stderr.
        const warnings: string[] = JSON.parse(init.stdout).warnings;
        expect(warnings.filter((w) => w.includes(says))).toHaveLength(1);
        expect(warnings.filter((w) => !w.includes(says) && !w.includes("no agent CLI"))).toEqual([]);
        expect(init.stderr).toBe(warnings.map((w) => `warn: ${w}\n`).join(""));
        p.writeDefinition(demoDefinition(two));
        const r = await cron(p);
        expect(r.code).toBe(1);
        expect(r.doc.loop.reason).toContain('the repository has no commit yet: the branch items start from, "main", is made by its first commit');
        expect(r.doc.loop.reason).toContain("make the first commit");
        expect(r.doc.loop.reason).not.toContain("git branch --show-current");
        expect(r.doc.warnings).toEqual([expect.stringContaining(`the repository ${p.root} has no commit yet`)]);
        expect(p.eventsOf("environment_fault").map((e) => e.payload.kind)).toEqual(["no_commit"]);
        expectUntouched(p, ["a", "b"]);

        git(p.root, "add", "-A");
        git(p.root, "-c", "user.name=ops", "-c", "user.email=ops@example.invalid", "commit", "-q", "-m", "initial commit");
        expect((await p.ctl(["resume"])).code).toBe(0);
        expect((await cronToDrain(p)).doc.reason).toBe("Succeeded");
      }),
    T,
  );

  test.concurrent(
    "every warning and error is printed once, in one place: with --text, a missing base branch is the result's reason and a warning on stderr, neither repeated; a drained loop says its outcome once",
    () =>
      scenario(demoDefinition(two, { workspace: { base: "nope" } }), {}, async (p) => {
        const r = await p.loop(["run", "--text"]);
        expect(r.code).toBe(1);
        const both = r.stdout + r.stderr;
        const count = (s: string) => both.split(s).length - 1;
        expect(count('the branch items start from, "nope", is not a branch or commit')).toBe(1);
        expect(count('"workspace.base" "nope" is not a branch or commit of')).toBe(1);
        expect(r.stderr).toStartWith('warn: loop.json: "workspace.base" "nope"');
        expect(r.stdout.split("\n")[0]).toStartWith('paused a: environment fault launching a: the branch items start from, "nope"');
        expect(r.stdout).not.toMatch(/^ +(error|warning):/m);
        expect(r.stdout.trim().split("\n").at(-1)).toBe("  needs a person (environment)");

        p.writeDefinition(demoDefinition(two));
        expect((await p.ctl(["resume"])).code).toBe(0);
        await cronToDrain(p);
        const drained = await p.loop(["run", "--text"]);
        expect({ code: drained.code, stdout: drained.stdout, stderr: drained.stderr }).toEqual({
          code: 0,
          stdout: "drained: Succeeded (loop drained)\n",
          stderr: "",
        });
      }),
    T,
  );
});

describe("the presets against their CLIs' failure modes (played by scripts)", () => {
  test.concurrent.if(process.getuid?.() === 0)(
    "claude as root: a fault naming both ways out, before any launch; IS_SANDBOX=1 lets it run",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "x", verify: "test -s claude.txt" }], { defaults: { runner: "claude" } }), {}, async (p) => {
        script(p, "claude", `printf '{"type":"system","subtype":"init","session_id":"%s"}\\n' "$LOOP_SESSION_ID"; echo done > claude.txt`);
        const path = { PATH: `${join(p.aux, "bin")}:${CRON_PATH}` };
        const r = await cron(p, path);
        expect(r.code).toBe(1);
        expect(r.doc.loop.reason).toContain("Claude Code refuses --dangerously-skip-permissions as root");
        expect(r.doc.loop.reason).toContain("IS_SANDBOX=1");
        expect(r.doc.loop.reason).toContain("CLAUDE_CODE_BUBBLEWRAP");
        expectUntouched(p, ["a"]);
        expect((await p.ctl(["resume"])).code).toBe(0);
        expect((await cronToDrain(p, { ...path, IS_SANDBOX: "1" })).doc.reason).toBe("Succeeded");
      }),
    T,
  );

  test.concurrent(
    "claude: a reply after a failed start goes to a fresh session (its handoff); after a real conversation it resumes it",
    () =>
      scenario(
        demoDefinition([{ id: "a", prompt: "Build it.", verify: "test -s done.txt", maxAttempts: 3 }], { defaults: { runner: "claude" } }),
        {},
        async (p) => {
          const argvFile = (n: number) => join(p.aux, `argv-${n}`);
          script(
            p,
            "claude",
            [
              // Written aside and renamed: the test polls for the file, and must never read it half-written.
              `printf '%s\\n' "$@" > '${p.aux}/argv.tmp' && mv '${p.aux}/argv.tmp' '${p.aux}/argv-'"$LOOP_ATTEMPT"`,
              `case "$LOOP_ATTEMPT" in`,
              `  1) echo "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons" >&2; exit 1 ;;`,
              // Saved as Claude Code saves it: the proof a reply can resume it (docs/runners.md#claude).
              `  2) printf '{"type":"system","subtype":"init","session_id":"%s"}\\n' "$LOOP_SESSION_ID"; mkdir -p "$CLAUDE_CONFIG_DIR/projects/p" && : > "$CLAUDE_CONFIG_DIR/projects/p/$LOOP_SESSION_ID.jsonl"; echo "Which version?" > "$LOOP_ASK_FILE" ;;`,
              `  *) printf '{"type":"system","subtype":"init","session_id":"%s"}\\n' "$LOOP_SESSION_ID"; echo done > done.txt ;;`,
              `esac`,
            ].join("\n"),
          );
          const env = { PATH: `${join(p.aux, "bin")}:${CRON_PATH}`, IS_SANDBOX: "1", HOME: join(p.aux, "home") };
          expect((await cron(p, env)).doc.action).toBe("launched");
          await pollUntil(() => existsSync(join(p.sessionDir("a", 1), "exit.json")), "attempt 1 ended");
          expect((await p.ctl(["reply", "--work-item", "a", "use v2"])).code).toBe(0);
          // Attempt 1 failed its verify; attempt 2 gets the reply. Its session never saved a
          // conversation, so there is nothing to resume: a fresh session, the reply in its handoff.
          await cronUntilLaunched(p, env);
          await pollUntil(() => existsSync(argvFile(2)), "attempt 2 started");
          const argv2 = readFileSync(argvFile(2), "utf8").split("\n");
          expect(argv2).toContain("--session-id");
          expect(argv2).not.toContain("--resume");
          expect(p.handoff("a", 2)).toContain("use v2");
          // Attempt 2 asks; the loop pauses (exit 1: a person is needed); a reply and a resume.
          await pollUntil(() => existsSync(join(p.sessionDir("a", 2), "exit.json")), "attempt 2 ended");
          const asked = await cron(p, env);
          expect({ code: asked.code, action: asked.doc.action, attention: asked.doc.attention.map((a) => a.kind) }).toEqual({
            code: 1,
            action: "paused",
            attention: ["question"],
          });
          expect((await p.ctl(["reply", "--work-item", "a", "v3"])).code).toBe(0);
          expect((await p.ctl(["resume"])).code).toBe(0);
          expect((await cron(p, env)).doc.action).toBe("launched");
          await pollUntil(() => existsSync(argvFile(3)), "attempt 3 started");
          const argv3 = readFileSync(argvFile(3), "utf8").split("\n");
          const session2 = p.eventsOf("launch_reserved", "a")[1]!.payload.sessionId;
          expect(argv3.slice(argv3.indexOf("--resume"), argv3.indexOf("--resume") + 2)).toEqual(["--resume", session2]);
          // The reply is in reply.md, never on the command line: argv only points at it.
          const replyFile = join(p.sessionDir("a", 3), "reply.md");
          expect(argv3.slice(-3)).toEqual(["--", resumePrompt(replyFile), ""]);
          expect(argv3).not.toContain("v3");
          expect(readFileSync(replyFile, "utf8")).toContain("```text\nv3\n```");
          expect((await cronToDrain(p, env)).doc.reason).toBe("Succeeded");
        },
      ),
    T,
  );

  test.concurrent(
    "aider without a model or key is a fault; with a key it runs, and its own files never reach the item branch",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "x", verify: "test -s work.txt" }], { defaults: { runner: "aider" } }), {}, async (p) => {
        script(
          p,
          "aider",
          "mkdir -p .aider.tags.cache.v4 && echo x > .aider.tags.cache.v4/cache.db; echo chat > .aider.input.history.md; echo work > work.txt",
        );
        const env = { HOME: join(p.aux, "home"), PATH: `${join(p.aux, "bin")}:${CRON_PATH}` };
        mkdirSync(env.HOME);
        const r = await cron(p, env);
        expect(r.code).toBe(1);
        expect(r.doc.loop.reason).toContain('runner "aider": no model and no provider key');
        expectUntouched(p, ["a"]);
        expect((await p.ctl(["resume"])).code).toBe(0);
        expect((await cronToDrain(p, { ...env, OPENAI_API_KEY: "sk-test" })).doc.reason).toBe("Succeeded");
        const files = git(p.root, "ls-tree", "-r", "--name-only", "loop/t/item/a").split("\n");
        expect(files).toContain("work.txt");
        expect(files.filter((f) => f.startsWith(".aider"))).toEqual([]);
        const exclude = readFileSync(join(p.root, ".git", "info", "exclude"), "utf8").split("\n");
        expect(exclude).toContain(".aider*");
        expect(exclude).toContain("/.loop/");
      }),
    T,
  );

  test.concurrent(
    "an agent that only prints that it is waiting stalls (codex without network, retrying forever)",
    () =>
      scenario(
        demoDefinition([{ id: "a", prompt: "x" }], {
          defaults: { runner: "waiting", maxAttempts: 1, timeouts: { launch: "2m", stall: "2s", verify: "2m" } },
          runners: {
            waiting: {
              command: ["sh", "-c", 'echo working; i=1; while :; do echo "stream disconnected - retrying turn ($i/5 in 0.2s)"; i=$((i+1)); sleep 0.2; done'],
            },
          },
        }),
        {},
        async (p) => {
          await p.runUntil((r) => r.transitions.some((t) => t.type === "session_ended"), {
            codes: [0, 1],
            pauseMs: 500,
            maxPolls: 120,
            what: "the session ended",
          });
          const end = p.eventsOf("session_ended", "a")[0]!;
          expect(end.payload.verdict).toBe("stalled");
          expect(end.payload.reason).toContain("no progress in the output for");
          // It was printing all along: only its lines said nothing new.
          expect(readFileSync(join(p.sessionDir("a", 1), "output.log"), "utf8").split("\n").length).toBeGreaterThan(3);
          await p.runToDrain({ codes: [0, 1] });
        },
      ),
    T,
  );
});

describe("operators hear about trouble", () => {
  const notifyTo = (p: Project) => ["sh", "-c", `cat >> '${join(p.aux, "notify.jsonl")}'`];
  const sent = (p: Project) =>
    existsSync(join(p.aux, "notify.jsonl"))
      ? readFileSync(join(p.aux, "notify.jsonl"), "utf8")
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];

  test.concurrent(
    "notify runs once per condition, with the event on stdin: an environment fault, then a Failed drain",
    async () => {
      const p = new Project({});
      try {
        const def = (base: string) =>
          demoDefinition([{ id: "bad", prompt: "x", verify: "false", maxAttempts: 1 }], { workspace: { base }, notify: { command: notifyTo(p) } });
        p.writeDefinition(def("nope"));
        const r = await cron(p);
        expect(r.code).toBe(1);
        expect(r.doc.notifications).toEqual([{ channel: null, kind: "environment", item: "bad", ok: true, reason: "exit 0" }]);
        const [doc] = sent(p);
        expect(doc).toMatchObject({
          schema: "loop/notify@1",
          kind: "environment",
          subject: "loop t: paused by an environment fault (bad)",
          item: "bad",
          loop: { name: "t", state: "paused" },
          root: p.root,
          stateRoot: p.stateRoot,
        });
        expect(doc.reason).toContain('"nope"');
        expect(doc.key).toMatch(/^environment:\d+$/);
        // Still paused next tick: exit 1 again, but no second notification.
        const again = await cron(p);
        expect({ code: again.code, notifications: again.doc.notifications, sent: sent(p).length }).toEqual({ code: 1, notifications: [], sent: 1 });

        p.writeDefinition(def("main"));
        expect((await p.ctl(["resume"])).code).toBe(0);
        const drained = await cronToDrain(p, {}, [0, 1]);
        expect({ code: drained.code, reason: drained.doc.reason, attention: drained.doc.attention.map((a) => a.kind) }).toEqual({
          code: 1,
          reason: "Failed",
          attention: ["failed"],
        });
        expect(sent(p).map((d) => [d.kind, d.subject])).toEqual([
          ["environment", "loop t: paused by an environment fault (bad)"],
          ["failed", "loop t: drained Failed"],
        ]);
        expect(sent(p)[1].reason).toBe("the loop drained Failed: bad failed (to start one item over instead: loop reset --work-item <id>)");
        // A drained Failed loop needs a person on every tick, and is announced once.
        const later = await cron(p);
        expect({ code: later.code, sent: sent(p).length }).toEqual({ code: 1, sent: 2 });
        expect(p.eventsOf("notified").map((e) => e.payload.kind)).toEqual(["environment", "failed"]);
      } finally {
        p.dispose();
      }
    },
    T,
  );

  test.concurrent.each([
    ["exits non-zero", ["sh", "-c", "echo 'smtp refused' >&2; exit 3"], undefined, /^exited 3: smtp refused$/],
    ["is not found", ["/nonexistent/loop-notify"], undefined, /^could not run "\/nonexistent\/loop-notify": /],
    ["outlives its timeout", ["sh", "-c", "sleep 30"], "1s", /^timed out after 1s/],
  ])(
    "a notify command that %s: reported on stderr and in the result, never blocks the loop, not run again",
    (_name, command, timeout, reason) =>
      bare(demoDefinition([{ id: "a", prompt: "x" }], { workspace: { base: "nope" }, notify: { command, ...(timeout ? { timeout } : {}) } }), async (p) => {
        const r = await cron(p);
        expect(r.code).toBe(1);
        expect(r.doc.loop.state).toBe("paused");
        expect(r.doc.notifications).toHaveLength(1);
        expect(r.doc.notifications[0]!.ok).toBe(false);
        expect(r.doc.notifications[0]!.reason).toMatch(reason);
        expect(r.stderr).toContain("notify (environment a) failed");
        expect(r.doc.errors).toEqual([]); // the fault is the result, and a failed notification is not a step error
        const again = await cron(p);
        expect(again.doc.notifications).toEqual([]);
        expect(p.eventsOf("notified").map((e) => e.payload.ok)).toEqual([false]);
      }),
    T,
  );

  test.concurrent(
    "exit codes: 0 while all is well (an operator's pause too), 1 while the loop needs a person; --quiet prints only then",
    () =>
      scenario(
        demoDefinition([
          { id: "ok", prompt: "@demo write ok.txt ok", verify: "test -s ok.txt" },
          { id: "asks", prompt: "@demo attempt 1 ask Which version?\n@demo write v.txt v2", verify: "test -s v.txt" },
          { id: "bad", prompt: "x", verify: "false", maxAttempts: 1 },
        ]),
        {},
        async (p) => {
          const quiet = (extra: Record<string, string> = {}) => cron(p, extra, ["run", "--quiet", "--json"]);
          const launched = await quiet();
          expect({ code: launched.code, stdout: launched.stdout, stderr: launched.stderr }).toEqual({ code: 0, stdout: "", stderr: "" });
          expect((await p.ctl(["pause"])).code).toBe(0);
          const paused = await cron(p);
          expect({ code: paused.code, action: paused.doc.action, attention: paused.doc.attention }).toEqual({ code: 0, action: "paused", attention: [] });
          expect((await p.ctl(["resume"])).code).toBe(0);
          // On to the question: paused on it, exit 1, and --quiet prints the document.
          let asked: CronRun | null = null;
          for (let i = 0; i < 100 && !asked; i++) {
            const r = await quiet();
            if (r.code === 1) asked = r;
            else expect(r.stdout).toBe("");
            await Bun.sleep(150);
          }
          const doc = JSON.parse(asked!.stdout);
          expect(doc.attention).toEqual([{ kind: "question", item: "asks", reason: "asks needs input: Which version?" }]);
          // The next tick finds the same question: under --quiet it prints nothing (exit 1 still); without, it says it.
          const same = await cron(p, {}, ["run", "--quiet", "--text"]);
          expect({ code: same.code, stdout: same.stdout }).toEqual({ code: 1, stdout: "" });
          const text = await cron(p, {}, ["run", "--text"]);
          expect(text.code).toBe(1);
          expect(text.stdout).toContain("needs a person (question)");
          expect((await p.ctl(["reply", "--work-item", "asks", "v2"])).code).toBe(0);
          expect((await p.ctl(["resume"])).code).toBe(0);
          const last = await cronToDrain(p, {}, [0, 1]);
          expect({ code: last.code, reason: last.doc.reason }).toEqual({ code: 1, reason: "Failed" });
          // --watch ends where the loop needs a person, with the same code; --quiet prints that step only.
          const watched = await cron(p, {}, ["run", "--watch", "--interval", "200ms", "--quiet", "--json"]);
          expect(watched.code).toBe(1);
          expect(
            watched.stdout
              .trim()
              .split("\n")
              .map((l) => JSON.parse(l).attention[0].kind),
          ).toEqual(["failed"]);
        },
      ),
    T,
  );

  test.concurrent(
    "a lease taken over from a dead step is in the step's transitions and on stderr",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "@demo write a.txt a", verify: "test -s a.txt" }]), {}, async (p) => {
        const killed = await p.loop(["run", "--json", "--root", p.root], { LOOP_FAILPOINT: "lease:after_acquire" });
        expect(killed.stderr).toContain("failpoint lease:after_acquire");
        const r = await p.run();
        expect(r.transitions[0]!.type).toBe("lease_taken_over");
        expect(r.transitions[0]!.summary).toMatch(/^took over the lease of pid \d+ on .+ \(its process is gone\)$/);
        expect(r.stderr).toMatch(/took over the step lease of pid \d+ on .+ \(its process is gone\)/);
        await p.runToDrain();
      }),
    T,
  );
});
