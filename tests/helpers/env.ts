// THE environment of every loop command a test runs, spawned or in process. Whatever in the
// caller's environment steers loop is removed here, in one place: every LOOP_* variable, and the
// few others named in STEERING. tests/helpers/helpers.test.ts reads lib/ and cmd/ for every
// variable they name and fails on one that is neither scrubbed here nor listed in INHERITED.
import { tmpdir } from "node:os";
import { join } from "node:path";
import { worktreesRoot } from "../../lib/shared/paths.ts";

/** Variables outside LOOP_* that change what loop (or a program it starts) does. */
export const STEERING = [
  // tmux refuses some commands inside a session, and would pick the caller's server.
  "TMUX",
  // Whether claude may run as root (lib/step/machine-probe.ts): a caller's value would hide the check.
  "IS_SANDBOX",
  "CLAUDE_CODE_BUBBLEWRAP",
  // The operator's claude and codex config homes, where a session's credentials are copied from (lib/supervisor/config-home.ts).
  "CLAUDE_CONFIG_DIR",
  "CODEX_HOME",
  // Where a session's systemd user manager is found (lib/supervisor/scope.ts).
  "XDG_RUNTIME_DIR",
  // Where tmux keeps its sockets: hidden in the sandbox (lib/supervisor/sandbox.ts).
  "TMUX_TMPDIR",
  // Colour: NO_COLOR is set again below; FORCE_COLOR and CI change citty's colour detection.
  "NO_COLOR",
  "FORCE_COLOR",
  "CI",
  // The caller's active virtualenv: an item's environment drops it (lib/definition/item-environment.ts).
  "VIRTUAL_ENV",
  // Where loop puts worktrees by default (lib/shared/paths.ts worktreesRoot): set below to a test folder.
  "XDG_STATE_HOME",
  // Where git finds the repository: set inside a git hook, they would send every test's git
  // command (and loop's own) to the caller's repository.
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_COMMON_DIR",
  "GIT_NAMESPACE",
  "GIT_PREFIX",
  // How loop's own push and fetch reach ssh (lib/repo/isolated-git.ts keeps them from loop's environment).
  "GIT_SSH_COMMAND",
  "GIT_SSH",
  // A session gateway's upstreams and loop's model keys (lib/supervisor/session-gateway.ts): a caller's would reach a real API.
  "ANTHROPIC_BASE_URL",
  "OPENAI_BASE_URL",
  "GOOGLE_GEMINI_BASE_URL",
  "ANTHROPIC_API_KEY",
  "OPENAI_API_KEY",
  "GEMINI_API_KEY",
  // Added to on an open network, for the gateway's loopback (lib/supervisor/session-gateway.ts): the caller's would show in the agent's.
  "NO_PROXY",
  "no_proxy",
] as const;

/** Variables loop reads that are kept from the caller on purpose, each with the reason. */
export const INHERITED: Record<string, string> = {
  PATH: "finding git, sh, tmux and the runners' commands",
  USER: "the actor's default name (tests that check actors set LOOP_ACTOR)",
  LOGNAME: "the actor's default name, when USER is unset",
  TERM: "read only on a terminal, and the terminal tests set it",
  HOME: "where the agents' own settings live (aider's key files); the environment tests set it",
};

/** True for a variable the scrubber removes from the caller's environment. */
export function isScrubbed(name: string): boolean {
  return name.startsWith("LOOP_") || (STEERING as readonly string[]).includes(name);
}

/**
 * What every test command gets after scrubbing: no colour, a short grace before SIGKILL, no chained
 * steps (docs/cli/loop-run.md#chained-steps: a test steps the loop itself, one phase per `loop run`;
 * the tests of chaining turn it on), and worktrees under a test folder.
 */
export const TEST_DEFAULTS: Readonly<Record<string, string>> = {
  NO_COLOR: "1",
  LOOP_KILL_GRACE_MS: "300",
  LOOP_CHAIN: "off",
  // Worktrees go under $XDG_STATE_HOME/loop/<project>-<hash>: never into the caller's home.
  XDG_STATE_HOME: join(tmpdir(), "loop-tests-state"),
};

/** Where the worktrees of the loop at `stateRoot` are, for a test command run with testEnv(extra). */
export function worktreesOf(stateRoot: string, extra: Record<string, string | undefined> = {}): string {
  return worktreesRoot(stateRoot, testEnv(extra));
}

/**
 * The caller's environment without anything that steers loop, then TEST_DEFAULTS, then `extra`
 * (a value of undefined removes the variable: `{ NO_COLOR: undefined }` for a colour test).
 */
export function testEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(process.env)) if (!isScrubbed(k)) env[k] = v;
  Object.assign(env, TEST_DEFAULTS, extra);
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}
