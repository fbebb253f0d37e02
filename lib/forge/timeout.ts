// The deadline of one forge request (docs/forge.md#deadlines): the environment may set it with
// LOOP_FORGE_TIMEOUT (a duration, e.g. "45s"); otherwise the provider's default holds. Read by
// every tool that talks to the forge.
import { parseDuration } from "../definition/duration.ts";

const FORGE_TIMEOUT_VAR = "LOOP_FORGE_TIMEOUT";

/** The deadline in ms, or undefined for the default; a value that is not a positive duration is said and ignored. */
export function forgeTimeout(env: Record<string, string | undefined>, warn: (message: string) => void): number | undefined {
  const raw = env[FORGE_TIMEOUT_VAR];
  if (!raw) return undefined;
  let ms = 0;
  try {
    ms = parseDuration(raw);
  } catch {
    // said below
  }
  if (ms > 0) return ms;
  warn(`forge: ${FORGE_TIMEOUT_VAR}=${JSON.stringify(raw).slice(0, 40)} is not a positive duration (e.g. "30s"); the default deadline applies`);
  return undefined;
}
