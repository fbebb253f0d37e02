// Environment faults (docs/cli/loop-run.md#environment-faults): what is wrong with the machine, not
// with a work item. A launch that meets one spends no attempt: the loop pauses with a reason that
// names the fault and how to fix it, and `loop run` exits 1. Pure: the facts are probed by
// lib/step/machine-probe.ts, and these functions only judge them; a fault met inside an effect is
// thrown there as a FaultError, and launchErrorFault judges an error by its type, never its words.
import { FaultError, GitError, StartError } from "../shared/errors.ts";
import { faultSentence } from "../log/vocabulary.ts";

export type FaultKind =
  | "base_missing"
  | "no_commit"
  | "verify_placeholder"
  | "program_not_found"
  | "program_not_executable"
  | "claude_as_root"
  | "aider_no_model"
  | "gemini_no_key"
  | "git_identity"
  | "sandbox_unavailable"
  | "program_fails_in_sandbox"
  | "scope_unavailable"
  | "owned_ref_changed"
  | "disk_full"
  | "permission_denied"
  | "git_failed"
  | "launch_failed"
  | "launch_interrupted"
  | "setup_failed"
  | "setup_missing"
  | "base_verify_failed"
  | "object_store_tampered"
  | "tracker_state_unknown"
  | "tracker_down"
  | "tracker_unauthorized";

export interface EnvironmentFault {
  kind: FaultKind;
  /** What is wrong, naming the thing (runner, program, branch, path). */
  message: string;
  /** How to put it right. */
  fix: string;
}

/** What the program a runner starts resolves to. */
export type ProgramFact =
  | { state: "found"; path: string }
  | { state: "missing"; path: string | null }
  | { state: "not_executable"; path: string }
  /** A path relative to the worktree, which does not exist yet: checked after the reservation. */
  | { state: "unchecked" };

/** Everything the launch check judges, probed just before an attempt would be reserved. */
export interface LaunchFacts {
  runner: string;
  /** The runner's program (argv[0]). */
  program: string;
  programFact: ProgramFact;
  /** The PATH the session will get, for the message. */
  PATH: string;
  /** The commit the item's branch starts from (the base, or the landing target once it exists). */
  startPoint: string;
  /** Null when the branch already exists (a retry): its start point no longer matters. */
  startPointExists: boolean | null;
  /** Whether the repository has any commit; asked only when the start point is missing (else null). */
  hasCommits?: boolean | null;
  /** The item's verify command (false: none), to catch the placeholder `loop init` writes. */
  verify?: string | false;
  /** The effective uid of the step (null where there is none). */
  uid: number | null;
  /** The variables Claude Code reads to allow --dangerously-skip-permissions as root. */
  sandbox: { IS_SANDBOX?: string; CLAUDE_CODE_BUBBLEWRAP?: string };
  /** With `sessions.tmux`: where tmux resolves (null without tmux sessions). */
  tmux: ProgramFact | null;
  /** For an item with `sandbox: "bwrap"`: whether bwrap is there and makes a sandbox (null without one). */
  bwrap?: SandboxFact;
  /**
   * For the gemini preset: whether loop's environment holds GEMINI_API_KEY, the key its session's
   * gateway sends upstream (null for other runners).
   */
  geminiKey?: boolean | null;
  /** For aider: can it pick a model without asking (null for other runners). */
  aiderModel: AiderModelFacts | null;
  /** What LOOP_SESSION_SCOPE asks for and the machine cannot give (lib/supervisor/scope.ts probeScopeRequirement); null when nothing stands in the way. */
  scope?: ScopeFact;
  /** git's verdict on the committer identity, for the presets (agents that commit); null when not checked. */
  gitIdentity: { ok: true } | { ok: false; detail: string } | null;
}

export interface AiderModelFacts {
  /** The model from loop.json, or null. */
  model: string | null;
  env: Record<string, string | undefined>;
  /** Text of the files aider reads its settings and keys from (null when absent), by path. */
  files: Record<string, string | null>;
}

/** Environment variables that let aider choose a model on its own (aider/onboarding.py), or name one. */
const AIDER_KEY_VARS = [
  "AIDER_MODEL",
  "ANTHROPIC_API_KEY",
  "DEEPSEEK_API_KEY",
  "OPENROUTER_API_KEY",
  "OPENAI_API_KEY",
  "GEMINI_API_KEY",
  "AIDER_OPENAI_API_KEY",
  "AIDER_ANTHROPIC_API_KEY",
] as const;

/**
 * Whether aider can pick a model without asking: a model in loop.json, AIDER_MODEL or a provider
 * key in the environment (or VERTEXAI_PROJECT with GOOGLE_APPLICATION_CREDENTIALS), or one of these
 * in a `.env`-style file aider loads, or `model:` / an `api-key` setting in a `.aider.conf.yml`.
 * Without any, aider (run with --yes-always) accepts its own offer to log in to OpenRouter through a
 * browser and waits minutes for nobody.
 */
export function aiderCanChooseModel(f: AiderModelFacts): boolean {
  if (f.model) return true;
  const set = (k: string) => (f.env[k] ?? "").trim() !== "";
  if (AIDER_KEY_VARS.some(set)) return true;
  if (set("VERTEXAI_PROJECT") && set("GOOGLE_APPLICATION_CREDENTIALS")) return true;
  const keyLine = new RegExp(`^\\s*(?:export\\s+)?(?:${AIDER_KEY_VARS.join("|")})\\s*=\\s*\\S`, "m");
  const confLine = /^\s*(?:model|api-key|[a-z0-9-]+-api-key)\s*:\s*\S/m;
  for (const [path, text] of Object.entries(f.files)) {
    if (text === null) continue;
    if (/\.ya?ml$/.test(path) ? confLine.test(text) : keyLine.test(text)) return true;
  }
  return false;
}

const RESUME = "then `loop ctl resume`";

/**
 * The verify command `loop init` writes when it finds no test command to guess: it fails every
 * attempt, so an item that still has it is not launched (an agent session would be spent for nothing).
 */
export const VERIFY_PLACEHOLDER = "exit 1";

export function isVerifyPlaceholder(verify: string | false | undefined): boolean {
  return typeof verify === "string" && verify.trim() === VERIFY_PLACEHOLDER;
}

/** The first environment fault among the launch facts, in the order an operator would fix them; null when none. */
export function launchFault(f: LaunchFacts): EnvironmentFault | null {
  // An empty repository has its branch name, not the branch: naming another branch would not help.
  if (f.startPointExists === false && f.hasCommits === false)
    return {
      kind: "no_commit",
      message: `the repository has no commit yet: the branch items start from, ${JSON.stringify(f.startPoint)}, is made by its first commit`,
      fix: `make the first commit (commit loop.json, or \`git commit --allow-empty -m "initial commit"\`), ${RESUME}`,
    };
  if (f.startPointExists === false)
    return {
      kind: "base_missing",
      message: `the branch items start from, ${JSON.stringify(f.startPoint)}, is not a branch or commit of the repository`,
      fix: `create it, or set "workspace.base" in loop.json to the repository's main branch (\`git branch --show-current\` in the checkout says which), ${RESUME}`,
    };
  if (isVerifyPlaceholder(f.verify))
    return {
      kind: "verify_placeholder",
      message: `its verify command is still ${JSON.stringify(VERIFY_PLACEHOLDER)}, the placeholder \`loop init\` writes, which fails every attempt`,
      fix: `set "verify" in loop.json ("defaults.verify", or the item's own) to the command that proves the work is done (for example "npm test"), ${RESUME}`,
    };
  const p = f.programFact;
  const runner = `runner ${JSON.stringify(f.runner)}`;
  if (p.state === "missing")
    return {
      kind: "program_not_found",
      message: `${runner}: program ${JSON.stringify(f.program)} was not found${p.path ? ` (${p.path})` : ` on PATH (${f.PATH || "empty"})`}`,
      fix: `install it, or give loop run a PATH that holds it (cron runs with PATH=/usr/bin:/bin: add a PATH= line to the crontab), or use an absolute path in a command runner, ${RESUME}`,
    };
  if (p.state === "not_executable")
    return {
      kind: "program_not_executable",
      message: `${runner}: program ${JSON.stringify(f.program)} (${p.path}) is not executable`,
      fix: `make it executable (chmod +x), ${RESUME}`,
    };
  if (f.tmux && f.tmux.state !== "found" && f.tmux.state !== "unchecked")
    return {
      kind: "program_not_found",
      message: `"sessions.tmux" is on, but tmux was not found on PATH (${f.PATH || "empty"})`,
      fix: `install tmux, or set "sessions.tmux" to false in loop.json, ${RESUME}`,
    };
  const box = sandboxFault(f.bwrap ?? null);
  if (box) return box;
  const scope = scopeFault(f.scope);
  if (scope) return scope;
  if (f.runner === "claude" && f.uid === 0 && f.sandbox.IS_SANDBOX !== "1" && !f.sandbox.CLAUDE_CODE_BUBBLEWRAP)
    return {
      kind: "claude_as_root",
      message: `runner "claude": loop runs as root, and Claude Code refuses --dangerously-skip-permissions as root`,
      fix: `run loop as an ordinary user, or, on a machine that is a disposable sandbox, set IS_SANDBOX=1 (or CLAUDE_CODE_BUBBLEWRAP=1) in loop run's environment, ${RESUME}`,
    };
  if (f.geminiKey === false)
    return {
      kind: "gemini_no_key",
      message: `runner "gemini": loop run's environment has no GEMINI_API_KEY, the key its session's gateway sends to Gemini's API (the agent gets a stand-in for it; without one every request of the CLI would fail)`,
      fix: `set GEMINI_API_KEY in loop run's environment (a Gemini API key; its upstream is GOOGLE_GEMINI_BASE_URL when set), ${RESUME}`,
    };
  if (f.aiderModel && !aiderCanChooseModel(f.aiderModel))
    return {
      kind: "aider_no_model",
      message: `runner "aider": no model and no provider key (aider would wait for a browser login to OpenRouter)`,
      fix: `set "model" in loop.json, or a provider key (OPENAI_API_KEY, ANTHROPIC_API_KEY, …) or AIDER_MODEL in loop run's environment, ${RESUME}`,
    };
  if (f.gitIdentity && !f.gitIdentity.ok)
    return {
      kind: "git_identity",
      message: `git has no committer identity for the agent's commits: ${f.gitIdentity.detail}`,
      fix: `set one for the user loop runs as (git config --global user.name …; git config --global user.email …) or in the repository, ${RESUME}`,
    };
  return null;
}

/**
 * A runner's program that runs outside the sandbox and not inside it (probed with `--version`,
 * lib/supervisor/sandbox.ts probeProgramInSandbox): the machine's fault, not the item's.
 */
export function sandboxStartFault(o: { runner: string; program: string; path: string; failed: string }): EnvironmentFault {
  return {
    kind: "program_fails_in_sandbox",
    message: `runner ${JSON.stringify(o.runner)}: \`${o.program} --version\` (${o.path}) does not run in the sandbox (${o.failed})`,
    fix: `install the runner where the sandbox can see all of it (not under /tmp or the state root; a wrapper script's target too), or set "sandbox" to "none" in loop.json, ${RESUME}`,
  };
}

/** What LOOP_SESSION_SCOPE asks for, as probed: an invalid value, or `systemd` refused for a lack of the machine's. */
type ScopeFact =
  | { invalid: string }
  | { refused: string; lack: "no_systemd_run" | "no_system_manager" | "no_user_manager" | "no_linger"; user: string | null }
  | null;

/**
 * Sessions must run in a systemd scope (LOOP_SESSION_SCOPE=systemd, as the shipped units set it) and
 * cannot: under a oneshot unit they would die with the step, and in a user manager that only a
 * login keeps they die at logout. A fault before the reservation, naming the fix; null otherwise.
 */
export function scopeFault(f: ScopeFact | undefined): EnvironmentFault | null {
  if (!f) return null;
  if ("invalid" in f)
    return { kind: "scope_unavailable", message: f.invalid, fix: `set LOOP_SESSION_SCOPE to auto, systemd or off in loop run's environment, ${RESUME}` };
  const user = f.user ?? "<the user loop runs as>";
  const FIX: Record<typeof f.lack, string> = {
    no_systemd_run: "install systemd (systemd-run) or put it on loop run's PATH",
    no_system_manager:
      "run loop under a systemd system manager, or set LOOP_SESSION_SCOPE=off where none runs (a container: sessions are process groups beside loop)",
    no_user_manager: `let the user's systemd manager run without a login: \`sudo loginctl enable-linger ${user}\``,
    no_linger: `let the user's systemd manager outlive its logins: \`sudo loginctl enable-linger ${user}\``,
  };
  return { kind: "scope_unavailable", message: `sessions must run in a systemd scope of their own, but ${f.refused}`, fix: `${FIX[f.lack]}, ${RESUME}` };
}

/** The sandbox an item asks for ("sandbox": "bwrap"), as probed (lib/supervisor/sandbox.ts probeSandbox); null without one. */
type SandboxFact = { ok: true } | { ok: false; kind: "missing" | "refused"; message: string } | null;

/** The fault of a sandbox that is asked for and unusable (bwrap missing, or refused), else null. */
export function sandboxFault(f: SandboxFact): EnvironmentFault | null {
  if (!f || f.ok) return null;
  return {
    kind: "sandbox_unavailable",
    message: `the item asks for the sandbox ("sandbox": "bwrap"), but ${f.message}`,
    fix:
      f.kind === "missing"
        ? `install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap) or put bwrap on loop run's PATH, or set "sandbox" to "none" in loop.json, ${RESUME}`
        : `let bwrap make its namespaces here (a kernel that allows unprivileged user namespaces; in a container, one allowed to create them), or set "sandbox" to "none" in loop.json, ${RESUME}`,
  };
}

/**
 * Refs loop owns that someone else moved or deleted (lib/repo/owned-refs.ts), as a fault: `changes`
 * names each, `restore` gives the command that puts each back.
 */
export function ownedRefFault(o: { changes: string[]; restore: string[]; items: string[] }): EnvironmentFault | null {
  if (o.changes.length === 0) return null;
  const reset = o.items.length ? `, or run an item again from scratch with \`loop reset ${o.items.map((i) => `--work-item ${i}`).join(" ")}\`` : "";
  return {
    kind: "owned_ref_changed",
    message: `refs loop owns are not where it left them: ${o.changes.join("; ")}`,
    fix: `find out who changed them (an agent without the sandbox can), then put them back (${o.restore.join("; ")}; commits worth keeping go on a branch of your own first)${reset}, ${RESUME}`,
  };
}

/**
 * The fault a launch failed with after its reservation, from the error's type: a FaultError's own;
 * a system call the machine refused (a full disk, no permission, a read-only file system, any other
 * errno); git failing (GitError); a process that could not be started (StartError: loop's wrapper,
 * tmux, a systemd scope). Null for anything else: a bug in loop, which is no fault of the machine's
 * (the caller rethrows it; the next step finds the launch interrupted and spends no attempt on it).
 */
export function launchErrorFault(err: unknown): EnvironmentFault | null {
  if (err instanceof FaultError) return { ...err.fault, message: `could not launch: ${err.fault.message}` };
  const message = `could not launch: ${err instanceof Error ? err.message : String(err)}`;
  const errno = systemError(err);
  if (errno === "ENOSPC" || errno === "EDQUOT")
    return { kind: "disk_full", message: `the disk is full: ${message}`, fix: `free space on the disk of the state root and the repository, ${RESUME}` };
  if (errno === "EACCES" || errno === "EPERM" || errno === "EROFS")
    return { kind: "permission_denied", message, fix: `give the user loop runs as write access to the repository and its state root, ${RESUME}` };
  if (err instanceof GitError)
    return {
      kind: "git_failed",
      message,
      fix: `look at the repository (git worktree list, git status; a stale .lock file under .git), fix what git reports, ${RESUME}`,
    };
  if (errno !== null || err instanceof StartError) return { kind: "launch_failed", message, fix: `fix what the message names, ${RESUME}` };
  return null;
}

/** The errno of an error a system call raised (it names the call), else null. */
export function systemError(err: unknown): string | null {
  const e = err as NodeJS.ErrnoException | null;
  return typeof e?.code === "string" && /^E[A-Z]+$/.test(e.code) && typeof e.syscall === "string" ? e.code : null;
}

/** A runner's program that is missing (or not executable) where the launch resolved it, as a fault. */
export function programFault(o: {
  runner: string;
  program: string;
  fact: Exclude<ProgramFact, { state: "found" } | { state: "unchecked" }>;
}): EnvironmentFault {
  const runner = `runner ${JSON.stringify(o.runner)}`;
  if (o.fact.state === "not_executable")
    return {
      kind: "program_not_executable",
      message: `${runner}: program ${JSON.stringify(o.program)} (${o.fact.path}) is not executable`,
      fix: `make it executable (chmod +x), ${RESUME}`,
    };
  return {
    kind: "program_not_found",
    message: `${runner}: program ${JSON.stringify(o.program)} not found${o.fact.path ? ` (${o.fact.path})` : " on PATH"}`,
    fix: `install it, or fix the runner's command in loop.json, ${RESUME}`,
  };
}

/** The commit an item branch starts from is not there (someone deleted the base), as a fault. */
export function startPointFault(o: { startPoint: string; repo: string }): EnvironmentFault {
  return {
    kind: "base_missing",
    message: `start point ${JSON.stringify(o.startPoint)} is not a commit in ${o.repo}`,
    fix: `create the branch, or set "workspace.base" in loop.json to an existing one, ${RESUME}`,
  };
}

/** Where a full disk was met: the state root, the filesystem's mount point, the bytes left. */
export interface FullDisk {
  path: string;
  mount: string;
  free: number | null;
}

/** How many launches of one item in a row may be interrupted before the loop pauses instead of trying again. */
export const INTERRUPTED_LAUNCHES = 3;

/**
 * A launch found interrupted (its step stopped between the reservation and the agent's start) when
 * the launches before it, back to the last that got further, were interrupted too: a bug in loop at
 * launch or a step killed there every time (the OOM killer, cron's timeout). Trying again each tick
 * would only grow the log and mail the same error; the loop pauses instead. Pure: `ended` is the
 * end verdict of each earlier attempt of the item, oldest first.
 */
export function interruptedLaunchesFault(o: { item: string; attempt: number; ended: readonly (string | null)[] }): EnvironmentFault | null {
  let run = 1;
  for (let k = o.ended.length - 1; k >= 0 && o.ended[k] === "launch_interrupted"; k--) run++;
  if (run < INTERRUPTED_LAUNCHES) return null;
  return {
    kind: "launch_interrupted",
    message: `the last ${run} launches of ${o.item} (attempts ${o.attempt - run + 1} to ${o.attempt}) each stopped before the agent started: a bug in loop at launch (each such step exited 70 with \`internal\`) or the step killed while launching (the OOM killer, a timeout around cron's command)`,
    fix: "read the failed steps' stderr (cron's mail; `loop run --verbose` prints a bug's stack) and the machine's memory and kill logs, then `loop ctl resume`",
  };
}

/**
 * A full disk, met at any point of a step (before it opens the store, an append SQLite refused, a
 * launch's write): the loop pauses with a reason that says so and where. Pure.
 */
export function diskFullFault(d: FullDisk): EnvironmentFault {
  const free = d.free === null ? "" : `, ${d.free} bytes free`;
  return {
    kind: "disk_full",
    message: `the disk is full: no space left on the filesystem holding the state root ${d.path} (mounted at ${d.mount}${free})`,
    fix: `free space on it (agents' output logs under ${d.path}/sessions and old worktrees under ${d.path}/workspaces are the usual suspects), ${RESUME}`,
  };
}

/** A watcher's stop as the attempt it named records it (watcher_stopped). */
export interface WatcherStopFact {
  pid: number;
  signal: string;
  signalledAt: string;
  running: "session" | "verify";
}

/**
 * The session (or verify) of an attempt found gone without an exit status, after the watcher that
 * stepped the loop named it when a signal stopped it: it died with the watcher's machine (a pod's
 * end takes every process of the pod; a node drain, a spot reclaim, a scale-down end the pod), not
 * of anything the agent did. An environment fault that pauses nothing: the attempt is given back
 * and run again. The reason says so; null when the attempt answers for its own end (no stop on
 * record, or a stop of the session when its verify is what vanished).
 */
export function drainedReason(o: { stop: WatcherStopFact | undefined; what: "session" | "verify"; vanished: string }): string | null {
  if (!o.stop || o.stop.running !== o.what) return null;
  return `drained: ${o.vanished}, after the watcher it ran beside (pid ${o.stop.pid}) was stopped by ${o.stop.signal} at ${o.stop.signalledAt} (a pod's end, a node drain or a service stop takes what runs beside it); an environment fault: the attempt is not counted and runs again`;
}

/** The loop's pause reason for a fault: what is wrong, then how to fix it. */
export function faultReason(f: EnvironmentFault, item: string | null, doing: "launching" | "verifying" = "launching"): string {
  return faultSentence({ reason: f.message, fix: f.fix, item, doing });
}
