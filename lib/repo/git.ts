// Git, run as a process. Every call names its cwd; failures carry git's own stderr.
// Bun.spawnSync, not node:child_process: loading that module costs every tool ~3 ms at start-up.
//
// Every call runs with SAFE_GIT_CONFIG: the agent can write the repository's config, its hooks and
// its .gitattributes (its worktree's git metadata lives in the common git dir), so no git command
// of loop's may run a program they name (docs/forge.md#threat-model). Commands that touch a work
// tree also get driverOverrides: every filter, merge and diff driver the config defines, disabled.
import { GitError } from "../shared/errors.ts";

export interface GitResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

// Replace refs (refs/replace/*) would let whoever can write refs swap one object for another in
// everything loop reads: loop's own git never follows them.
const GIT_ENV = { GIT_TERMINAL_PROMPT: "0", GIT_OPTIONAL_LOCKS: "0", GIT_NO_REPLACE_OBJECTS: "1" };

/**
 * Config that keeps every program the repository's (or the user's) git config or hooks name from
 * running inside loop's own git: hooks (`core.hooksPath` to a path that holds none), fsmonitor,
 * editors, pager, askpass, credential helpers (the list is emptied; loop's push adds its own),
 * signing programs, the alternate-refs command, ssh from config (`GIT_SSH_COMMAND` in loop's own
 * environment still applies), and transports that run commands (`ext::`, unknown `<vcs>::`
 * helpers). Background gc is off: it would outlive the step, out of its sight.
 */
export const SAFE_GIT_CONFIG: readonly string[] = [
  "core.hooksPath=/dev/null",
  "core.fsmonitor=false",
  "core.editor=:",
  "sequence.editor=:",
  "core.pager=cat",
  "core.askPass=",
  "core.sshCommand=ssh",
  "core.alternateRefsCommand=",
  "credential.helper=",
  "commit.gpgSign=false",
  "tag.gpgSign=false",
  "push.gpgSign=false",
  "gc.auto=0",
  "maintenance.auto=false",
  "protocol.allow=never",
  "protocol.file.allow=always",
  "protocol.https.allow=always",
  "protocol.http.allow=always",
  "protocol.ssh.allow=always",
];

/** Subcommands that may read or write a work tree or merge contents (`merge-tree` merges in memory), and so run filter, merge or diff drivers. */
const TOUCH_WORK_TREE = new Set([
  "add",
  "commit",
  "status",
  "merge",
  "merge-tree",
  "merge-file",
  "reset",
  "worktree",
  "checkout",
  "switch",
  "diff",
  "stash",
  "rm",
  "mv",
  "restore",
  "cherry-pick",
  "rebase",
  "read-tree",
  "checkout-index",
  "update-index",
]);

/** The standard Git LFS filter: pinned, so it keeps working while the config cannot point it elsewhere. */
const LFS_FILTER: Record<string, string> = {
  clean: "git-lfs clean -- %f",
  smudge: "git-lfs smudge -- %f",
  process: "git-lfs filter-process",
  required: "true",
};

/**
 * Config pairs (key, value) that disable every driver the config defines (`filter.<d>.clean/smudge/process`,
 * `merge.<d>.driver`, `diff.<d>.command/textconv`), from `git config --get-regexp` (reading config
 * runs nothing). A filter becomes no filter (not required); a merge driver `false`, so a file that
 * needs it conflicts instead of merging unchecked; `lfs` keeps the standard git-lfs commands. They
 * reach git through the environment (configEnv), never as `-c k=v`: git splits that at the first
 * `=`, and a driver the agent named `a=b` would stay enabled.
 */
function driverOverrides(configListing: string): [string, string][] {
  const out: [string, string][] = [];
  const seen = new Set<string>();
  for (const entry of configListing.split("\0")) {
    const key = entry.split("\n", 1)[0]!;
    const m = /^(filter|merge|diff)\.(.+)\.(clean|smudge|process|required|driver|command|textconv)$/i.exec(key);
    if (!m) continue;
    const [, section, driver] = [m[0], m[1]!.toLowerCase(), m[2]!];
    if (seen.has(`${section}.${driver}`)) continue;
    seen.add(`${section}.${driver}`);
    if (section === "filter") {
      for (const k of ["clean", "smudge", "process", "required"])
        out.push([`filter.${driver}.${k}`, driver === "lfs" ? LFS_FILTER[k]! : k === "required" ? "false" : ""]);
    } else if (section === "merge") out.push([`merge.${driver}.driver`, "false"]);
    else out.push([`diff.${driver}.command`, ""], [`diff.${driver}.textconv`, ""]);
  }
  return out;
}

/** Config pairs as GIT_CONFIG_COUNT, GIT_CONFIG_KEY_<n> and GIT_CONFIG_VALUE_<n>: a key is taken whole, whatever it holds. */
function configEnv(pairs: readonly [string, string][]): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(pairs.length) };
  pairs.forEach(([key, value], n) => {
    env[`GIT_CONFIG_KEY_${n}`] = key;
    env[`GIT_CONFIG_VALUE_${n}`] = value;
  });
  return env;
}

function spawnGit(cwd: string, config: readonly string[], args: string[], env: Record<string, string>, input?: string, timeoutMs?: number): GitResult {
  try {
    const stdin = input === undefined ? "ignore" : new TextEncoder().encode(input);
    const argv = ["git", ...config.flatMap((c) => ["-c", c]), ...args];
    const r = Bun.spawnSync(argv, {
      cwd,
      env: { ...process.env, ...GIT_ENV, ...env },
      stdin,
      stdout: "pipe",
      stderr: "pipe",
      ...(timeoutMs ? { timeout: timeoutMs } : {}),
    });
    const late =
      timeoutMs !== undefined && r.exitCode === null && r.signalCode !== null
        ? `no end within ${Math.round(timeoutMs / 1000)}s; stopped (${r.signalCode})\n`
        : "";
    return { code: r.exitCode, stdout: r.stdout.toString(), stderr: late + r.stderr.toString() };
  } catch (err) {
    // git missing from PATH, or cwd gone: a failed call like any other, with the reason.
    return { code: null, stdout: "", stderr: (err as Error).message };
  }
}

/** The subcommand of a git argv (after any `-c k=v` and `-C dir` the caller put first), and the word after it. */
function subcommand(args: string[]): { name: string | undefined; next: string | undefined } {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "-c" || args[i] === "-C") i++;
    else if (!args[i]!.startsWith("-")) return { name: args[i], next: args[i + 1] };
  }
  return { name: undefined, next: undefined };
}

/**
 * Whether a git call may read or write a work tree's files (and so run a driver): of `worktree`,
 * only `add` checks out; `read-tree` only with `-u`.
 */
function touchesWorkTree(args: string[]): boolean {
  const { name, next } = subcommand(args);
  if (name === "worktree") return next === "add";
  if (name === "read-tree") return args.includes("-u");
  return TOUCH_WORK_TREE.has(name ?? "");
}

/** `timeoutMs`: a deadline for a call that talks to another machine (loop's push and fetch); local calls have none. */
export function gitTry(cwd: string, args: string[], env: Record<string, string> = {}, input?: string, timeoutMs?: number): GitResult {
  let overrides: Record<string, string> = {};
  if (touchesWorkTree(args)) {
    const drivers = spawnGit(
      cwd,
      SAFE_GIT_CONFIG,
      ["config", "-z", "--get-regexp", "^(filter|merge|diff)\\..+\\.(clean|smudge|process|required|driver|command|textconv)$"],
      env,
    );
    if (drivers.code === 0) overrides = configEnv(driverOverrides(drivers.stdout));
  }
  return spawnGit(cwd, SAFE_GIT_CONFIG, args, { ...env, ...overrides }, input, timeoutMs);
}

/**
 * A git call that reads objects only (cat-file, ls-tree, rev-list: no work tree, so no driver is
 * looked up), its stdout as bytes: blobs are not text. Throws GitError on failure.
 */
export function gitBytes(cwd: string, args: string[], input?: Uint8Array): Buffer {
  let r: ReturnType<typeof Bun.spawnSync>;
  try {
    r = Bun.spawnSync(["git", ...SAFE_GIT_CONFIG.flatMap((c) => ["-c", c]), ...args], {
      cwd,
      env: { ...process.env, ...GIT_ENV },
      stdin: input ?? "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
  } catch (err) {
    throw new GitError(args, null, (err as Error).message);
  }
  if (r.exitCode !== 0) throw new GitError(args, r.exitCode, r.stderr?.toString() ?? "");
  return r.stdout as Buffer;
}

export function git(cwd: string, args: string[], env: Record<string, string> = {}): string {
  const r = gitTry(cwd, args, env);
  if (r.code !== 0) throw new GitError(args, r.code, r.stderr);
  return r.stdout.trim();
}

export function isWorkTree(dir: string): boolean {
  const r = gitTry(dir, ["rev-parse", "--is-inside-work-tree"]);
  return r.code === 0 && r.stdout.trim() === "true";
}

export function currentBranch(dir: string): string | null {
  const r = gitTry(dir, ["symbolic-ref", "--quiet", "--short", "HEAD"]);
  return r.code === 0 ? r.stdout.trim() : null;
}

/** Whether the repository has a commit at all (`git init` without a commit has a branch name, no branch). */
export function hasAnyCommit(dir: string): boolean {
  const r = gitTry(dir, ["rev-list", "-n", "1", "--all"]);
  return r.code === 0 && r.stdout.trim() !== "";
}

/** The ref a branch was made a symbolic ref to (`ref: refs/heads/main` in its file: never loop's doing), else null. */
export function symbolicBranchTarget(dir: string, branch: string): string | null {
  const r = gitTry(dir, ["symbolic-ref", "-q", `refs/heads/${branch}`]);
  return r.code === 0 ? r.stdout.trim() : null;
}

export function branchExists(dir: string, branch: string): boolean {
  return gitTry(dir, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`]).code === 0;
}

export function revParse(dir: string, rev: string): string | null {
  const r = gitTry(dir, ["rev-parse", "--verify", "--quiet", `${rev}^{commit}`]);
  return r.code === 0 ? r.stdout.trim() : null;
}

interface RepoFacts {
  /** The common git folder, absolute. */
  common: string;
  /** Its object folder, absolute. */
  objects: string;
  sha256: boolean;
}

const factsOf = new Map<string, RepoFacts>();

/**
 * The repository's common git folder, object folder and object format, from one git call (loop's own
 * git names them) and remembered for the process: none of them changes while a step runs, and a
 * verify's start asked for them six times. Throws GitError.
 */
export function repoFacts(repo: string): RepoFacts {
  const known = factsOf.get(repo);
  if (known) return known;
  const [common, format, objects] = git(repo, [
    "rev-parse",
    "--path-format=absolute",
    "--git-common-dir",
    "--show-object-format",
    "--git-path",
    "objects",
  ]).split("\n");
  const facts = { common: common!, objects: objects!, sha256: format === "sha256" };
  factsOf.set(repo, facts);
  return facts;
}

/** The repository's common git folder, absolute (loop's own git names it). Throws GitError. */
export function commonGitDir(repo: string): string {
  return repoFacts(repo).common;
}
