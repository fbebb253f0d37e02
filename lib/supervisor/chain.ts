// The chained step (docs/cli/loop-run.md#chained-steps): when a session's agent or an attempt's
// verify command ends, its wrapper starts the next `loop run` at once instead of leaving it to the
// next cron minute. That step takes the lease like any other: held, it does nothing (exit 75) and
// cron stays the backstop. What to run comes in the launch record, written by the step that started
// the wrapper (lib/step/chain.ts), but for its environment, which is loop's and so not the agent's
// to read: it is handed to the wrapper privately (session-wrapper.ts WrapperPrivate), never written
// in the launch record in the session folder; the wrapper adds nothing of its own environment. The step starts in a session of its own (setsid) and carries no session mark, so the
// close path it runs over this very session does not end it; in a systemd scope it is not started
// at all (the close path ends the scope's whole cgroup, which it would be in).
import { closeSync, constants, existsSync, openSync } from "node:fs";
import { join } from "node:path";
import { SCOPE_FILES, type ScopeRole } from "./scope.ts";

/** What the wrapper runs when its process ends: the launching step's `loop run`, its environment, where its output goes. */
export interface ChainRecord extends LaunchChain {
  /** Loop's environment without loop's secrets (the forge token, GitHub's variables) and without a session mark. */
  env: Record<string, string>;
}

/** A chained step as its launch record holds it: no environment (that goes to the wrapper privately). */
export interface LaunchChain {
  argv: string[];
  cwd: string;
  /** The chained step's stderr (and stdout: `--quiet` prints nothing that is well), appended to. */
  log: string;
}

/** The file a chained step's messages go to, in the attempt's session folder. */
export const CHAIN_LOG = "chain.log";

/** The exit code of a step that found the lease held (docs/cli/loop-run.md#exit-codes). */
const BUSY = 75;
/**
 * Pauses before a chained step that found the lease held is tried again: most often the step that
 * started this very process still holds it for a moment (an agent that exits at once). Then cron.
 */
const CHAIN_RETRY_MS = [250, 1000, 3000];

/**
 * Run the chained step: started detached, tried again after a pause while it finds the lease held
 * (CHAIN_RETRY_MS), never more. Whatever else it exits with is the step's own business (its
 * messages are in the chain log). The step this runs may end this wrapper (the close path): its
 * own process is in a session of its own and goes on.
 */
export async function runChain(chain: ChainRecord, dir: string, role: ScopeRole): Promise<void> {
  for (let i = 0; ; i++) {
    const child = startChain(chain, dir, role);
    if (child === null || (await child.exited) !== BUSY || i >= CHAIN_RETRY_MS.length) return;
    await Bun.sleep(CHAIN_RETRY_MS[i]!);
  }
}

/** Start the chained step detached; null when it is not started (in a scope; the program could not be started). */
function startChain(chain: ChainRecord, dir: string, role: ScopeRole): Bun.Subprocess | null {
  // The close path ends every process of a scope's cgroup, and a child of the wrapper is in it.
  if (existsSync(join(dir, SCOPE_FILES[role].record))) return null;
  let fd: number | null = null;
  try {
    // Appended to, never through a link planted in its place.
    fd = openSync(chain.log, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch {
    fd = null;
  }
  try {
    return Bun.spawn(chain.argv, { cwd: chain.cwd, env: chain.env, detached: true, stdio: ["ignore", fd ?? "ignore", fd ?? "ignore"] });
  } catch {
    return null;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
