// Text output of `loop plan` and `loop add` (their JSON documents are printed as they are), and
// what a person is shown of an item before it is written (the review, or --yes on stderr).
import { printable } from "../shared/printable.ts";
import type { AddDocument } from "./add-verb.ts";
import type { Warning } from "./answer.ts";
import type { PlanDocument } from "./plan-verb.ts";

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

/** What `--yes` says on stderr before it appends: the same facts review would have shown. */
export function describeUnreviewed(items: readonly Describable[], o: { what: string; defaultVerify: string | false | null; warnings: readonly Warning[] }): string {
  const out = [`${o.what} unreviewed (--yes); what will be written:`, ...otherWarnings(items, o.warnings)];
  items.forEach((it, i) => out.push(describeItem(it, { n: i + 1, of: items.length, defaultVerify: o.defaultVerify, warnings: o.warnings })));
  return out.join("\n");
}

const firstLine = (s: string) => printable(s.split("\n")[0]!);

export function renderPlan(d: PlanDocument): string {
  const out: string[] = [];
  const calls = d.calls === 1 ? "1 call" : `${d.calls} calls`;
  if (d.outcome === "nothing_new") out.push(`nothing new to add (planner ${d.runner}, ${calls}): ${printable(d.reason ?? "")}`);
  else if (d.outcome === "undraftable") out.push(`undraftable brief (planner ${d.runner}, ${calls}): ${printable(d.reason ?? "")}`);
  else out.push(`drafted ${d.items.length} item${d.items.length === 1 ? "" : "s"} (planner ${d.runner}, ${calls}):`);
  for (const it of d.items) {
    out.push(`  ${printable(it.id)}${it.ref ? ` [${it.ref}]` : ""}: ${firstLine(it.prompt)}`);
    const more = [
      it.dependsOn.length ? `after ${it.dependsOn.map(printable).join(", ")}` : "",
      it.runner ? `runner ${printable(it.runner)}` : "",
      it.verify ? `verify ${printable(it.verify)}` : "",
      it.source ? `from ${JSON.stringify(firstLine(it.source))}` : "",
    ].filter(Boolean);
    if (more.length) out.push(`      ${more.join("; ")}`);
  }
  if (d.warnings.length) out.push("warnings:", ...d.warnings.map((w) => `  ${w.code}${w.item ? ` ${printable(w.item)}` : ""}: ${printable(w.message)}`));
  if (d.outcome === "drafted")
    out.push(d.dryRun ? "dry run: nothing was written" : d.appended.length ? `appended ${d.appended.length} to ${printable(d.file)}` : "nothing was appended");
  return out.join("\n");
}

export function renderAdd(d: AddDocument): string {
  const lines = d.added.map((a) => `  ${printable(a.id)}${a.ref ? ` [${a.ref}]` : ""}: ${firstLine(a.prompt)}`);
  if (d.added.length === 0) return "nothing to add";
  return [d.dryRun ? `would append ${d.added.length} to ${printable(d.file)} (dry run: nothing written):` : `appended ${d.added.length} to ${printable(d.file)}:`, ...lines].join("\n");
}
