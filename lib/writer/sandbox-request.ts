// What a sandbox is built over (lib/supervisor/sandbox.ts), as the step knows it: the checkout loop
// made and the repository's git folder, named by loop's own git. Apart from the launch's machine
// probe, so that the close path (which `loop ctl` and `loop reset` use) loads nothing of a forge.
import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { PRESET_HOMES } from "../definition/runners.ts";
import { commonGitDir } from "../repo/git.ts";
import { StartError } from "../shared/errors.ts";
import type { SandboxRequest } from "../supervisor/sandbox.ts";

/**
 * The PATH a session gets: the step's (sessions inherit the step's environment). An environment
 * given without one (a test's) falls back to this process's.
 */
export function sessionPath(env: Record<string, string | undefined>): string {
  return env.PATH ?? process.env.PATH ?? "";
}

/**
 * A sandbox refused because the checkout it would be built over is not the folder loop made: typed,
 * so a verify refused so is `worktree_replaced` by its type, never its words.
 */
export class SandboxRefusedError extends StartError {}

/**
 * Whether the checkout is the folder loop made, read without following anything: null when it is (a
 * directory, no link, at its place under the worktrees folder), "missing", or what is there instead.
 */
export function checkoutAtPlace(worktree: string): null | "missing" | string {
  const st = lstatSync(worktree, { throwIfNoEntry: false });
  if (!st) return "missing";
  if (st.isSymbolicLink()) return `it is a link to ${readlinkSync(worktree)}`;
  if (!st.isDirectory()) return "it is not a directory";
  const place = join(realpathSync(dirname(worktree)), basename(worktree));
  return realpathSync(worktree) === place ? null : `it resolves to ${realpathSync(worktree)}`;
}

/**
 * What a session, seal, setup or verify's sandbox is built from (lib/supervisor/sandbox.ts): the
 * checkout (a folder loop made, no link) and the repository's common git folder, named by loop's own
 * git. The caller adds the attempt's git folder and what is read-only inside the checkout. A
 * checkout that is not a folder at its place is a SandboxRefusedError (a StartError), and nothing is mounted.
 */
export function sandboxRequest(o: {
  bwrap: string;
  repo: string;
  worktree: string;
  stateRoot: string;
  runner: string;
  writable: string[];
  programs?: string[];
  env: Record<string, string | undefined>;
  configHome?: { dir: string; readOnly: string[] };
}): SandboxRequest {
  const why = checkoutAtPlace(o.worktree);
  if (why !== null) throw new SandboxRefusedError(`no sandbox over ${o.worktree}: it is not the folder loop made (${why})`);
  let commonDir: string;
  try {
    commonDir = commonGitDir(o.repo);
  } catch (err) {
    throw new StartError(`no sandbox over ${o.worktree}: git cannot name the repository's git folder (${(err as Error).message})`);
  }
  return {
    bwrap: o.bwrap,
    worktree: o.worktree,
    stateRoot: o.stateRoot,
    worktrees: dirname(o.worktree),
    commonDir,
    writable: o.writable,
    homes: [...(PRESET_HOMES[o.runner] ?? [])],
    ...(o.configHome ? { configHome: o.configHome } : {}),
    programs: o.programs ?? [],
    env: o.env,
  };
}
