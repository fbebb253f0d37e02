// Text rendering of a loop/run@1 document.
import type { RunResult } from "../step/step.ts";
import { printable } from "../shared/printable.ts";

// Errors and warnings are not repeated here: the step said each once, on stderr, as it met it
// (docs/cli/README.md#output); the JSON document lists them as data.
export function renderRun(r: RunResult): string {
  const out: string[] = [];
  for (const t of r.transitions) out.push(`  seq ${t.seq} ${t.type}${t.item ? ` ${t.item}` : ""}: ${t.summary}`);
  // "drained: Succeeded (loop drained)", not "(loop drained, Succeeded)": the outcome once.
  const outcome = r.loop.outcome && r.loop.outcome !== r.reason ? `, ${r.loop.outcome}` : "";
  const head = `${r.action}${r.item ? ` ${r.item}` : ""}${r.reason ? `: ${r.reason}` : ""} (loop ${r.loop.state}${outcome})`;
  for (const n of r.notifications)
    out.push(
      `  notify${n.channel ? ` ${n.channel}` : ""} (${n.kind}${n.item ? ` ${n.item}` : ""}): ${n.ok ? (n.channel ? "sent" : "ran") : `failed: ${n.reason}`}`,
    );
  // A reason already printed (the head line) is not printed again.
  for (const a of r.attention)
    out.push(`  needs a person (${a.kind}${a.item && a.item !== r.item ? ` ${a.item}` : ""})${a.reason === r.reason ? "" : `: ${a.reason}`}`);
  return [head, ...out].map(printable).join("\n");
}
