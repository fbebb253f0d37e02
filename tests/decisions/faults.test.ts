// The pure judgements behind environment faults and operators' attention: lib/decisions/faults.ts
// (launchFault, launchErrorFault, aiderCanChooseModel), lib/decisions/attention.ts (attention,
// outputShowsProgress), lib/definition/runners.ts provenConversation, and the reducer's
// environment_fault and notified events. Tables of plain data; no processes.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, utimesSync, appendFileSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventDraft } from "../../lib/log/events.ts";
import { fold } from "../../lib/log/reducer.ts";
import { FaultError, GitError, IllegalEventError, LeaseLostError, StartError } from "../../lib/shared/errors.ts";
import type { Projection } from "../../lib/log/projection.ts";
import { provenConversation } from "../../lib/definition/runners.ts";
import { attention, attentionInput, attentionOf, ATTENTION_STATUSES, pausedByQuestionOf, UNLANDED_OUTCOMES } from "../../lib/decisions/attention.ts";
import { outputShowsProgress } from "../../lib/supervisor/waiting.ts";
import {
  aiderCanChooseModel,
  drainedReason,
  type FaultKind,
  INTERRUPTED_LAUNCHES,
  interruptedLaunchesFault,
  type LaunchFacts,
  launchErrorFault,
  launchFault,
  programFault,
  startPointFault,
} from "../../lib/decisions/faults.ts";
import { lastProgressAt, PROGRESS_FILE } from "../../lib/supervisor/progress.ts";
import { stepExitCode } from "../../lib/step/step.ts";
import { closed, definition, drained, ended, itemDef, landed, launch, LogBuilder, loopStarted, settled, started, verified } from "../helpers/events.ts";

const OK: LaunchFacts = {
  runner: "demo",
  program: "/usr/bin/bun",
  programFact: { state: "found", path: "/usr/bin/bun" },
  PATH: "/usr/bin:/bin",
  startPoint: "main",
  startPointExists: true,
  uid: 1000,
  sandbox: {},
  tmux: null,
  aiderModel: null,
  gitIdentity: null,
};

describe("launchFault", () => {
  const cases: { name: string; facts: Partial<LaunchFacts>; want: FaultKind | null; mentions?: string[] }[] = [
    { name: "nothing wrong", facts: {}, want: null },
    { name: "the base branch is missing", facts: { startPointExists: false }, want: "base_missing", mentions: ['"main"', "workspace.base", "loop ctl resume"] },
    { name: "a retry reuses its branch: the start point is not asked", facts: { startPointExists: null }, want: null },
    {
      name: "a repository with no commit: the first commit is the fix, not another base",
      facts: { startPointExists: false, hasCommits: false },
      want: "no_commit",
      mentions: ["has no commit yet", '"main"', "first commit", "loop ctl resume"],
    },
    { name: "commits, but not the base: base_missing", facts: { startPointExists: false, hasCommits: true }, want: "base_missing" },
    {
      name: "verify still the placeholder loop init writes",
      facts: { verify: "exit 1" },
      want: "verify_placeholder",
      mentions: ['"exit 1"', "loop init", 'set "verify"', "loop ctl resume"],
    },
    { name: "the placeholder with spaces around it", facts: { verify: " exit 1 " }, want: "verify_placeholder" },
    { name: "a real verify command", facts: { verify: "npm test" }, want: null },
    { name: "verify false is no placeholder", facts: { verify: false }, want: null },
    {
      name: "a program not on PATH names the PATH and cron",
      facts: { runner: "claude", program: "claude", programFact: { state: "missing", path: null } },
      want: "program_not_found",
      mentions: ['"claude"', "PATH (/usr/bin:/bin)", "crontab", "loop ctl resume"],
    },
    {
      name: "an absolute program that is not there",
      facts: { program: "/opt/agent", programFact: { state: "missing", path: "/opt/agent" } },
      want: "program_not_found",
      mentions: ["(/opt/agent)"],
    },
    {
      name: "a program that is not executable",
      facts: { programFact: { state: "not_executable", path: "/x/agent" } },
      want: "program_not_executable",
      mentions: ["chmod +x"],
    },
    { name: "tmux sessions without tmux", facts: { tmux: { state: "missing", path: null } }, want: "program_not_found", mentions: ["tmux", '"sessions.tmux"'] },
    { name: "tmux sessions with tmux", facts: { tmux: { state: "found", path: "/usr/bin/tmux" } }, want: null },
    { name: "a relative program not checkable yet", facts: { program: "./agent", programFact: { state: "unchecked" } }, want: null },
    {
      name: "claude as root, no sandbox variable: both ways out named",
      facts: { runner: "claude", uid: 0 },
      want: "claude_as_root",
      mentions: ["ordinary user", "IS_SANDBOX=1", "CLAUDE_CODE_BUBBLEWRAP"],
    },
    { name: "claude as root with IS_SANDBOX=1", facts: { runner: "claude", uid: 0, sandbox: { IS_SANDBOX: "1" } }, want: null },
    {
      name: "claude as root with IS_SANDBOX=true is still refused (Claude Code wants 1)",
      facts: { runner: "claude", uid: 0, sandbox: { IS_SANDBOX: "true" } },
      want: "claude_as_root",
    },
    { name: "claude as root with CLAUDE_CODE_BUBBLEWRAP", facts: { runner: "claude", uid: 0, sandbox: { CLAUDE_CODE_BUBBLEWRAP: "1" } }, want: null },
    { name: "claude as an ordinary user", facts: { runner: "claude", uid: 1000 }, want: null },
    { name: "the sandbox asked for and usable", facts: { bwrap: { ok: true } }, want: null },
    {
      name: "the sandbox asked for, bwrap missing: install it or turn the sandbox off",
      facts: { bwrap: { ok: false, kind: "missing", message: "bwrap (bubblewrap) was not found on PATH (/usr/bin:/bin)" } },
      want: "sandbox_unavailable",
      mentions: ['"sandbox": "bwrap"', "not found on PATH (/usr/bin:/bin)", "apt-get install bubblewrap", '"sandbox" to "none"', "loop ctl resume"],
    },
    {
      name: "the sandbox asked for, bwrap refused: its words and the namespaces named",
      facts: { bwrap: { ok: false, kind: "refused", message: "/usr/bin/bwrap refused to make a sandbox: bwrap: No permissions to create new namespace" } },
      want: "sandbox_unavailable",
      mentions: ["No permissions to create new namespace", "unprivileged user namespaces", '"sandbox" to "none"'],
    },
    { name: "codex as root is fine", facts: { runner: "codex", uid: 0 }, want: null },
    {
      name: "aider without a model or key",
      facts: { runner: "aider", aiderModel: { model: null, env: {}, files: {} } },
      want: "aider_no_model",
      mentions: ['"model"', "OPENAI_API_KEY"],
    },
    {
      name: "gemini without GEMINI_API_KEY in loop's environment: its gateway has no key to send",
      facts: { runner: "gemini", geminiKey: false },
      want: "gemini_no_key",
      mentions: ["GEMINI_API_KEY", "loop run's environment", "loop ctl resume"],
    },
    { name: "gemini with its key", facts: { runner: "gemini", geminiKey: true }, want: null },
    { name: "aider with a model", facts: { runner: "aider", aiderModel: { model: "gpt-4o", env: {}, files: {} } }, want: null },
    {
      name: "git cannot commit for the agent",
      facts: { gitIdentity: { ok: false, detail: "fatal: empty ident name" } },
      want: "git_identity",
      mentions: ["empty ident", "user.email"],
    },
    { name: "git identity fine", facts: { gitIdentity: { ok: true } }, want: null },
    {
      name: "several faults: the base first (every item needs it)",
      facts: { startPointExists: false, programFact: { state: "missing", path: null }, runner: "claude", uid: 0 },
      want: "base_missing",
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const f = launchFault({ ...OK, ...c.facts });
      expect(f?.kind ?? null).toBe(c.want);
      for (const m of c.mentions ?? []) expect(`${f!.message} ${f!.fix}`).toContain(m);
    });
});

describe("aiderCanChooseModel", () => {
  const cases: { name: string; model?: string; env?: Record<string, string>; files?: Record<string, string | null>; want: boolean }[] = [
    { name: "nothing at all", want: false },
    { name: "a model in loop.json", model: "sonnet", want: true },
    { name: "OPENAI_API_KEY", env: { OPENAI_API_KEY: "sk-x" }, want: true },
    { name: "ANTHROPIC_API_KEY", env: { ANTHROPIC_API_KEY: "x" }, want: true },
    { name: "AIDER_MODEL", env: { AIDER_MODEL: "gpt-4o" }, want: true },
    { name: "an empty key is no key", env: { OPENAI_API_KEY: " " }, want: false },
    { name: "VERTEXAI_PROJECT alone is not enough", env: { VERTEXAI_PROJECT: "p" }, want: false },
    { name: "VERTEXAI_PROJECT with credentials", env: { VERTEXAI_PROJECT: "p", GOOGLE_APPLICATION_CREDENTIALS: "/c.json" }, want: true },
    { name: "a key in ~/.env", files: { "/h/.env": "FOO=1\nexport DEEPSEEK_API_KEY=abc\n" }, want: true },
    { name: "an unrelated .env", files: { "/r/.env": "DATABASE_URL=postgres://x\n" }, want: false },
    { name: "an absent file", files: { "/h/.env": null }, want: false },
    { name: "a model in .aider.conf.yml", files: { "/r/.aider.conf.yml": "# settings\nmodel: sonnet\n" }, want: true },
    { name: "an api key setting in .aider.conf.yml", files: { "/h/.aider.conf.yml": "openai-api-key: sk-x\n" }, want: true },
    { name: "a .aider.conf.yml without either", files: { "/h/.aider.conf.yml": "dark-mode: true\n" }, want: false },
  ];
  for (const c of cases)
    test(c.name, () => {
      expect(aiderCanChooseModel({ model: c.model ?? null, env: c.env ?? {}, files: c.files ?? {} })).toBe(c.want);
    });
});

describe("launchErrorFault: a failure after the reservation is judged by its type, never its words", () => {
  const errno = (code: string, message: string) => Object.assign(new Error(message), { code, syscall: "open" });
  const program = (state: "missing" | "not_executable") =>
    new FaultError(programFault({ runner: "x", program: "./agent", fact: state === "missing" ? { state, path: "/w/agent" } : { state, path: "/w/agent" } }));
  const cases: { name: string; err: unknown; want: FaultKind | null }[] = [
    { name: "a full disk", err: errno("ENOSPC", "ENOSPC: no space left on device, write"), want: "disk_full" },
    { name: "a read-only state root", err: errno("EROFS", "EROFS: read-only file system, mkdir '/s'"), want: "permission_denied" },
    { name: "no permission", err: errno("EACCES", "EACCES: permission denied"), want: "permission_denied" },
    { name: "a file where a folder should be", err: errno("ENOTDIR", "ENOTDIR: not a directory, mkdir '/s/x'"), want: "launch_failed" },
    { name: "the start point vanished", err: new FaultError(startPointFault({ startPoint: "main", repo: "/r" })), want: "base_missing" },
    { name: "a relative program missing in the worktree", err: program("missing"), want: "program_not_found" },
    { name: "not executable", err: program("not_executable"), want: "program_not_executable" },
    { name: "git worktree add failed", err: new GitError(["worktree", "add"], 128, "fatal: '/w' is a missing but locked worktree"), want: "git_failed" },
    { name: "tmux could not start", err: new StartError("tmux new-session failed: no server"), want: "launch_failed" },
    // Not the machine's: thrown on, whatever the message says.
    { name: "a bug in loop", err: new TypeError("cannot read properties of undefined"), want: null },
    { name: "a bug whose message reads like a fault", err: new Error('runner "x": program "./agent" not found'), want: null },
    { name: "an errno-like code without a system call", err: Object.assign(new Error("ENOSPC"), { code: "ENOSPC" }), want: null },
    { name: "a lost lease", err: new LeaseLostError("the lease was taken over"), want: null },
    { name: "the store's refusal", err: new IllegalEventError(3, "item_status", "nope"), want: null },
  ];
  for (const c of cases)
    test(c.name, () => {
      const f = launchErrorFault(c.err);
      expect(f?.kind ?? null).toBe(c.want);
      if (!f) return;
      expect(f.message).toContain((c.err as Error).message);
      expect(f.fix).toContain("loop ctl resume");
    });
});

describe("provenConversation: a reply resumes only a conversation the log proves", () => {
  const init = '{"type":"system","subtype":"init","session_id":"c-1"}\n';
  const cases: { name: string; runner: string; recorded: string | null; log: string; history?: boolean; want: string | null }[] = [
    { name: "claude that started", runner: "claude", recorded: "c-1", log: init, want: "c-1" },
    {
      name: "claude that died at start (as root): fresh session",
      runner: "claude",
      recorded: "c-1",
      log: "--dangerously-skip-permissions cannot be used with root/sudo privileges\n",
      want: null,
    },
    { name: "claude whose resume found nothing", runner: "claude", recorded: "c-1", log: "No conversation found with session ID: c-1\n", want: null },
    { name: "codex: the thread the log announces", runner: "codex", recorded: null, log: '{"type":"thread.started","thread_id":"t-9"}\n', want: "t-9" },
    { name: "codex: a resumed session's recorded id", runner: "codex", recorded: "t-9", log: "", want: "t-9" },
    { name: "codex that never started a thread", runner: "codex", recorded: null, log: "error\n", want: null },
    { name: "aider with its history", runner: "aider", recorded: "/s/aider.chat.history.md", log: "", history: true, want: "/s/aider.chat.history.md" },
    { name: "aider whose history was never written", runner: "aider", recorded: "/s/aider.chat.history.md", log: "", history: false, want: null },
    { name: "a command runner never resumes", runner: "mine", recorded: "x", log: init, want: null },
  ];
  for (const c of cases)
    test(c.name, () => {
      expect(provenConversation(c.runner, { recorded: c.recorded, logHead: c.log, historyExists: c.history ?? false })).toBe(c.want);
    });
});

describe("outputShowsProgress", () => {
  const retry = (n: number) => `{"type":"error","message":"stream disconnected - retrying turn (${n}/5 in 1.6s)…"}`;
  const cases: { name: string; text: string; prev: string | null; want: boolean }[] = [
    { name: "new work", text: "editing src/a.ts\nrunning tests\n", prev: null, want: true },
    { name: "nothing but blank lines", text: "\n  \n", prev: "x", want: false },
    { name: "codex retrying: counters differ, the shape does not", text: `${retry(1)}\n${retry(2)}\n${retry(3)}\n`, prev: null, want: false },
    { name: "one waiting line after real work", text: "Reconnecting... 2/5\n", prev: "wrote a.ts", want: false },
    { name: "the same line as last time, with another timestamp", text: "[12:00:05] waiting\n", prev: "[12:00:04] waiting", want: false },
    { name: "repeats, then something new", text: "ping 1\nping 2\ncompiled ok\n", prev: "ping 0", want: true },
    { name: "a dot a minute", text: ".\n.\n", prev: ".", want: false },
  ];
  for (const c of cases)
    test(c.name, () => {
      expect(outputShowsProgress(c.text, c.prev).progress).toBe(c.want);
    });

  test("carries the last line to the next look", () => {
    expect(outputShowsProgress("a\nb\n\n", null).lastLine).toBe("b");
    expect(outputShowsProgress("\n", "kept").lastLine).toBe("kept");
  });
});

describe("lastProgressAt: only progress moves the stall clock", () => {
  test("waiting lines after work keep the time of the work; new work moves it", () => {
    const dir = mkdtempSync(join(tmpdir(), "loop-progress-"));
    try {
      const log = join(dir, "output.log");
      expect(lastProgressAt(dir, "output.log")).toBeNull(); // no output yet
      writeFileSync(log, "editing a.ts\n");
      utimesSync(log, 1000, 1000);
      expect(lastProgressAt(dir, "output.log")).toBe(1_000_000);
      appendFileSync(log, "retrying in 60s (1/∞)\nretrying in 60s (2/∞)\n");
      utimesSync(log, 2000, 2000);
      expect(lastProgressAt(dir, "output.log")).toBe(1_000_000);
      expect(JSON.parse(readFileSync(join(dir, PROGRESS_FILE), "utf8")).size).toBe(readFileSync(log).length);
      appendFileSync(log, "tests pass\n");
      utimesSync(log, 3000, 3000);
      expect(lastProgressAt(dir, "output.log")).toBe(3_000_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("output that was only ever waiting leaves the clock at the start", () => {
    const dir = mkdtempSync(join(tmpdir(), "loop-progress-"));
    try {
      writeFileSync(join(dir, "output.log"), "Reconnecting... 1/5\nReconnecting... 2/5\n");
      expect(lastProgressAt(dir, "output.log")).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The log side: environment_fault gives a reservation back; attention; notified.

function foldOf(...drafts: EventDraft[]): Projection {
  const b = new LogBuilder();
  b.push(definition(1, [itemDef("a"), itemDef("b")]), loopStarted, ...drafts);
  return fold(b.events);
}
const fault = (item: string | null, attempt: number | null): EventDraft => ({
  type: "environment_fault",
  item,
  payload: { kind: "program_not_found", attempt, reason: 'runner "x": program "x" was not found', fix: "install it, then `loop ctl resume`" },
});

describe("environment_fault in the reducer", () => {
  test("before a reservation: the loop pauses with the fault and its fix, the item is untouched", () => {
    const p = foldOf(fault("a", null));
    expect(p.loop.state).toBe("paused");
    expect(p.loop.reason).toBe('environment fault launching a: runner "x": program "x" was not found. To fix: install it, then `loop ctl resume`');
    expect(p.loop.fault).toEqual({ kind: "program_not_found", seq: 4 });
    expect(p.items.a!.status).toBe("pending");
    expect(p.items.a!.attempts).toEqual([]);
  });

  test("after a reservation: the attempt is given back, not counted, and the item is no longer current", () => {
    const p = foldOf(launch({ item: "a", attempt: 1 }), fault("a", 1));
    const it = p.items.a!;
    expect(it.status).toBe("pending");
    expect(it.failures).toBe(0);
    expect(it.attempts[0]!.end!.verdict).toBe("environment_fault");
    expect(it.attempts[0]!.outcome).toBe("requeued: environment fault (program_not_found)");
    expect(p.loop.current).toBeNull();
    expect(p.loop.state).toBe("paused");
  });

  test("resume (and pause, stop) clear the fault", () => {
    const resumed = foldOf(fault("a", null), { type: "loop_resumed", payload: {} });
    expect(resumed.loop.state).toBe("running");
    expect(resumed.loop.fault).toBeNull();
    expect(resumed.loop.notified).toEqual({});
    const stopped = foldOf(fault("a", null), { type: "loop_stopped", payload: { reason: "by alice" } });
    expect(stopped.loop.fault).toBeNull();
  });

  test("illegal: while paused, on a running item, an attempt without an item, a wrong attempt", () => {
    const rule = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as IllegalEventError).rule;
      }
      return null;
    };
    expect(rule(() => foldOf({ type: "loop_paused", payload: { reason: "x" } }, fault("a", null)))).toBe("loop_state");
    expect(rule(() => foldOf(launch({ item: "a", attempt: 1 }), started({ item: "a", attempt: 1 }), fault("a", 1)))).toBe("item_status");
    expect(rule(() => foldOf(fault(null, 1)))).toBe("item_required");
    expect(rule(() => foldOf(launch({ item: "a", attempt: 1 }), fault("a", 2)))).toBe("attempt_mismatch");
    expect(rule(() => foldOf(launch({ item: "a", attempt: 1 }), fault("b", null)))).toBe("one_in_flight");
  });
});

describe("attention: when the loop needs a person", () => {
  const kinds = (p: Projection) => attention(p).map((a) => `${a.kind}${a.item ? ` ${a.item}` : ""}`);
  const asked: EventDraft[] = [
    launch({ item: "a", attempt: 1 }),
    started({ item: "a", attempt: 1 }),
    { type: "needs_input", item: "a", payload: { attempt: 1, question: "which db?" } },
    closed({ item: "a", attempt: 1, worktreeRemoved: false }),
    { type: "loop_paused", payload: { reason: "a needs input: which db?" } },
  ];
  test("all is well: running, an operator's pause, an operator's stop", () => {
    expect(kinds(foldOf())).toEqual([]);
    expect(kinds(foldOf({ type: "loop_paused", payload: { reason: "maintenance" } }))).toEqual([]);
    expect(kinds(foldOf({ type: "loop_stopped", payload: { reason: "by alice" } }))).toEqual([]);
  });
  test("a question, an environment fault", () => {
    expect(kinds(foldOf(...asked))).toEqual(["question a"]);
    expect(kinds(foldOf(fault("a", null)))).toEqual(["environment a"]);
  });
  test("decided by the loop's typed cause, never by the reason's words", () => {
    const question = (reason: string): EventDraft => ({ type: "loop_paused", payload: { reason, cause: { kind: "question", item: "a" } } });
    const p = foldOf(...asked.slice(0, -1), question("the words say nothing"));
    expect(p.loop.cause).toEqual({ kind: "question", item: "a", seq: p.seq });
    expect(kinds(p)).toEqual(["question a"]);
    expect(attention(p)[0]!.fix).toEqual(['loop ctl reply --work-item a "<answer>"', "loop ctl resume"]);
    expect(pausedByQuestionOf(p, "a")).toBe(true);
    // A person's pause whose reason reads like a question's is a person's pause.
    const resumed = foldOf(
      ...asked,
      { type: "loop_resumed", payload: {} },
      { type: "loop_paused", payload: { reason: "a needs input: which db?", cause: { kind: "operator", verb: "pause" } } },
    );
    expect(resumed.loop.cause).toMatchObject({ kind: "operator", verb: "pause" });
    expect(kinds(resumed)).toEqual([]);
    expect(pausedByQuestionOf(resumed, "a")).toBe(false);
    // A fault's cause carries its kind, item and fix; a stop is a person's.
    const f = foldOf(fault("a", null));
    expect(f.loop.cause).toMatchObject({ kind: "fault", item: "a" });
    expect(attention(f)[0]!.fix).toEqual([f.loop.cause!.kind === "fault" ? f.loop.cause!.fix : ""]);
    expect(foldOf({ type: "loop_stopped", payload: { reason: "by alice" } }).loop.cause).toMatchObject({ kind: "operator", verb: "stop" });
    expect(foldOf(...asked, { type: "loop_resumed", payload: {} }).loop.cause).toBeNull();
    // A question pause must name an item that asked one.
    let rule: string | null = null;
    try {
      foldOf(question("x"));
    } catch (e) {
      rule = (e as IllegalEventError).rule;
    }
    expect(rule).toBe("item_status");
  });
  test("a landing that failed; then the Failed drain too, each with its own key", () => {
    const conflicted: EventDraft[] = [
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1, exitCode: 0 }),
      verified({ item: "a", attempt: 1, passed: true }),
      {
        ...landed({ item: "a", attempt: 1 }),
        payload: { ...landed({ item: "a", attempt: 1 }).payload, outcome: "conflict", code: "conflict", reason: "merge conflict in x" },
      } as EventDraft,
      closed({ item: "a", attempt: 1, worktreeRemoved: false }),
      settled({ item: "a", attempt: 1, outcome: "failed", reason: "merge_conflict: merge conflict in x", code: "merge_conflict" }),
    ];
    expect(kinds(foldOf(...conflicted))).toEqual(["landing a"]);
    const p = foldOf(
      ...conflicted,
      { type: "item_settled", item: "b", payload: { attempt: 0, outcome: "skipped", code: "operator_skipped", reason: "x" } },
      drained("Failed", { failed: 1, skipped: 1 }),
    );
    expect(kinds(p)).toEqual(["landing a", "failed"]);
    expect(attention(p).map((a) => a.key)).toEqual(["landing:a:e0:a1", `failed:${p.loop.drainedSeq}`]);
    expect(attention(p)[1]!.reason).toBe("the loop drained Failed: a failed (to start one item over instead: loop reset --work-item <id>)");
  });
  test("a landing blocked on the forge (landing_blocked, its PR left open); in the Failed drain's list too", () => {
    const blocked: EventDraft[] = [
      launch({ item: "a", attempt: 1 }),
      started({ item: "a", attempt: 1 }),
      ended({ item: "a", attempt: 1, exitCode: 0 }),
      verified({ item: "a", attempt: 1, passed: true }),
      {
        ...landed({ item: "a", attempt: 1 }),
        payload: {
          ...landed({ item: "a", attempt: 1 }).payload,
          outcome: "blocked",
          code: "checks_failed",
          commit: null,
          reason: "a check failed: ci; https://github.com/acme/api/pull/3 left open",
        },
      } as EventDraft,
      closed({ item: "a", attempt: 1, worktreeRemoved: false }),
      settled({
        item: "a",
        attempt: 1,
        outcome: "landing_blocked",
        reason: "landing_blocked: a check failed: ci; https://github.com/acme/api/pull/3 left open",
      }),
    ];
    const p = foldOf(...blocked);
    expect(p.items.a!.status).toBe("landing_blocked");
    expect(kinds(p)).toEqual(["landing a"]);
    expect(attention(p)[0]!.key).toBe("landing:a:e0:a1");
    expect(attention(p)[0]!.reason).toContain("pull/3 left open");
    const d = foldOf(
      ...blocked,
      { type: "item_settled", item: "b", payload: { attempt: 0, outcome: "skipped", code: "operator_skipped", reason: "x" } },
      drained("Failed", { landing_blocked: 1, skipped: 1 }),
    );
    expect(kinds(d)).toEqual(["landing a", "failed"]);
    expect(attention(d)[1]!.reason).toBe("the loop drained Failed: a landing_blocked (to start one item over instead: loop reset --work-item <id>)");
  });
  test("it reads only the item in flight, the items whose landing did not land, and once drained Failed those a drain counts as Failed: a view of those alone gives the same answer", () => {
    const conflicted = (item: string): EventDraft[] => [
      launch({ item, attempt: 1 }),
      started({ item, attempt: 1 }),
      ended({ item, attempt: 1, exitCode: 0 }),
      verified({ item, attempt: 1, passed: true }),
      {
        ...landed({ item, attempt: 1 }),
        payload: { ...landed({ item, attempt: 1 }).payload, outcome: "conflict", code: "conflict", reason: "merge conflict in x" },
      } as EventDraft,
      closed({ item, attempt: 1, worktreeRemoved: false }),
      settled({ item, attempt: 1, outcome: "failed", reason: "merge_conflict: merge conflict in x", code: "merge_conflict" }),
    ];
    for (const p of [
      foldOf(...asked),
      foldOf(...conflicted("a")),
      foldOf(
        ...conflicted("a"),
        settled({ item: "b", attempt: 0, outcome: "blocked", reason: 'dependency "a" failed' }),
        drained("Failed", { failed: 1, blocked: 1 }),
      ),
      foldOf(fault("a", null)),
    ]) {
      const drainedFailed = p.loop.state === "drained" && p.loop.outcome === "Failed";
      const input = attentionInput(p);
      const needed = (it: (typeof input.items)[number]) =>
        it.id === p.loop.current ||
        (drainedFailed && ATTENTION_STATUSES.includes(it.status)) ||
        (it.landing !== null && UNLANDED_OUTCOMES.includes(it.landing.outcome));
      expect(attentionOf({ ...input, items: input.items.filter(needed) })).toEqual(attention(p));
    }
    expect(ATTENTION_STATUSES).toEqual(["failed", "blocked", "landing_blocked"]);
  });
  test("notified records the key per slot", () => {
    const p = foldOf(fault("a", null), {
      type: "notified",
      item: null,
      payload: { slot: "environment", key: "environment:4", kind: "environment", ok: false, exitCode: 3, reason: "exited 3" },
    });
    expect(p.loop.notified).toEqual({ environment: "environment:4" });
    expect(attention(p)[0]!.key).toBe("environment:4");
  });
  test("stepExitCode: 1 for errors or attention, else 0", () => {
    const a = { kind: "failed" as const, item: null, reason: "x" };
    expect(stepExitCode({ errors: [], attention: [] })).toBe(0);
    expect(stepExitCode({ errors: ["git failed"], attention: [] })).toBe(1);
    expect(stepExitCode({ errors: [], attention: [a] })).toBe(1);
  });
});

describe("interrupted launches in a row (interruptedLaunchesFault)", () => {
  const cases: { name: string; ended: (string | null)[]; attempt: number; want: string | null }[] = [
    { name: "the first interrupted launch is tried again", ended: [], attempt: 1, want: null },
    { name: "the second too", ended: ["launch_interrupted"], attempt: 2, want: null },
    { name: "the third in a row pauses", ended: ["launch_interrupted", "launch_interrupted"], attempt: 3, want: "attempts 1 to 3" },
    {
      name: "counted back to the last launch that got further",
      ended: ["exited", "launch_interrupted", "launch_interrupted"],
      attempt: 4,
      want: "attempts 2 to 4",
    },
    { name: "an attempt that ran stands between", ended: ["launch_interrupted", "exited", "launch_interrupted"], attempt: 4, want: null },
    {
      name: "a pause given back (resumed) starts the count again",
      ended: ["launch_interrupted", "launch_interrupted", "environment_fault"],
      attempt: 4,
      want: null,
    },
  ];
  test.each(cases)("$name", ({ ended, attempt, want }) => {
    const f = interruptedLaunchesFault({ item: "a", attempt, ended });
    if (want === null) expect(f).toBeNull();
    else {
      expect(f!.kind).toBe("launch_interrupted");
      expect(f!.message).toContain(want);
      expect(f!.fix).toContain("`loop ctl resume`");
    }
  });
  test("the threshold is three", () => expect(INTERRUPTED_LAUNCHES).toBe(3));
});

describe("drainedReason: what died with a stopped watcher is the machine's, not the attempt's", () => {
  const stop = { pid: 41, signal: "SIGTERM", signalledAt: "2030-01-01T00:00:00.000Z", running: "session" as const };
  test("a session the stop named, found vanished: drained, naming the watcher, the signal and when", () => {
    expect(drainedReason({ stop, what: "session", vanished: "session process vanished without an exit status" })).toBe(
      "drained: session process vanished without an exit status, after the watcher it ran beside (pid 41) was stopped by SIGTERM at 2030-01-01T00:00:00.000Z (a pod's end, a node drain or a service stop takes what runs beside it); an environment fault: the attempt is not counted and runs again",
    );
  });
  test("no stop on record: the attempt answers for its end", () => {
    expect(drainedReason({ stop: undefined, what: "session", vanished: "gone" })).toBeNull();
  });
  test("the stop named the session, but the verify vanished (a later one, started after the stop): not drained", () => {
    expect(drainedReason({ stop, what: "verify", vanished: "gone" })).toBeNull();
    expect(drainedReason({ stop: { ...stop, running: "verify" }, what: "verify", vanished: "gone" })).toStartWith("drained: gone, after the watcher");
  });
});
