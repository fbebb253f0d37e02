// What one step may cost the forge and this machine, in numbers (docs/forge.md#bounds): requests,
// bytes held, entries kept. Each bound is enforced where the cost arises (http.ts, the step's
// forge link); what goes past one is cut, waited for or refused, and said, never held.

/** Permission lookups (authorizeWriters) made in one step at most: a storm of commenters waits for later steps. */
export const PERMISSION_READS_PER_STEP = 20;
/** How long a permission read is believed (ms): a storm by the same people costs nothing more within it. */
export const PERMISSION_CACHE_MS = 10 * 60_000;
/** Logins whose permission the forge cache keeps at most. */
export const PERMISSION_CACHE_ENTRIES = 500;
