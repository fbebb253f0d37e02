// The machine a launch runs on, probed: where a runner's program resolves, whether the start point
// exists, who the step runs as, whether git can commit for the agent, whether aider can pick a
// model. lib/decisions/faults.ts judges what is probed here. Also what a definition import can check
// early (the same probes, reported as warnings), and the repository's info/exclude, which keeps
// the agents' own files out of item branches.
import { autoMergeAllowed, autoMergeSentence } from "../forge/auto-merge.ts";
import { accessSync, constants, existsSync, mkdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { readRegularFile, writeFileAtomic } from "../shared/fsutil.ts";
import { homedir } from "node:os";
import { isAbsolute, join, relative, resolve } from "node:path";
import type { NormDefinition } from "../definition/normalized.ts";
import { buildRunnerCommand, PRESETS } from "../definition/runners.ts";
import { probeProgramInSandbox, type SandboxProbe } from "../supervisor/sandbox.ts";
import { branchExists, gitTry, hasAnyCommit, revParse } from "../repo/git.ts";
import { sessionPath } from "../writer/sandbox-request.ts";
import { probeScopeRequirement } from "../supervisor/scope.ts";
import {
  aiderCanChooseModel,
  type AiderModelFacts,
  type EnvironmentFault,
  isVerifyPlaceholder,
  launchFault,
  type ProgramFact,
  sandboxStartFault,
  VERIFY_PLACEHOLDER,
} from "../decisions/faults.ts";

/**
 * Where `program` resolves: a bare name on `PATH`, a path relative to `cwd` (the worktree; null
 * while it does not exist: not checkable yet), or an absolute path.
 */
export function resolveProgram(program: string, o: { PATH: string; cwd: string | null }): ProgramFact {
  if (!program.includes("/")) {
    const found = Bun.which(program, { PATH: o.PATH });
    return found ? { state: "found", path: found } : { state: "missing", path: null };
  }
  if (!isAbsolute(program) && o.cwd === null) return { state: "unchecked" };
  const path = resolve(o.cwd ?? "/", program);
  if (!existsSync(path)) return { state: "missing", path };
  try {
    if (!statSync(path).isFile()) return { state: "not_executable", path };
    accessSync(path, constants.X_OK);
  } catch {
    return { state: "not_executable", path };
  }
  return { state: "found", path };
}

/** The program a runner starts (argv[0]), without building a real handoff. */
function runnerProgram(def: Pick<NormDefinition, "runners">, runner: string, o: { workdir: string; handoffPath: string; demoArgv: string[] }): string {
  const cmd = buildRunnerCommand(
    runner,
    { item: "x", attempt: 1, prompt: "", handoffPath: o.handoffPath, workdir: o.workdir, model: null, sessionId: "" },
    def.runners,
    o.demoArgv,
  );
  return cmd.argv[0]!;
}

/** git's verdict on the identity commits would get (`git var` fails exactly where `git commit` would). */
function gitIdentity(repo: string): { ok: true } | { ok: false; detail: string } {
  for (const v of ["GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"]) {
    const r = gitTry(repo, ["var", v]);
    if (r.code !== 0) {
      const line = r.stderr.split("\n").find((l) => /fatal|unable|empty ident/i.test(l)) ?? r.stderr.trim().split("\n")[0] ?? "";
      return { ok: false, detail: line.trim() || `git var ${v} failed` };
    }
  }
  return { ok: true };
}

function readSmall(path: string): string | null {
  try {
    if (!statSync(path).isFile() || statSync(path).size > 256 * 1024) return null;
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** The files aider reads settings and keys from, besides its environment (its docs: home, then the repository). */
function aiderFiles(o: { repo: string; home: string }): Record<string, string | null> {
  const paths = [
    join(o.home, ".aider.conf.yml"),
    join(o.home, ".env"),
    join(o.home, ".aider", "oauth-keys.env"),
    join(o.repo, ".aider.conf.yml"),
    join(o.repo, ".env"),
  ];
  return Object.fromEntries(paths.map((p) => [p, readSmall(p)]));
}

interface LaunchProbe {
  runner: string;
  /** sessions.tmux: the session needs tmux. */
  tmux: boolean;
  model: string | null;
  /** The item's verify command (false: none). */
  verify: string | false;
  /** The repository's top level. */
  repo: string;
  worktree: string;
  branch: string;
  startPoint: string;
  handoffPath: string;
  runners: NormDefinition["runners"];
  demoArgv: string[];
  env: Record<string, string | undefined>;
  /** What probeSandbox found, when the item runs in the sandbox; null otherwise. */
  sandbox?: SandboxProbe | null;
  /** Hidden in the sandbox, as in a session's: the program probed there must not need them. */
  stateRoot?: string;
  worktrees?: string;
}

/** Probe the machine for one launch and judge it; null when nothing stands in the way. */
export function probeLaunchFault(o: LaunchProbe): EnvironmentFault | null {
  const program = runnerProgram({ runners: o.runners }, o.runner, { workdir: o.worktree, handoffPath: o.handoffPath, demoArgv: o.demoArgv });
  const PATH = sessionPath(o.env);
  const preset = Object.hasOwn(PRESETS, o.runner);
  // A retry reuses its branch: where it once started no longer matters. (One git call when all is
  // well: the branch is asked about only when the start point is missing.)
  const startPointExists = revParse(o.repo, o.startPoint) !== null ? true : branchExists(o.repo, o.branch) ? null : false;
  let aiderModel: AiderModelFacts | null = null;
  if (o.runner === "aider") aiderModel = { model: o.model, env: o.env, files: aiderFiles({ repo: o.repo, home: o.env.HOME || homedir() }) };
  const programFact = resolveProgram(program, { PATH, cwd: existsSync(o.worktree) ? o.worktree : null });
  const fault = launchFault({
    runner: o.runner,
    program,
    programFact,
    PATH,
    tmux: o.tmux ? resolveProgram("tmux", { PATH, cwd: null }) : null,
    bwrap: o.sandbox ?? null,
    scope: probeScopeRequirement(o.env),
    startPoint: o.startPoint,
    startPointExists,
    hasCommits: startPointExists === false ? hasAnyCommit(o.repo) : null,
    verify: o.verify,
    uid: typeof process.getuid === "function" ? process.getuid() : null,
    sandbox: { IS_SANDBOX: o.env.IS_SANDBOX, CLAUDE_CODE_BUBBLEWRAP: o.env.CLAUDE_CODE_BUBBLEWRAP },
    aiderModel,
    geminiKey: o.runner === "gemini" ? Boolean(o.env.GEMINI_API_KEY) : null,
    // Only for the agent presets: their agents commit. A command runner may not, and loop commits
    // what an agent leaves with an identity of its own.
    gitIdentity: preset ? gitIdentity(o.repo) : null,
  });
  if (fault || !preset || !o.sandbox?.ok || programFact.state !== "found") return fault;
  // Last, and only for a preset (its --version is known to be harmless): the program as it runs in the sandbox.
  const failed = sandboxStart({
    bwrap: o.sandbox.bwrap,
    path: programFact.path,
    PATH,
    env: o.env,
    hide: [o.stateRoot, o.worktrees].filter((p): p is string => Boolean(p)),
    stateRoot: o.stateRoot,
  });
  return failed === null ? null : sandboxStartFault({ runner: o.runner, program, path: programFact.path, failed });
}

/** Where the programs that ran in the sandbox are remembered (docs/state.md): each is probed once per version. */
const SANDBOX_STARTS_FILE = "sandbox-starts.json";

/**
 * Why `path --version` does not run in the sandbox, or null when it does. A success is remembered
 * in the state root under the program's files as they are now (path, size, modification time of
 * each), so a launch pays the probe only when the program changed.
 */
function sandboxStart(o: {
  bwrap: string;
  path: string;
  PATH: string;
  env: Record<string, string | undefined>;
  hide: string[];
  stateRoot?: string;
}): string | null {
  const programs = programFiles(o.path);
  const key = JSON.stringify([
    o.bwrap,
    o.hide,
    ...programs.map((p) => {
      try {
        const st = statSync(p);
        return [p, st.size, st.mtimeMs];
      } catch {
        return [p, null];
      }
    }),
  ]);
  const file = o.stateRoot ? join(o.stateRoot, SANDBOX_STARTS_FILE) : null;
  const read = file ? readRegularFile(file, { maxBytes: 1 << 20, noLinks: true }) : null;
  let known: Record<string, string> = {};
  try {
    if (read?.kind === "ok") known = JSON.parse(read.bytes.toString("utf8")) as Record<string, string>;
  } catch {
    known = {}; // unreadable: probed again, and written afresh
  }
  if (typeof known !== "object" || known === null || Array.isArray(known)) known = {};
  if (typeof known[key] === "string") return null;
  const env: Record<string, string> = { PATH: o.PATH, TMPDIR: "/tmp" };
  for (const k of ["HOME", "LANG", "USER"]) if (o.env[k]) env[k] = o.env[k]!;
  const r = probeProgramInSandbox({ bwrap: o.bwrap, program: o.path, programs, hide: o.hide, env });
  if (!r.ok) return r.message;
  if (file) {
    // The newest few: a machine has a handful of runner versions.
    const kept = Object.entries(known)
      .sort((a, b) => String(b[1]).localeCompare(String(a[1])))
      .slice(0, 15);
    try {
      writeFileAtomic(file, JSON.stringify(Object.fromEntries([[key, new Date().toISOString()], ...kept])) + "\n", { sync: false });
    } catch {
      // Not remembered (a full disk, a read-only state root): the next launch probes again, and a
      // full disk is the step's to find and say (lib/step/disk-full.ts), not the probe's.
    }
  }
  return null;
}

/**
 * What can be checked when loop.json is imported, as warnings: the base branch exists, and each
 * runner the items use resolves on this step's PATH; and, for landing "merge" with a forge, what
 * it will do to the repository. Warnings, not definition errors: cron's PATH
 * is not the importing shell's, and a branch can be created after the file was written.
 */
export function definitionWarnings(o: { def: NormDefinition; repo: string; env: Record<string, string | undefined>; demoArgv: string[] }): string[] {
  const out: string[] = [];
  // Not a fault: said when such a loop.json is imported, so nobody learns it from a merged PR.
  if (o.def.forge && o.def.landing === "merge")
    out.push(`loop.json: ${autoMergeSentence({ repo: o.def.forge.repo, base: o.def.base, set: autoMergeAllowed(o.env), provider: o.def.forge.provider })}`);
  if (revParse(o.repo, o.def.base) === null && !(o.def.landing === "merge" && branchExists(o.repo, o.def.target)))
    out.push(
      hasAnyCommit(o.repo)
        ? `loop.json: "workspace.base" ${JSON.stringify(o.def.base)} is not a branch or commit of ${o.repo}: launches will pause the loop until it exists`
        : `the repository ${o.repo} has no commit yet: "workspace.base" ${JSON.stringify(o.def.base)} is made by its first commit, and launches will pause the loop until then`,
    );
  const placeholder = o.def.items.filter((it) => isVerifyPlaceholder(it.verify)).map((it) => it.id);
  if (placeholder.length)
    out.push(
      `loop.json: ${placeholder.length === 1 ? "item" : "items"} ${placeholder.slice(0, 3).join(", ")}${placeholder.length > 3 ? `, … ${placeholder.length} items` : ""} still ${placeholder.length === 1 ? "has" : "have"} the verify placeholder ${JSON.stringify(VERIFY_PLACEHOLDER)} that \`loop init\` writes: launching ${placeholder.length === 1 ? "it" : "them"} will pause the loop until "verify" is set`,
    );
  const PATH = sessionPath(o.env);
  const used = [...new Set(o.def.items.map((it) => it.runner))];
  for (const runner of used) {
    const items = o.def.items.filter((it) => it.runner === runner).map((it) => it.id);
    const whose = `runner ${JSON.stringify(runner)} (used by ${items.slice(0, 3).join(", ")}${items.length > 3 ? `, … ${items.length} items` : ""})`;
    // Every session that can reach a model API runs behind its gateway (docs/threat-model.md#the-gateway): a
    // command runner is metered and capped there only if it is pointed at it by the variables it is given.
    if (Object.hasOwn(o.def.runners, runner))
      out.push(
        `loop.json: ${whose}: a command runner's model requests go through its session's gateway (metered, capped, loop's key held there) only if its program honours ANTHROPIC_BASE_URL/OPENAI_BASE_URL and the stand-in ANTHROPIC_API_KEY/OPENAI_API_KEY it is given; one that reaches its provider another way, with a key of its own, is neither metered nor capped by loop`,
      );
    if (runner === "codex" && !o.env.OPENAI_API_KEY && o.def.items.some((it) => it.runner === "codex" && it.network === undefined))
      out.push(
        `loop.json: ${whose}: loop's environment has no OPENAI_API_KEY, so codex runs on its own sign-in (a ChatGPT account), outside the gateway: its spend is what it prints at each turn's end, and no budget stops it inside a turn`,
      );
    // A program named through a placeholder ({workdir}/agent) is known only at launch.
    if (Object.hasOwn(o.def.runners, runner) && /\{[a-z_]+\}/.test(o.def.runners[runner]!.command[0] ?? "")) continue;
    let program: string;
    try {
      program = runnerProgram(o.def, runner, { workdir: "/nonexistent-worktree", handoffPath: "/nonexistent-worktree/handoff.md", demoArgv: o.demoArgv });
    } catch {
      continue; // an unknown runner is a definition error, reported as one
    }
    const fact = resolveProgram(program, { PATH, cwd: null });
    if (fact.state === "missing")
      out.push(
        `loop.json: ${whose}: program ${JSON.stringify(program)} is not found${fact.path ? ` (${fact.path})` : ` on this PATH (${PATH || "empty"})`}: launching it will pause the loop`,
      );
    else if (fact.state === "not_executable")
      out.push(`loop.json: ${whose}: program ${JSON.stringify(program)} (${fact.path}) is not executable: launching it will pause the loop`);
  }
  // aider without a model or key would wait for a browser: say so now rather than at its turn.
  if (used.includes("aider"))
    for (const it of o.def.items.filter((i) => i.runner === "aider" && !i.model))
      if (!aiderCanChooseModel({ model: null, env: o.env, files: aiderFiles({ repo: o.repo, home: o.env.HOME || homedir() }) })) {
        out.push(`loop.json: item ${it.id}: runner "aider" has no model and finds no provider key: launching it will pause the loop`);
        break;
      }
  return out;
}

/** The repository's common git directory: `<top>/.git` when it is one (no git call), else git's answer (a linked worktree). */
function commonGitDir(repo: string): string {
  const dotGit = join(repo, ".git");
  try {
    if (statSync(dotGit).isDirectory()) return dotGit;
  } catch {
    // no .git at the top: ask git
  }
  const r = gitTry(repo, ["rev-parse", "--git-common-dir"]);
  if (r.code !== 0) throw new Error(`cannot find the repository's git directory: ${r.stderr.trim()}`);
  return resolve(repo, r.stdout.trim());
}

/** Patterns info/exclude gets: the agents' own files, never part of an item's work. */
const AGENT_EXCLUDES = [".aider*"] as const;
const EXCLUDE_MARK = "# loop: files of the agents loop runs (and its state root), kept out of item branches";

/**
 * Keep the agents' files (aider's repository map `.aider.tags.cache.v4/`, its histories) and the
 * state root out of every checkout of the repository: the close path commits what an agent left
 * untracked, and these must not be part of the item's work. info/exclude is the repository's own,
 * untracked ignore file, shared by all its worktrees. Idempotent; returns what it added.
 */
export function ensureAgentExcludes(o: { repo: string; stateRoot: string }): string[] {
  const file = join(commonGitDir(o.repo), "info", "exclude");
  // Never read or written through a link (the agent can write the git dir); such a file is left as it is.
  const found = readRegularFile(file, { noLinks: true });
  if (found.kind === "error") throw new Error(`${file} was not changed: ${found.message}`);
  const text = found.kind === "ok" ? found.bytes.toString("utf8") : "";
  const patterns: string[] = [...AGENT_EXCLUDES];
  const rel = relative(o.repo, o.stateRoot);
  if (rel && !rel.startsWith("..") && !isAbsolute(rel)) patterns.push(`/${rel.split("\\").join("/")}/`);
  const have = new Set(text.split("\n").map((l) => l.trim()));
  const missing = patterns.filter((p) => !have.has(p));
  if (missing.length === 0) return [];
  const block = `${text && !text.endsWith("\n") ? "\n" : ""}${have.has(EXCLUDE_MARK) ? "" : `${EXCLUDE_MARK}\n`}${missing.join("\n")}\n`;
  mkdirSync(resolve(file, ".."), { recursive: true });
  writeFileAtomic(file, text + block);
  return missing;
}

/**
 * What a program needs to start: itself (as found and as resolved) and, for one npm installed, the
 * node_modules folder it is in. An npm launcher (codex's bin/codex.js) runs a native binary from a
 * package beside its own, and under a hidden folder (/tmp) only what is bound is there
 * (docs/runners.md#the-sandbox).
 */
export function programFiles(path: string): string[] {
  let real = path;
  try {
    real = realpathSync(path);
  } catch {
    // As found.
  }
  const out = new Set([path, real]);
  for (const p of [path, real]) {
    const at = p.indexOf("/node_modules/");
    if (at >= 0) out.add(p.slice(0, at + "/node_modules".length));
  }
  return [...out];
}
