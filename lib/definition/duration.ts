// Durations as written in loop.json and on the command line: one integer amount and one unit.
// Deliberately narrow ("1h30m", "1.5h", " 5m" are rejected): a timeout is a deadline the tool
// enforces, so a value that could be read two ways is refused instead of guessed. Zero is refused
// everywhere: a zero timeout fails everything at once, a zero --interval spins.

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
type Unit = keyof typeof UNIT_MS;

const DURATION = /^(\d+)(ms|s|m|h|d)$/;

/** Milliseconds for `500ms`, `90s`, `15m`, `2h`, `1d`; throws an Error naming the value otherwise (zero too). */
export function parseDuration(s: string): number {
  const m = typeof s === "string" ? DURATION.exec(s) : null;
  if (!m) {
    throw new Error(`invalid duration ${JSON.stringify(s)}: expected an integer and one unit (ms, s, m, h, d), e.g. "90s" or "15m"`);
  }
  const ms = Number(m[1]) * UNIT_MS[m[2] as Unit];
  if (!Number.isSafeInteger(ms)) throw new Error(`invalid duration ${JSON.stringify(s)}: too large`);
  if (ms === 0) throw new Error(`invalid duration ${JSON.stringify(s)}: must be greater than zero`);
  return ms;
}

/**
 * The shortest form parseDuration reads back to exactly `ms` (300000 -> "5m", 90000 -> "90s",
 * 1500 -> "1500ms"), so a normalized timeout can be shown in the units people write.
 * Fractional input is rounded to whole milliseconds.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`invalid duration: ${ms} ms`);
  const n = Math.round(ms);
  if (n === 0) return "0s";
  for (const unit of ["d", "h", "m", "s"] as const) {
    if (n % UNIT_MS[unit] === 0) return `${n / UNIT_MS[unit]}${unit}`;
  }
  return `${n}ms`;
}
