// Dollars for people (status, the page): cents, and under a cent two significant digits, so an
// item that cost $0.0027 never reads "$0.00" (docs/spend.md#how-figures-are-shown).

/** `$0.42`, `$12.30`, `$0.0027`, `$0.000041`, `$0.00` for nothing at all. */
export function dollarsText(usd: number): string {
  if (usd === 0) return "$0.00";
  const sign = usd < 0 ? "-" : "";
  const n = Math.abs(usd);
  // Two significant digits under a cent: the first non-zero decimal and the one after it (0.00999 rounds to a cent).
  const small = n.toFixed(Math.max(2, Math.min(12, 1 - Math.floor(Math.log10(n)))));
  return `${sign}$${n >= 0.01 || Number(small) >= 0.01 ? n.toFixed(2) : small}`;
}
