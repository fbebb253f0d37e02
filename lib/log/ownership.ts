// Which project a state root belongs to. A store records its project (the git repository, the
// loop's folder in it and the loop's name) in a `store_bound` event; every writing command says
// which project it acts for, and a store of another project is refused before anything changes
// (`foreign_store`, exit 2). Read verbs report a mismatch as a finding. docs/state.md#ownership.
//
// The repository is found on disk, not by asking git: an observing tick must not pay for a process.
import { existsSync, lstatSync, realpathSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { readTextOrNull } from "../shared/fsutil.ts";
import type { Projection } from "./projection.ts";
import { StoreError } from "../shared/errors.ts";
import { dbPath, findLoopRow, readProjection, withReadSnapshot } from "./snapshot.ts";

export interface ProjectIdentity {
  /** The repository's top level (the work tree holding the project), real path. */
  repo: string;
  /** The repository's common git directory (shared by its linked worktrees), real path. */
  gitDir: string;
  /** The project root (where loop.json is) relative to `repo`; "." for the top level. */
  root: string;
  /** The loop's name (`loop.json` "name"), or null where the writer cannot tell (then it is not compared). */
  name: string | null;
}

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** The git directory a `.git` file points to (a linked worktree or a submodule), then its common dir. */
function gitDirFromFile(dotGit: string): string | null {
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(readTextOrNull(dotGit, { maxBytes: 4096 }) ?? "");
  if (!m) return null;
  const own = resolve(dirname(dotGit), m[1]!);
  const common = readTextOrNull(join(own, "commondir"), { maxBytes: 4096 })?.trim();
  return common ? resolve(own, common) : own;
}

/** The repository holding `dir` (the nearest `.git` upwards), or null when there is none. */
export function findRepository(dir: string): { repo: string; gitDir: string } | null {
  for (let d = resolve(dir); ; d = dirname(d)) {
    const dotGit = join(d, ".git");
    let st;
    try {
      st = lstatSync(dotGit, { throwIfNoEntry: false });
      if (st?.isSymbolicLink()) st = existsSync(dotGit) ? lstatSync(realpathSync(dotGit)) : undefined;
    } catch {
      st = undefined;
    }
    if (st?.isDirectory()) return { repo: real(d), gitDir: real(dotGit) };
    if (st?.isFile()) {
      const gitDir = gitDirFromFile(dotGit);
      if (gitDir) return { repo: real(d), gitDir: real(gitDir) };
    }
    if (dirname(d) === d) return null;
  }
}

/** The project `root` is, with the loop's name when known; null when root is in no git repository. */
export function projectOf(root: string, name: string | null): ProjectIdentity | null {
  const r = findRepository(root);
  if (!r) return null;
  return { repo: r.repo, gitDir: r.gitDir, root: relative(r.repo, real(root)) || ".", name };
}

function describe(p: ProjectIdentity): string {
  const where = p.root === "." ? p.repo : join(p.repo, p.root);
  return p.name ? `the loop "${p.name}" at ${where}` : `the loop at ${where}`;
}

const POINT_IT = "point --state-root (or LOOP_STATE_ROOT) at this project's own state root (by default <root>/.loop), or unset LOOP_STATE_ROOT";
const POINT_IT_SENTENCE = `P${POINT_IT.slice(1)}`;
const ADOPT = "`loop init --adopt`";
/** The other fix, when the state root is right and the project is what moved (a restore on a new machine, a copied checkout). */
const OR_ADOPT = `If this project is the one the state root was made for, moved or restored here, run ${ADOPT} here to bind the state root to it (docs/state.md#moving-a-project)`;

/**
 * Whether the loop may still be renamed freely (noWorkYet), or how to find out: asked only when the
 * names differ, since answering reads every item.
 */
type RenameFree = boolean | (() => boolean);

/**
 * Why a writer acting for `current` may not use a store bound to `recorded`, or null when it may.
 * A store bound to nothing (new, or from a loop before ownership was recorded) is anyone's: its
 * first write binds it. Names are compared only when both are known, and only once the loop has
 * done work (`renameFree` false): renaming the loop in loop.json right after `loop init`, before
 * anything ran, is an edit, not another project, and the next write rebinds the store (`rebind`).
 */
export function ownershipProblem(
  recorded: ProjectIdentity | null,
  current: ProjectIdentity | null,
  stateRoot: string,
  { renameFree = false }: { renameFree?: RenameFree } = {},
): string | null {
  if (!recorded) return null;
  const whose = `the state root ${stateRoot} belongs to ${describe(recorded)}`;
  if (!current)
    return `${whose}, and this command is not run for a project in a git repository (run it from the project, or pass --root <project>); nothing was done`;
  if (recorded.gitDir !== current.gitDir) {
    // The repository it was made for is gone from where it was: moved or renamed, most likely.
    if (!existsSync(recorded.gitDir))
      return `${whose}, but that repository is no longer there (${recorded.gitDir} is gone); nothing was done. If you moved or renamed it to ${current.repo}, run ${ADOPT} there to bind the state root to it (docs/state.md#moving-a-project); otherwise ${POINT_IT}`;
    return `${whose}, not to ${describe(current)}; nothing was done. ${POINT_IT_SENTENCE}. ${OR_ADOPT}`;
  }
  if (recorded.root !== current.root)
    return `${whose}, another loop of the same repository, not to ${describe(current)}; nothing was done. ${POINT_IT_SENTENCE}. ${OR_ADOPT}`;
  if (recorded.name !== null && current.name !== null && recorded.name !== current.name && !(typeof renameFree === "function" ? renameFree() : renameFree))
    return `${whose}, but loop.json here names the loop "${current.name}"; nothing was done. If you renamed the loop, run ${ADOPT} to bind the state root to the new name; otherwise ${POINT_IT}`;
  return null;
}

/** Throws `foreign_store` (exit 2) when a writer acting for `current` may not use the store. */
export function assertOwnership(
  recorded: ProjectIdentity | null,
  current: ProjectIdentity | null,
  stateRoot: string,
  o: { renameFree?: RenameFree } = {},
): void {
  const problem = ownershipProblem(recorded, current, stateRoot, o);
  if (problem) throw new StoreError("foreign_store", problem);
}

/** Nothing has run yet: no item was ever launched (in any epoch) and none is settled. */
export function noWorkYet(p: Projection): boolean {
  return Object.values(p.items).every(
    (it) => it.epoch === 0 && it.attempts.length === 0 && it.session === null && (it.status === "pending" || it.status === "withdrawn"),
  );
}

/**
 * The binding a write must record first, if any: a store bound to nothing, or a loop renamed before
 * any work. `loopName` is the name the log knows; `renameFree` says whether nothing ran yet.
 */
export function rebind(
  recorded: ProjectIdentity | null,
  current: ProjectIdentity | null,
  o: { loopName: string | null; renameFree: () => boolean },
): { project: ProjectIdentity; reason: string } | null {
  if (!current) return null;
  if (!recorded)
    return {
      project: { ...current, name: current.name ?? o.loopName },
      reason: "the store had no project recorded (made by an older loop); bound on its first write",
    };
  if (current.name !== null && recorded.name !== null && current.name !== recorded.name && o.renameFree())
    return { project: current, reason: `loop.json renamed the loop "${recorded.name}" to "${current.name}" before anything ran` };
  return null;
}

/** True when two identities name the same project and name (a binding would change nothing). */
export function sameBinding(a: ProjectIdentity | null, b: ProjectIdentity): boolean {
  return a !== null && a.repo === b.repo && a.gitDir === b.gitDir && a.root === b.root && a.name === b.name;
}

/** The owner recorded in a projection's loop row, read without the reducer (read verbs, pre-checks). */
function recordedOwner(body: string): ProjectIdentity | null {
  return (JSON.parse(body) as { loop: { owner?: ProjectIdentity | null } }).loop.owner ?? null;
}

/**
 * Refuse, before anything is created under it, a state root whose store belongs to another
 * project: for a writer that touches the state root before it opens the store (`loop run --watch`
 * writes run.pid). Reads only; a missing store, or one a writer must upgrade first, is left to the
 * writer's own open (Store.open checks again).
 */
export function refuseForeignStateRoot(stateRoot: string, current: ProjectIdentity | null): void {
  if (!existsSync(dbPath(stateRoot))) return;
  try {
    withReadSnapshot(stateRoot, ({ db }) => {
      const row = findLoopRow(db);
      // Inside the snapshot: whether anything ran is read (every item) only when the names differ.
      assertOwnership(row ? recordedOwner(row.body) : null, current, stateRoot, { renameFree: () => !row || noWorkYet(readProjection(db)) });
    });
  } catch (err) {
    if (err instanceof StoreError && err.code === "outdated_store") return;
    throw err;
  }
}

/** A read verb's finding when the store belongs to another project than the one it runs for. */
export function ownershipFinding(
  recorded: ProjectIdentity | null,
  current: ProjectIdentity | null,
  stateRoot: string,
  o: { renameFree?: RenameFree } = {},
): { code: "foreign_store"; message: string } | null {
  // A read verb run from outside any repository (checking a backup from /tmp) has no project to compare.
  if (!recorded || !current) return null;
  const problem = ownershipProblem(recorded, current, stateRoot, o);
  return problem ? { code: "foreign_store", message: problem.replace("; nothing was done", "") } : null;
}

/** A store_bound payload: the identity's fields only, whatever else the object carries. */
export function bindPayload(project: ProjectIdentity, previous: ProjectIdentity | null, reason: string) {
  const { repo, gitDir, root, name } = project;
  return { project: { repo, gitDir, root, name }, previous, reason };
}
