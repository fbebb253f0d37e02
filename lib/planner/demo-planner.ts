// The built-in `demo` planner: deterministic, offline, for the demo and tests (docs/cli/loop-plan.md#the-demo-planner).
// It answers what an agent would, from the same context, by plain rules:
//   - every sentence or list line of the brief that starts with a verb of work (add, write, fix, …)
//     is an item; "Then …" makes the item depend on the one before;
//   - a file named in the sentence (README.md, LICENSE) is what the demo agent writes
//     (`@demo write`), and the item's verify checks it; otherwise the agent's DEMO-<id>.md;
//   - an item whose prompt an existing item already has is left out (nothing_new if all are);
//   - with --issues: one item per open issue, but tracking/umbrella issues and issues an open pull
//     request mentions ("#N", or the ref) are skipped;
//   - a brief with no such sentence is undraftable.
import type { PlanContext } from "./prompt.ts";
import { normalizePrompt } from "./quality.ts";
import { slugFromPrompt } from "./slug.ts";

const VERBS = /^(add|write|fix|create|make|remove|delete|update|rename|document|test|refactor|implement|move|replace|support|improve|introduce|drop|bump|upgrade|check|ensure)\b/i;
const FILE = /\b([A-Za-z0-9_-]+\.(?:md|txt|json|sh|ts|js|py|toml|yml|yaml)|[A-Z]{4,}[A-Z0-9_]*)\b/;

function sentences(brief: string): string[] {
  return brief
    .split("\n")
    .flatMap((line) => line.replace(/^\s*(?:[-*•]|\d+[.)])\s+/, "").split(/(?<=[.!?])\s+(?=[A-Z])/))
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

export function demoPlan(c: PlanContext): unknown {
  // An existing item's prompt counts by its first line too: the demo's own items carry @demo lines below it.
  const known = new Set(c.existing.flatMap((e) => [normalizePrompt(e.prompt), normalizePrompt(e.prompt.split("\n")[0]!)]));
  const taken = new Set(c.existing.map((e) => e.id));
  const items: Record<string, unknown>[] = [];
  let tasks = 0;
  let previous: string | null = null;
  for (const s of sentences(c.brief)) {
    const then = /^then,?\s+/i.exec(s);
    const task = then ? s.slice(then[0].length) : s;
    if (!VERBS.test(task)) continue;
    tasks++;
    const text = task.charAt(0).toUpperCase() + task.slice(1);
    if (known.has(normalizePrompt(text))) {
      previous = c.existing.find((e) => [e.prompt, e.prompt.split("\n")[0]!].some((p) => normalizePrompt(p) === normalizePrompt(text)))?.id ?? previous;
      continue;
    }
    let id = slugFromPrompt(text);
    for (let n = 2; taken.has(id); n++) id = `${slugFromPrompt(text).slice(0, 44)}-${n}`;
    taken.add(id);
    const file = FILE.exec(task)?.[1];
    const prompt = file ? `${text}\n@demo write ${file} ${text.replace(/\\/g, "\\\\")}` : text;
    items.push({ id, prompt, ref: null, dependsOn: then && previous ? [previous] : [], runner: null, model: null, verify: `test -s ${file ?? `DEMO-${id}.md`}`, source: s });
    known.add(normalizePrompt(text));
    previous = id;
  }
  if (c.forge) {
    const covered = c.forge.pulls.map((p) => `${p.title}\n${p.body}`);
    const existingRefs = new Set(c.existing.map((e) => e.ref));
    for (const i of c.forge.issues) {
      tasks++;
      const n = /#(\d+)$/.exec(i.ref)?.[1];
      if (/^\s*\[?(tracking|umbrella|meta|epic|decision)\b/i.test(i.title) || existingRefs.has(i.ref)) continue;
      if (covered.some((t) => t.includes(i.ref) || (n !== undefined && new RegExp(`#${n}\\b`).test(t)))) continue;
      let id = slugFromPrompt(i.title);
      for (let k = 2; taken.has(id); k++) id = `${slugFromPrompt(i.title).slice(0, 44)}-${k}`;
      taken.add(id);
      items.push({ id, prompt: i.title, ref: i.ref, dependsOn: [], runner: null, model: null, verify: null, source: i.ref });
    }
  }
  const capped = items.slice(0, c.maxItems);
  if (capped.length > 0) return { outcome: "drafted", reason: null, items: capped };
  if (tasks > 0) return { outcome: "nothing_new", reason: "every task of the brief is already an item of the loop", items: [] };
  return { outcome: "undraftable", reason: "the brief names no task: no sentence starts with a verb of work (add, write, fix, …)", items: [] };
}
