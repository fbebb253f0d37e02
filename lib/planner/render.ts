// Text output of `loop plan` and `loop add` (their JSON documents are printed as they are). A draft's
// fields are shown as review shows them (shown.ts: escaped, folded, clipped with their length).
import { printable } from "../shared/printable.ts";
import { shownLine } from "./shown.ts";
import type { AddDocument } from "./add-verb.ts";
import type { PlanDocument } from "./plan-verb.ts";

const firstLine = (s: string) => shownLine(s.split("\n")[0]!).text;

export function renderPlan(d: PlanDocument): string {
  const out: string[] = [];
  const calls = d.calls === 1 ? "1 call" : `${d.calls} calls`;
  if (d.outcome === "nothing_new") out.push(`nothing new to add (planner ${d.runner}, ${calls}): ${printable(d.reason ?? "")}`);
  else if (d.outcome === "undraftable") out.push(`undraftable brief (planner ${d.runner}, ${calls}): ${printable(d.reason ?? "")}`);
  else
    out.push(`drafted ${d.items.length} item${d.items.length === 1 ? "" : "s"} (planner ${d.runner}, ${calls})${d.reason ? `; ${printable(d.reason)}` : ""}:`);
  for (const it of d.items) {
    out.push(`  ${printable(it.id)}${it.ref ? ` [${it.ref}]` : ""}: ${firstLine(it.prompt)}`);
    const more = [
      it.dependsOn.length ? `after ${it.dependsOn.map(printable).join(", ")}` : "",
      it.runner ? `runner ${shownLine(it.runner).text}` : "",
      it.model ? `model ${shownLine(it.model).text}` : "",
      it.verify ? `verify ${shownLine(it.verify).text}` : "",
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
  return [
    d.dryRun ? `would append ${d.added.length} to ${printable(d.file)} (dry run: nothing written):` : `appended ${d.added.length} to ${printable(d.file)}:`,
    ...lines,
  ].join("\n");
}
