// `loop init`: scaffold loop.json and the state root. Decisions (runner, verify, base) are pure
// functions of what was found, so they are tested with plain data.
import { existsSync, lstatSync, readFileSync, writeFileSync } from "node:fs";
import { basename, delimiter, join } from "node:path";
import { parseDefinitionText } from "../definition/loop-json.ts";
import { currentBranch, isWorkTree } from "../step/git.ts";
import { statePaths } from "../shared/paths.ts";
import { Store } from "../log/store.ts";
import { materialize } from "../log/materialize.ts";
import { UsageError } from "../shared/errors.ts";

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
  if (!existsSync(root)) throw new UsageError(`--root ${root} does not exist`);
  if (!isWorkTree(root)) throw new UsageError(`${root} is not inside a git work tree (run \`git init\` first)`);
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
  const text = initTemplate({ name: loopNameFrom(root), runner, base, verify });
  parseDefinitionText(text, defPath); // the template must always be valid
  const created: string[] = [];
  const paths = statePaths(stateRoot);
  // The store first: a corrupt one stops init before anything is written.
  const newStore = !existsSync(paths.db);
  const store = Store.open(stateRoot, { create: true, actor: opts.actor });
  try {
    if (newStore) created.push(paths.db);
    // The state root's .gitignore right after the store: whatever fails later, git never sees it.
    if (!existsSync(paths.gitignore)) {
      writeFileSync(paths.gitignore, "# loop's state root: never commit it\n*\n");
      created.push(paths.gitignore);
    }
    writeFileSync(defPath, text);
    created.unshift(defPath);
    materialize(stateRoot, store.projection(), store.db);
  } finally {
    store.close();
  }
  return { root, stateRoot, definition: defPath, runner, verify, base, created, overwrote: existed };
}
