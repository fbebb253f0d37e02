// The text report of `loop reset`: one block per item in plain words, then a one-line summary.
// Every value may come from the store or the file system: each is printed escaped.
import { printable } from "../shared/printable.ts";
import type { ResetReport } from "./reset.ts";

export function renderReset(r: ResetReport): string {
  const p = (v: unknown) => printable(String(v));
  const out: string[] = [];
  for (const it of r.items) {
    const name = `${p(it.item)}${it.ref ? ` (${p(it.ref)})` : ""}`;
    if (!it.found) {
      out.push(`${name}: nothing to reset`);
      continue;
    }
    if (r.dry_run) {
      out.push(`${name}: would reset`);
      for (const e of it.effects) out.push(`  - ${p(e)}`);
      for (const e of it.stays) out.push(`  stays: ${p(e)}`);
      continue;
    }
    out.push(`${name}: ${it.removed.length ? "reset" : "NOT reset"}`);
    if (it.was_live) out.push("  ended its live agent");
    out.push(`  removed: ${it.removed.length ? it.removed.join(", ") : "nothing"}`);
    // Said, not implied by "session": the attempts' output is gone with the folder.
    if (it.removed.includes("session"))
      out.push(`  logs: every attempt's output and verify logs were deleted with sessions/${p(it.item)}/ (\`loop logs\` has none of them now)`);
    const c = it.checkout;
    if (c.outcome !== "absent" || c.why) out.push(`  checkout: ${c.outcome}${c.path ? ` ${p(c.path)}` : ""}${c.why ? ` (${p(c.why)})` : ""}`);
    if (it.archived_branch) out.push(`  branch: archived as ${p(it.archived_branch)}`);
    for (const a of it.aside) out.push(`  moved aside earlier, not removed: ${p(a)}`);
    for (const e of it.stays) out.push(`  stays: ${p(e)}`);
    for (const e of it.errors) out.push(`  error (${e.piece}): ${p(e.message)}`);
  }
  const found = r.items.filter((i) => i.found).length;
  const none = r.items.length - found;
  const failed = r.items.filter((i) => i.errors.length > 0).length;
  if (r.items.length === 0) out.push("nothing to reset: no item holds any state");
  else if (r.dry_run) out.push(`dry run: would reset ${found} item(s)${none ? `; nothing to reset for ${none}` : ""}; nothing was changed`);
  else
    out.push(
      `${found === 0 ? "nothing to reset" : `reset ${found - failed} item(s)${failed ? `; ${failed} with errors (see above)` : ""}`}${found && none ? `; nothing to reset for ${none}` : ""}`,
    );
  return out.join("\n");
}
