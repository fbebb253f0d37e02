// Output that only says the agent is waiting (a CLI retrying a lost connection forever, printing a
// line a minute) must not hold off the stall deadline (docs/cli/loop-run.md#deadlines). Pure: the
// stall clock (progress.ts) feeds it what the output log grew by.

/** Lines that say an agent waits rather than works. */
const WAITING_LINE =
  /\b(?:reconnecting|retrying|retry(?:ing)? in|waiting for (?:network|connection|the server)|rate[- ]limit(?:ed)?|backing off|stream disconnected|connection (?:refused|reset|lost|error))\b/i;

/** A line with its digits masked: counters, timers and timestamps do not make it new. */
function lineShape(line: string): string {
  return line.trim().replace(/\d+/g, "#");
}

/**
 * Whether output appended since the last look is progress. It is not when every new non-blank
 * line repeats the line before it (digits masked) or matches WAITING_LINE; blank growth is no
 * progress either. `lastLine` carries the last non-blank line to the next look.
 */
export function outputShowsProgress(newText: string, previousLine: string | null): { progress: boolean; lastLine: string | null } {
  let prev = previousLine === null ? null : lineShape(previousLine);
  let last = previousLine;
  let progress = false;
  for (const raw of newText.split("\n")) {
    if (raw.trim() === "") continue;
    const shape = lineShape(raw);
    if (shape !== prev && !WAITING_LINE.test(raw)) progress = true;
    prev = shape;
    last = raw.trim();
  }
  return { progress, lastLine: last === null ? null : last.slice(0, 2000) };
}
