// Plan quality checks, run on every draft before review (docs/cli/loop-plan.md#quality-checks).
// They warn; the operator decides. Pure.
import type { DraftItem, Warning } from "./answer.ts";

/** A prompt longer than this is likely several items in one (or a pasted document). */
export const MAX_PROMPT_CHARS = 4000;

/** Prompts compared for duplicates: case, punctuation and spacing ignored. */
export function normalizePrompt(p: string): string {
  return p
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

export function qualityWarnings(items: readonly DraftItem[], existing: readonly { id: string; prompt: string }[]): Warning[] {
  const out: Warning[] = [];
  const seen = new Map<string, string>();
  for (const e of existing) if (!seen.has(normalizePrompt(e.prompt))) seen.set(normalizePrompt(e.prompt), `existing item ${JSON.stringify(e.id)}`);
  for (const it of items) {
    const n = normalizePrompt(it.prompt);
    const other = seen.get(n);
    if (other !== undefined) out.push({ code: "duplicate_prompt", item: it.id, message: `same prompt as ${other}` });
    else seen.set(n, `draft item ${JSON.stringify(it.id)}`);
    if (it.source === null) out.push({ code: "no_source", item: it.id, message: "cites no source (no line of the brief, no issue)" });
    if (it.prompt.length > MAX_PROMPT_CHARS)
      out.push({ code: "oversized", item: it.id, message: `prompt of ${it.prompt.length} characters (over ${MAX_PROMPT_CHARS}): split it into smaller items` });
  }
  const known = new Set([...existing.map((e) => e.id), ...items.map((i) => i.id)]);
  for (const it of items)
    for (const d of it.dependsOn)
      if (!known.has(d))
        out.push({ code: "unknown_dependency", item: it.id, message: `depends on ${JSON.stringify(d)}, which is neither in the draft nor in the loop` });
  for (const cycle of draftCycles(items))
    out.push({ code: "dependency_cycle", item: cycle[0]!, message: `dependency cycle ${[...cycle, cycle[0]].join(" -> ")}` });
  return out;
}

/** Each cycle among the draft's items (existing items cannot depend on new ones), in dependency order. */
function draftCycles(items: readonly DraftItem[]): string[][] {
  const deps = new Map(items.map((i) => [i.id, i.dependsOn]));
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (u: string) => {
    state.set(u, 1);
    stack.push(u);
    for (const w of deps.get(u) ?? []) {
      if (!deps.has(w)) continue;
      if (state.get(w) === 1) cycles.push(stack.slice(stack.indexOf(w)));
      else if (!state.has(w)) visit(w);
    }
    stack.pop();
    state.set(u, 2);
  };
  for (const i of items) if (!state.has(i.id)) visit(i.id);
  return cycles;
}
