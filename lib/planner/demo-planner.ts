// The built-in `demo` planner: deterministic, offline, for the demo and tests (docs/cli/loop-plan.md#the-demo-planner).
// It answers what an agent would, from the same context, by plain rules:
//   - every sentence or list line of the brief that starts with a verb of work (add, write, fix, …)
//     is an item, after a leading "First", "Also" or "And"; "Then", "Next", "Finally", "Lastly" or
//     "After that" make the item depend on the one before;
//   - a file named in the sentence (README.md, LICENSE) is what the demo agent writes
//     (`@demo write`), and the item's verify checks it; otherwise the agent's DEMO-<id>.md;
//   - an item whose prompt an existing item already has is left out (nothing_new if all are);
//   - with --issues: one item per open issue, but tracking/umbrella issues and issues an open pull
//     request mentions ("#N", or the ref) are skipped;
//   - a brief with no such sentence is undraftable;
//   - what it left out (a sentence that is no task, work already in the loop, a skipped issue) is
//     said in the answer's reason, never dropped silently.
import type { PlanContext } from "./prompt.ts";
import { normalizePrompt } from "./quality.ts";
import { slugFromPrompt } from "./slug.ts";
import { sliceText } from "../shared/fsutil.ts";

const VERBS =
  /^(add|write|fix|create|make|remove|delete|update|rename|document|test|refactor|implement|move|replace|support|improve|introduce|drop|bump|upgrade|check|ensure)\b/i;
const FILE = /\b([A-Za-z0-9_-]+\.(?:md|txt|json|sh|ts|js|py|toml|yml|yaml)|[A-Z]{4,}[A-Z0-9_]*)\b/;

function sentences(brief: string): string[] {
  return brief
    .split("\n")
    .flatMap((line) => line.replace(/^\s*(?:[-*•]|\d+[.)])\s+/, "").split(/(?<=[.!?])\s+(?=[A-Z])/))
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** Words that only order the tasks: "then"-like ones make the item depend on the one before. */
const AFTER = /^(?:then|next|finally|lastly|after that),?\s+/i;
const ALSO = /^(?:first|firstly|also|and),?\s+/i;

/** A sentence as the reason quotes it: one line, at most 80 characters. */
const quote = (s: string) => JSON.stringify(s.length > 80 ? `${sliceText(s, 0, 79)}…` : s);

/** What the demo planner left out, one clause per reason, each naming the sentences or issues (at most 5). */
function leftOut(skipped: Map<string, string[]>): string | null {
  const parts = [...skipped].map(([why, what]) => `${what.slice(0, 5).join(", ")}${what.length > 5 ? `, … ${what.length} in all` : ""} (${why})`);
  return parts.length ? `left out: ${parts.join("; ")}` : null;
}

export function demoPlan(c: PlanContext): unknown {
  // An existing item's prompt counts by its first line too: the demo's own items carry @demo lines below it.
  const known = new Set(c.existing.flatMap((e) => [normalizePrompt(e.prompt), normalizePrompt(e.prompt.split("\n")[0]!)]));
  const taken = new Set(c.existing.map((e) => e.id));
  const items: Record<string, unknown>[] = [];
  let tasks = 0;
  let previous: string | null = null;
  const skipped = new Map<string, string[]>();
  const skip = (why: string, what: string) => skipped.set(why, [...(skipped.get(why) ?? []), what]);
  for (const s of sentences(c.brief)) {
    const then = AFTER.exec(s);
    const also = then ? null : ALSO.exec(s);
    const task = s.slice((then ?? also)?.[0].length ?? 0);
    if (!VERBS.test(task)) {
      skip("not a task: it does not start with a verb of work, such as add, write or fix", quote(s));
      continue;
    }
    tasks++;
    const text = task.charAt(0).toUpperCase() + task.slice(1);
    if (known.has(normalizePrompt(text))) {
      const had = c.existing.find((e) => [e.prompt, e.prompt.split("\n")[0]!].some((p) => normalizePrompt(p) === normalizePrompt(text)))?.id;
      skip(had ? "already an item of the loop" : "said twice in the brief", quote(s));
      previous = had ?? previous;
      continue;
    }
    let id = slugFromPrompt(text);
    for (let n = 2; taken.has(id); n++) id = `${slugFromPrompt(text).slice(0, 44)}-${n}`;
    taken.add(id);
    const file = FILE.exec(task)?.[1];
    const prompt = file ? `${text}\n@demo write ${file} ${text.replace(/\\/g, "\\\\")}` : text;
    items.push({
      id,
      prompt,
      ref: null,
      dependsOn: then && previous ? [previous] : [],
      runner: null,
      model: null,
      verify: `test -s ${file ?? `DEMO-${id}.md`}`,
      source: s,
    });
    known.add(normalizePrompt(text));
    previous = id;
  }
  if (c.forge) {
    const covered = c.forge.pulls.map((p) => `${p.title}\n${p.body}`);
    const existingRefs = new Set(c.existing.map((e) => e.ref));
    for (const i of c.forge.issues) {
      tasks++;
      const n = /#(\d+)$/.exec(i.ref)?.[1];
      if (/^\s*\[?(tracking|umbrella|meta|epic|decision)\b/i.test(i.title)) {
        skip("a tracking issue", i.ref);
        continue;
      }
      if (existingRefs.has(i.ref)) {
        skip("already an item of the loop", i.ref);
        continue;
      }
      if (covered.some((t) => t.includes(i.ref) || (n !== undefined && new RegExp(`#${n}\\b`).test(t)))) {
        skip("an open pull request mentions it", i.ref);
        continue;
      }
      let id = slugFromPrompt(i.title);
      for (let k = 2; taken.has(id); k++) id = `${slugFromPrompt(i.title).slice(0, 44)}-${k}`;
      taken.add(id);
      items.push({ id, prompt: i.title, ref: i.ref, dependsOn: [], runner: null, model: null, verify: null, source: i.ref });
    }
  }
  const capped = items.slice(0, c.maxItems);
  for (const it of items.slice(c.maxItems)) skip(`over --max-items ${c.maxItems}`, quote(String(it.source)));
  const note = leftOut(skipped);
  if (capped.length > 0) return { outcome: "drafted", reason: note, items: capped };
  if (tasks > 0) return { outcome: "nothing_new", reason: `every task of the brief is already an item of the loop${note ? `; ${note}` : ""}`, items: [] };
  return {
    outcome: "undraftable",
    reason: `the brief names no task: no sentence starts with a verb of work (add, write, fix, …)${note ? `; ${note}` : ""}`,
    items: [],
  };
}
