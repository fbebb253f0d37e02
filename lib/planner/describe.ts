// What a person is shown of an item before it is written to loop.json (docs/cli/loop-plan.md#review):
// at the review on a terminal, or on stderr when --yes skips it. Pure.
import { printable } from "../shared/printable.ts";
import type { Warning } from "./answer.ts";

/** An item about to be appended: what review shows of it. Fields left null take the loop's defaults. */
export interface Describable {
  id: string;
  prompt: string;
  ref?: string | null;
  dependsOn?: readonly string[];
  runner?: string | null;
  model?: string | null;
  verify?: string | null;
  source?: string | null;
}

/** The loop's default verify (loop.json `defaults.verify`) as review names it. */
function defaultVerifyText(v: string | false | null): string {
  return v === null ? "none" : v === false ? "false (no command)" : `\`${printable(v)}\``;
}

/**
 * Every field of an item that will be written to loop.json (docs/cli/loop-plan.md#review), its
 * warnings, and a flag on a verify command that differs from the loop's default: a verify is a
 * shell command `loop run` will execute, so nobody should keep one without having seen it.
 */
export function describeItem(it: Describable, o: { n: number; of: number; defaultVerify: string | false | null; warnings: readonly Warning[] }): string {
  const field = (name: string, value: string) => `  ${name.padEnd(11)}${value}`;
  const lines = [`${o.n}/${o.of} ${printable(it.id)}`, ...it.prompt.split("\n").map((l) => `  | ${printable(l)}`)];
  lines.push(field("ref", it.ref ? printable(it.ref) : "none"));
  lines.push(field("depends on", it.dependsOn?.length ? it.dependsOn.map(printable).join(", ") : "nothing"));
  lines.push(field("runner", it.runner ? printable(it.runner) : "the loop's default"));
  lines.push(field("model", it.model ? printable(it.model) : "the runner's default"));
  lines.push(field("verify", it.verify ? `\`${printable(it.verify)}\`` : `the loop's default (${defaultVerifyText(o.defaultVerify)})`));
  if (it.verify && it.verify !== o.defaultVerify)
    lines.push(`  ! verify differs from the loop's default (${defaultVerifyText(o.defaultVerify)}): \`loop run\` will run this shell command in the item's worktree`);
  if (it.source) lines.push(field("source", printable(it.source.split("\n")[0]!)));
  for (const w of o.warnings.filter((x) => x.item === it.id)) lines.push(`  ! ${w.code}: ${printable(w.message)}`);
  return lines.join("\n");
}

/** The warnings about no item of `items` (the draft as a whole, or an item review dropped), one line each. */
export function otherWarnings(items: readonly Describable[], warnings: readonly Warning[]): string[] {
  return warnings.filter((w) => w.item === null || !items.some((it) => it.id === w.item)).map((w) => `! ${w.code}${w.item ? ` ${printable(w.item)}` : ""}: ${printable(w.message)}`);
}

/** The loop's default verify, from loop.json as written (`defaults.verify`): review flags an item's that differs. */
export function defaultVerifyOf(raw: unknown): string | false | null {
  const v = (raw as { defaults?: { verify?: unknown } } | null)?.defaults?.verify;
  return typeof v === "string" || v === false ? v : null;
}

/** What `--yes` says on stderr before it appends: the same facts review would have shown. */
export function describeUnreviewed(items: readonly Describable[], o: { what: string; defaultVerify: string | false | null; warnings: readonly Warning[] }): string {
  const out = [`${o.what} unreviewed (--yes); what will be written:`, ...otherWarnings(items, o.warnings)];
  items.forEach((it, i) => out.push(describeItem(it, { n: i + 1, of: items.length, defaultVerify: o.defaultVerify, warnings: o.warnings })));
  return out.join("\n");
}
