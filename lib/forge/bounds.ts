// What one step may cost the forge and this machine, in numbers (docs/forge.md#bounds): requests,
// bytes held, entries kept. Each bound is enforced where the cost arises (http.ts, the step's
// forge link); what goes past one is cut, waited for or refused, and said, never held.

/** Permission lookups (authorizeWriters) made in one step at most: a storm of commenters waits for later steps. */
export const PERMISSION_READS_PER_STEP = 20;
/** How long a permission read is believed (ms): a storm by the same people costs nothing more within it. */
export const PERMISSION_CACHE_MS = 10 * 60_000;
/** Logins whose permission the forge cache keeps at most. */
export const PERMISSION_CACHE_ENTRIES = 500;

/** Pages read of one listing at most (100 per page): a longer one is cut, and the result says so. */
export const MAX_PAGES = 10;
/** The largest JSON answer read (an API page is far smaller): a larger one is a failure, never held whole. */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;
/**
 * JSON values (objects, arrays, elements and members) one answer may hold: parsed JSON costs far
 * more than its bytes (`[{},{},…]` some 50 times), so a page is counted before it is parsed. A
 * page of 100 items holds some tens of thousands.
 */
export const MAX_ANSWER_VALUES = 1_000_000;
/** Bytes of answers one step reads from the forge in total: past it, requests fail (asked again next step). */
export const MAX_STEP_ANSWER_BYTES = 128 * 1024 * 1024;
/** Conditional-request (ETag) entries the forge cache keeps: the listings of a few items and their pull requests. */
export const ETAG_ENTRIES = 200;
/** The largest answer kept for a 304 (its JSON): a larger one is asked again whole. */
export const ETAG_ENTRY_BYTES = 1024 * 1024;
/** Bytes of kept answers the forge cache holds in total; the oldest go first. */
export const ETAG_TOTAL_BYTES = 16 * 1024 * 1024;
