// `loop run`'s own environment (docs/threat-model.md#where-each-secret-lives). The command keeps a
// copy, in its memory, for what loop does itself (its push's forge token, the keys its sessions'
// gateways are handed, the chained step's environment) and takes loop's keys out of its process
// environment, which whatever it starts without naming an environment of its own inherits (its git,
// tmux, systemctl): they get none. The names a definition adds (its forge's tokenEnv,
// environment.secrets) go once it is read. The process itself is made undumpable by the command: its
// environment block (/proc/<pid>/environ) still holds what it was started with.
import { BUILTIN_SECRETS, loopKeys, matchesName, MODEL_KEYS } from "../definition/child-environment.ts";

let taken = false;

/** This process's environment as loop's own: a copy returned, loop's keys taken out of process.env. */
export function takeOwnEnvironment(): Record<string, string | undefined> {
  const own = { ...process.env };
  hide([...BUILTIN_SECRETS, ...MODEL_KEYS]);
  taken = true;
  return own;
}

/** The definition's own secret names taken out of process.env too, when takeOwnEnvironment was called (the command, never a test's step in process). */
export function hideDefinitionSecrets(def: Parameters<typeof loopKeys>[0]): void {
  if (taken) hide(loopKeys(def));
}

function hide(patterns: readonly string[]): void {
  for (const name of Object.keys(process.env)) if (patterns.some((p) => matchesName(p, name))) delete process.env[name];
}
