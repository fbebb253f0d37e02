// `loop init`: scaffold loop.json and the state root. Decisions (runner, base, protect; the setup and
// verify, lib/decisions/setup-proposal.ts) are pure functions of what was found, so they are tested
// with plain data; this reads what they need and writes what they give.
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { basename, delimiter, dirname, join, relative, sep } from "node:path";
import { loadDefinition, parseDefinitionText } from "../definition/loop-json.ts";
import { currentBranch, git, gitTry, hasAnyCommit, isWorkTree } from "../repo/git.ts";
import { probeSandbox } from "../supervisor/sandbox.ts";
import { VERIFY_PLACEHOLDER } from "../decisions/faults.ts";
import { type Guess, type ProjectFacts, proposeSetup } from "../decisions/setup-proposal.ts";
import { projectFacts, REQUIREMENTS_DIR } from "../repo/project-facts.ts";
import SCHEMA from "../../schema/loop.schema.json";
import { statePaths } from "../shared/paths.ts";
import { Store } from "../log/store.ts";
import { materialize } from "../log/materialize.ts";
import { BusyError, UsageError } from "../shared/errors.ts";
import { requireRootDirectory } from "../shared/cli.ts";
import { ensureStateRoot } from "../shared/state-root.ts";
import { type ProjectIdentity, projectOf } from "../log/ownership.ts";
import { withLease } from "../log/writer.ts";
import type { Lease } from "../log/snapshot.ts";

const AGENT_CLIS = ["claude", "codex", "gemini", "opencode", "aider"] as const;

function findOnPath(cmd: string, pathEnv: string | undefined): boolean {
  for (const dir of (pathEnv ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, cmd))) return true;
  }
  return false;
}

function pickRunner(onPath: (cmd: string) => boolean): string {
  return AGENT_CLIS.find(onPath) ?? "demo";
}

/** Programs whose presence on PATH a setup proposal mentions. */
const SETUP_PROGRAMS = ["npm", "pnpm", "yarn", "bun", "uv", "poetry", "cargo", "go", "python3"] as const;

/** What init reads in the project root for its setup and verify proposal (lib/decisions/setup-proposal.ts). */
function readProjectFacts(root: string, pathEnv: string | undefined): ProjectFacts {
  let names: string[] = [];
  try {
    names = readdirSync(root);
  } catch {
    // An unreadable root was refused before; nothing to guess from.
  }
  try {
    // A real folder only (never followed): its requirements files are read beside the root's.
    if (names.includes(REQUIREMENTS_DIR) && lstatSync(join(root, REQUIREMENTS_DIR)).isDirectory())
      names.push(...readdirSync(join(root, REQUIREMENTS_DIR)).map((n) => `${REQUIREMENTS_DIR}/${n}`));
  } catch {
    // Unreadable: nothing more to guess from.
  }
  const onPath = SETUP_PROGRAMS.filter((c) => findOnPath(c, pathEnv));
  return projectFacts(names, (name, max) => readSmall(join(root, name), max), onPath);
}

function readSmall(path: string, max: number): string | null {
  try {
    const st = lstatSync(path);
    if (!st.isFile() || st.size > max) return null;
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

function loopNameFrom(dir: string): string {
  const n = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-|-$/g, "");
  return (n || "loop").slice(0, 64);
}

/** Where init writes the JSON Schema of loop.json: in the state root, which every machine running the loop has. */
const SCHEMA_FILE = "loop.schema.json";

/** The schema's text, as this version of loop validates loop.json. */
function schemaText(): string {
  return JSON.stringify(SCHEMA, null, 2) + "\n";
}

/** The `$schema` value for loop.json at `root`: a path relative to it ("./.loop/loop.schema.json" by default). */
function schemaRef(root: string, stateRoot: string): string {
  const rel = relative(root, join(stateRoot, SCHEMA_FILE)).split(sep).join("/");
  return rel.startsWith("../") ? rel : `./${rel}`;
}

/**
 * What decides success, as `loop init` sees it in the tracked files (docs/threat-model.md#what-to-protect):
 * the test folders and test files of each ecosystem, the test runners' configuration, CI, and a script
 * the verify names. A proposal: the operator keeps what the verify trusts.
 */
export function proposeProtect(tracked: readonly string[], verify: string | null): string[] {
  const out = new Set<string>();
  const top = new Set(tracked.map((p) => p.split("/")[0]!));
  for (const dir of ["tests", "test", "spec", "__tests__", "e2e", "testdata"]) if (tracked.some((p) => p.startsWith(`${dir}/`))) out.add(`${dir}/**`);
  const base = (p: string) => p.slice(p.lastIndexOf("/") + 1);
  const files: [RegExp, string][] = [
    [/\.(test|spec)\.[cm]?[jt]sx?$/, "**/*.{test,spec}.*"],
    [/^test_[^/]*\.py$|_test\.py$/, "**/{test_*,*_test}.py"],
    [/^conftest\.py$/, "**/conftest.py"],
    [/_test\.go$/, "**/*_test.go"],
    [/_spec\.rb$/, "**/*_spec.rb"],
  ];
  for (const [re, glob] of files) if (tracked.some((p) => re.test(base(p)) && !out.has(`${p.split("/")[0]}/**`))) out.add(glob);
  const configs =
    /^(jest|vitest|playwright|cypress|karma)\.config\.[cm]?[jt]s$|^\.mocharc(\.[a-z]+)?$|^(pytest\.ini|tox\.ini|noxfile\.py|phpunit\.xml(\.dist)?|\.nycrc(\.json)?)$/;
  for (const p of tracked) if (!p.includes("/") && configs.test(p)) out.add(p);
  if (top.has(".github")) out.add(".github/**");
  if (top.has(".gitlab-ci.yml")) out.add(".gitlab-ci.yml");
  // The script a verify runs (`sh scripts/verify.sh`, `bash ci/test.sh`, `./run-tests.sh`).
  const script = verify ? /(?:^|\s)(?:sh|bash|\.\/)\s*([\w./-]+\.sh)\b/.exec(verify)?.[1] : undefined;
  if (script && tracked.includes(script.replace(/^\.\//, ""))) out.add(script.replace(/^\.\//, ""));
  if (verify === "make test" && top.has("Makefile")) out.add("Makefile");
  return [...out];
}

function initTemplate(o: {
  name: string;
  runner: string;
  base: string;
  verify: string | null;
  setup: Guess[];
  schema: string;
  sandbox: "bwrap" | "none";
  protect: string[];
}): string {
  const verify = o.verify ?? VERIFY_PLACEHOLDER;
  const setups = o.setup.filter((g) => g.value !== null);
  const setup = setups.length
    ? `\n    // Run once in each new checkout before its first agent, on the start point's files; what it makes is never committed.\n    // Guessed from ${setups.map((g) => g.from).join(", ")} (docs/cli/loop-init.md#what-init-guesses).\n    "setup": ${JSON.stringify(setups.map((g) => g.value).join(" && "))},`
    : `\n    // No lockfile or manifest seen: no "setup" (a command that installs the dependencies in each new checkout) was guessed.`;
  return `// loop.json: the loop definition (see docs/cli/loop-init.md).
// Lines starting with // are comments. \`loop run\` imports this file whenever it changes.
{
  // For editors: the JSON Schema \`loop init\` wrote into the state root (loop ignores this key).
  "$schema": ${JSON.stringify(o.schema)},
  "name": ${JSON.stringify(o.name)},
  "defaults": {
    // The agent CLI that works each item: claude, codex, gemini, opencode, aider, demo, or a runner defined below.
    "runner": ${JSON.stringify(o.runner)},
    "model": null,
    // An item passes only when this command exits 0 in its worktree.${o.verify ? "" : '\n    // No test command was found: replace "exit 1" with yours (`loop run` launches nothing until then).'}
    "verify": ${JSON.stringify(verify)},
    "maxAttempts": 2,
    "timeouts": { "launch": "5m", "stall": "60m", "verify": "15m" },
    // none: each item's branch is the deliverable. merge: passed items merge into a loop-owned branch.
    // With a "forge" section (docs/forge.md): pr opens a draft PR per item; merge merges each passing
    // item's PR into "base" on the forge when every check is green and LOOP_ALLOW_AUTO_MERGE=1.
    "landing": "none",
    // bwrap: the agent and its verify run under bubblewrap, writing only their checkout (docs/runners.md#the-sandbox).${o.sandbox === "none" ? "\n    // It could not be made on this machine when loop init ran: see the warning it printed (docs/threat-model.md)." : ""}
    "sandbox": ${JSON.stringify(o.sandbox)}
  },
  // Paths no attempt may change: what decides success (docs/loop-json.md#protect). loop init proposes
  // the tests and test configuration it saw; keep what your verify trusts, and add what it runs that
  // an agent could edit (package.json's test script, pyproject.toml's test settings: docs/threat-model.md#what-to-protect).
  "protect": ${JSON.stringify(o.protect)},
  "runners": {},
  // review: nothing launches until you read the review (\`loop run\` prints it) and run \`loop ctl start\`;
  // a change that widens what the loop may do (landing, budgets, network, sandbox, runners) asks again (docs/loop-json.md#control).
  "control": { "requireStartCommand": false, "review": true },
  "sessions": { "tmux": false },
  "workspace": {${setup}
    "keepCheckoutOnClose": false,
    "base": ${JSON.stringify(o.base)}
  },
  // Work items run one at a time, in this order, once their dependencies passed. For example:
  // { "id": "fix-login", "ref": "github:acme/api#42", "prompt": "Fix the login redirect loop", "dependsOn": [] }
  "items": []
}
`;
}

/** A loop a new one at `root` would sit inside, and why it counts. */
interface EnclosingLoop {
  dir: string;
  why: string;
  /** Inside a state root (an item's worktree is): never a place for a loop, whatever the flags. */
  inStateRoot: boolean;
}

/**
 * The loop a new one at `root` would be nested in, or null. Up to the git top level: an ancestor
 * with a loop.json or a state root (.loop/loop.db). All the way up: an ancestor that is a state
 * root itself (holds loop.db): an item's worktree is its own git top level, inside one.
 */
function enclosingLoop(root: string, gitTop: string, exists: (path: string) => boolean = existsSync): EnclosingLoop | null {
  const inRepo = (dir: string) => dir === gitTop || dir.startsWith(gitTop.endsWith(sep) ? gitTop : gitTop + sep);
  for (let dir = dirname(root), prev = root; dir !== prev; prev = dir, dir = dirname(dir)) {
    if (exists(join(dir, "loop.db"))) return { dir, why: `${dir} is the state root of a loop (it holds loop.db)`, inStateRoot: true };
    if (!inRepo(dir)) continue;
    if (exists(join(dir, "loop.json"))) return { dir, why: `${join(dir, "loop.json")} defines a loop`, inStateRoot: false };
    if (exists(join(dir, ".loop", "loop.db"))) return { dir, why: `${join(dir, ".loop")} is a loop's state root`, inStateRoot: false };
  }
  return null;
}

interface InitResult {
  root: string;
  stateRoot: string;
  definition: string;
  /** The JSON Schema written for editors, which loop.json's "$schema" names. */
  schemaFile: string;
  runner: string;
  verify: string | null;
  /** The workspace.setup proposed from a lockfile or manifest, or null (none written). */
  setup: string | null;
  /** What init guessed (setup, verify), from which file, and why; a guess of nothing says so. */
  guesses: Guess[];
  base: string;
  /** What `defaults.sandbox` was written as: "bwrap" where the sandbox works on this machine. */
  sandbox: "bwrap" | "none";
  /** The `protect` entries proposed from the tracked files. */
  protect: string[];
  created: string[];
  overwrote: boolean;
  /** What may need fixing before the first `loop run` (a repository with no commit yet). */
  warnings: string[];
}

export function initProject(
  root: string,
  stateRoot: string,
  opts: { force: boolean; nested?: boolean; env: Record<string, string | undefined>; actor: string },
): InitResult {
  checkRoot(root);
  // Compared as git reports it: both resolved, so a symlinked path to the project still matches.
  const outer = enclosingLoop(realpathSync(root), git(root, ["rev-parse", "--show-toplevel"]));
  if (outer?.inStateRoot)
    throw new UsageError(
      `${root} is inside a loop's state root: ${outer.why}. Item worktrees live there; init the project's own root instead (--nested does not change this)`,
    );
  if (outer && !opts.nested)
    throw new UsageError(
      `${root} is inside another loop: ${outer.why}. Every loop command run in ${root} or below would act on the new loop, not on that one; use --root to init elsewhere, or --nested if you mean it`,
    );
  const defPath = join(root, "loop.json");
  // lstat: a symlink (dangling or not) is not written through, to wherever it points.
  const found = lstatSync(defPath, { throwIfNoEntry: false });
  const existed = found !== undefined;
  if (existed && !opts.force) throw new UsageError(`${defPath} already exists; use --force to overwrite it`);
  if (existed && !found.isFile())
    throw new UsageError(
      `${defPath} is not a regular file (${found.isSymbolicLink() ? "a symbolic link" : "a directory or special file"}); move it away first`,
    );
  const runner = pickRunner((c) => findOnPath(c, opts.env.PATH));
  const facts = readProjectFacts(root, opts.env.PATH);
  const { setup, verify, guesses } = proposeSetup(facts);
  const base = currentBranch(root) ?? "main";
  const name = loopNameFrom(root);
  const tracked = gitTry(root, ["ls-files", "-z", "--full-name"]).stdout.split("\0").filter(Boolean);
  const protect = proposeProtect(tracked, verify);
  // The sandbox where it works (docs/threat-model.md#the-sandbox-by-default): probed now.
  const probe = probeSandbox(opts.env.PATH ?? "");
  const sandbox = probe.ok ? "bwrap" : "none";
  const text = initTemplate({
    name,
    runner,
    base,
    verify,
    setup: guesses.filter((g) => g.key === "setup"),
    schema: schemaRef(root, stateRoot),
    sandbox,
    protect,
  });
  parseDefinitionText(text, defPath); // the template must always be valid
  const project = projectFor(root, name);
  const created: string[] = [];
  const paths = statePaths(stateRoot);
  // The store first: a corrupt one, or one of another project, stops init before anything is
  // written. The loop's name is not compared: init writes the loop.json that names it.
  const newStore = !lstatSync(paths.db, { throwIfNoEntry: false });
  const store = Store.open(stateRoot, { create: true, actor: opts.actor, project, ignoreName: true });
  try {
    if (newStore) created.push(paths.db);
    // The state root's .gitignore right after the store: whatever fails later, git never sees it.
    if (!existsSync(paths.gitignore)) created.push(...ensureStateRoot(stateRoot, { gitignore: true }));
    // Rewritten by every init: the schema of the loop that ran it.
    const schemaPath = join(stateRoot, SCHEMA_FILE);
    if (!existsSync(schemaPath)) created.push(schemaPath);
    writeFileSync(schemaPath, schemaText());
    writeFileSync(defPath, text);
    created.unshift(defPath);
    store.bindProject(project, `loop init wrote loop.json naming the loop "${name}"`, opts.actor);
    materialize(stateRoot, store);
  } finally {
    store.close();
  }
  const warnings: string[] = [];
  if (!probe.ok)
    warnings.push(
      `the sandbox cannot be made on this machine (${probe.message}), so loop.json says "sandbox": "none": each agent then runs as your user, can write loop's database, every branch and your checkout, and read every file and process of that user (docs/threat-model.md). Install bubblewrap (and allow unprivileged user namespaces for a user other than root), then set "sandbox": "bwrap"`,
    );
  // Nothing on PATH to do the work: the items' prompts would go to the built-in stand-in.
  if (runner === "demo")
    warnings.push(
      `no agent CLI (${AGENT_CLIS.join(", ")}) is on PATH, so loop.json says "runner": "demo": the built-in demo agent, a stand-in that does no real work with your prompts. Install one and set "runner" in loop.json. Nothing launches until you start the loop: \`loop run\` prints its review (the items, their runner and model, the landing, the sandbox and network, the budgets and the most it can spend) and \`loop ctl start\` starts it`,
    );
  // `git init` alone names a branch that no commit has made yet: every launch would pause on it.
  if (!hasAnyCommit(root))
    warnings.push(
      `the repository has no commit yet: "workspace.base" ${JSON.stringify(base)} is made by its first commit, and \`loop run\` launches nothing until then (commit loop.json, or \`git commit --allow-empty -m "initial commit"\`)`,
    );
  return {
    root,
    stateRoot,
    definition: defPath,
    schemaFile: join(stateRoot, SCHEMA_FILE),
    runner,
    verify,
    setup,
    guesses,
    base,
    sandbox,
    protect,
    created,
    overwrote: existed,
    warnings,
  };
}

function checkRoot(root: string): void {
  requireRootDirectory(root);
  if (!isWorkTree(root)) throw new UsageError(`${root} is not inside a git work tree (run \`git init\` first)`);
}

function projectFor(root: string, name: string): ProjectIdentity {
  const project = projectOf(root, name);
  // git said it is a work tree; a .git that cannot be found on disk (GIT_DIR set) cannot be recorded.
  if (!project) throw new UsageError(`cannot find the .git of the repository holding ${root} (is GIT_DIR set?)`);
  return project;
}

interface AdoptResult {
  schema: "loop/adopt@1";
  root: string;
  stateRoot: string;
  /** The project the store belongs to now. */
  project: ProjectIdentity;
  /** What it belonged to before (null: nothing was recorded). */
  previous: ProjectIdentity | null;
  /** false when it already belonged to this project: nothing was written. */
  bound: boolean;
}

/**
 * `loop init --adopt`: bind an existing state root to this project, for a repository that was moved
 * or renamed on disk, or a loop renamed in loop.json. Recorded as a store_bound event naming the
 * previous owner; loop.json is read (for the loop's name), never written. Under the lease.
 */
export async function adoptStateRoot(root: string, stateRoot: string, opts: { actor: string }): Promise<AdoptResult> {
  checkRoot(root);
  const def = loadDefinition(root);
  const project = projectFor(root, def.name);
  const store = Store.open(stateRoot, { actor: opts.actor }); // no create: there must be something to adopt
  try {
    const busy = (h: Lease) => new BusyError(`a \`loop run\` step holds the lease (pid ${h.pid} on ${h.host}); nothing was done, try again`);
    return await withLease(store, { actor: opts.actor, ttlMs: 60_000, busy }, (w) => {
      const previous = store.projection().loop.owner;
      const bound = store.bindProject(project, "adopted with `loop init --adopt`", opts.actor) !== null;
      if (bound) w.materialize();
      return { schema: "loop/adopt@1" as const, root, stateRoot, project, previous, bound };
    });
  } finally {
    store.close();
  }
}
