// `loop init`: scaffold loop.json and the state root. Decisions (runner, verify, base) are pure
// functions of what was found, so they are tested with plain data.
import { existsSync, lstatSync, readFileSync, writeFileSync } from "node:fs";
import { basename, delimiter, join } from "node:path";
import { loadDefinition, parseDefinitionText } from "../definition/loop-json.ts";
import { currentBranch, isWorkTree } from "../step/git.ts";
import { statePaths } from "../shared/paths.ts";
import { Store } from "../log/store.ts";
import { materialize } from "../log/materialize.ts";
import { BusyError, UsageError } from "../shared/errors.ts";
import { ensureStateRoot } from "../shared/state-root.ts";
import { type ProjectIdentity, projectOf } from "../log/ownership.ts";
import { pidAlive } from "../shared/process.ts";

export const AGENT_CLIS = ["claude", "codex", "aider"] as const;

export function findOnPath(cmd: string, pathEnv: string | undefined): boolean {
  for (const dir of (pathEnv ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, cmd))) return true;
  }
  return false;
}

export function pickRunner(onPath: (cmd: string) => boolean): string {
  return AGENT_CLIS.find(onPath) ?? "demo";
}

/** A verify command guessed from the files in the project root, or null. */
export function guessVerify(has: (file: string) => boolean, pkgScripts: Record<string, string> | null): string | null {
  if (has("bunfig.toml") || has("bun.lockb") || has("bun.lock")) return "bun test";
  if (pkgScripts?.test) return "npm test";
  if (has("Cargo.toml")) return "cargo test";
  if (has("go.mod")) return "go test ./...";
  if (has("pyproject.toml") || has("pytest.ini")) return "python3 -m pytest";
  if (has("Makefile")) return "make test";
  return null;
}

export function loopNameFrom(dir: string): string {
  const n = basename(dir).toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/-+/g, "-").replace(/^-|-$/g, "");
  return (n || "loop").slice(0, 64);
}

export function initTemplate(o: { name: string; runner: string; base: string; verify: string | null }): string {
  const verify = o.verify ?? "exit 1";
  return `// loop.json: the loop definition (see docs/cli/loop-init.md and schema/loop.schema.json).
// Lines starting with // are comments. \`loop run\` imports this file whenever it changes.
{
  "name": ${JSON.stringify(o.name)},
  "defaults": {
    // The agent CLI that works each item: claude, codex, aider, demo, or a runner defined below.
    "runner": ${JSON.stringify(o.runner)},
    "model": null,
    // An item passes only when this command exits 0 in its worktree.${o.verify ? "" : "\n    // No test command was found: replace \"exit 1\" with yours (it fails every item until then)."}
    "verify": ${JSON.stringify(verify)},
    "maxAttempts": 2,
    "timeouts": { "launch": "5m", "stall": "60m", "verify": "15m" },
    // none: each item's branch is the deliverable. merge: passed items merge into a loop-owned branch.
    "landing": "none"
  },
  "runners": {},
  "control": { "requireStartCommand": false },
  "sessions": { "tmux": false },
  "workspace": { "keepCheckoutOnClose": false, "base": ${JSON.stringify(o.base)} },
  // Work items run one at a time, in this order, once their dependencies passed. For example:
  // { "id": "fix-login", "ref": "github:acme/api#42", "prompt": "Fix the login redirect loop", "dependsOn": [] }
  "items": []
}
`;
}

export interface InitResult {
  root: string;
  stateRoot: string;
  definition: string;
  runner: string;
  verify: string | null;
  base: string;
  created: string[];
  overwrote: boolean;
}

export function initProject(root: string, stateRoot: string, opts: { force: boolean; env: Record<string, string | undefined>; actor: string }): InitResult {
  checkRoot(root);
  const defPath = join(root, "loop.json");
  // lstat: a symlink (dangling or not) is not written through, to wherever it points.
  const found = lstatSync(defPath, { throwIfNoEntry: false });
  const existed = found !== undefined;
  if (existed && !opts.force) throw new UsageError(`${defPath} already exists; use --force to overwrite it`);
  if (existed && !found.isFile()) throw new UsageError(`${defPath} is not a regular file (${found.isSymbolicLink() ? "a symbolic link" : "a directory or special file"}); move it away first`);
  const has = (f: string) => existsSync(join(root, f));
  let scripts: Record<string, string> | null = null;
  try {
    scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts ?? null;
  } catch {
    // No package.json, or one that is not JSON: no npm scripts to guess a verify command from.
  }
  const runner = pickRunner((c) => findOnPath(c, opts.env.PATH));
  const verify = guessVerify(has, scripts);
  const base = currentBranch(root) ?? "main";
  const name = loopNameFrom(root);
  const text = initTemplate({ name, runner, base, verify });
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
    writeFileSync(defPath, text);
    created.unshift(defPath);
    store.bindProject(project, `loop init wrote loop.json naming the loop "${name}"`, opts.actor);
    materialize(stateRoot, store.projection(), store.db);
  } finally {
    store.close();
  }
  return { root, stateRoot, definition: defPath, runner, verify, base, created, overwrote: existed };
}

function checkRoot(root: string): void {
  if (!existsSync(root)) throw new UsageError(`--root ${root} does not exist`);
  if (!isWorkTree(root)) throw new UsageError(`${root} is not inside a git work tree (run \`git init\` first)`);
}

function projectFor(root: string, name: string): ProjectIdentity {
  const project = projectOf(root, name);
  // git said it is a work tree; a .git that cannot be found on disk (GIT_DIR set) cannot be recorded.
  if (!project) throw new UsageError(`cannot find the .git of the repository holding ${root} (is GIT_DIR set?)`);
  return project;
}

export interface AdoptResult {
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
export function adoptStateRoot(root: string, stateRoot: string, opts: { actor: string }): AdoptResult {
  checkRoot(root);
  const def = loadDefinition(root);
  const project = projectFor(root, def.name);
  const store = Store.open(stateRoot, { actor: opts.actor }); // no create: there must be something to adopt
  try {
    const lease = store.acquireLease(60_000, pidAlive);
    if (!lease.ok) throw new BusyError(`a \`loop run\` step holds the lease (pid ${lease.holder.pid} on ${lease.holder.host}); nothing was done, try again`);
    let previous: ProjectIdentity | null;
    let bound: boolean;
    try {
      previous = store.projection().loop.owner;
      bound = store.bindProject(project, "adopted with `loop init --adopt`", opts.actor) !== null;
      if (bound) materialize(stateRoot, store.projection(), store.db);
    } finally {
      store.releaseLease(lease.lease);
    }
    return { schema: "loop/adopt@1", root, stateRoot, project, previous, bound };
  } finally {
    store.close();
  }
}
