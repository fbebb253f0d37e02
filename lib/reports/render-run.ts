// Text rendering of a loop/run@1 document.
import type { RunResult } from "../step/step.ts";
import { printable } from "../shared/printable.ts";

export function renderRun(r: RunResult): string {
  const out: string[] = [];
  for (const t of r.transitions) out.push(`  seq ${t.seq} ${t.type}${t.item ? ` ${t.item}` : ""}: ${t.summary}`);
  const head = `${r.action}${r.item ? ` ${r.item}` : ""}${r.reason ? `: ${r.reason}` : ""} (loop ${r.loop.state}${r.loop.outcome ? `, ${r.loop.outcome}` : ""})`;
  for (const e of r.errors) out.push(`  error: ${e}`);
  for (const w of r.warnings) out.push(`  warning: ${w}`);
  for (const n of r.notifications) out.push(`  notify (${n.kind}${n.item ? ` ${n.item}` : ""}): ${n.ok ? "ran" : `failed: ${n.reason}`}`);
  // A reason already printed (the head line, an error) is not printed again.
  for (const a of r.attention) out.push(`  needs a person (${a.kind})${a.reason === r.reason || r.errors.includes(a.reason) ? "" : `: ${a.reason}`}`);
  return [head, ...out].map(printable).join("\n");
}
