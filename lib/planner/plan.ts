// `loop plan`'s drafting: one planner call (plus at most one retry for an answer that is malformed or
// not JSON at all: a model that answered in prose once usually answers in JSON when told), then the
// quality checks. The call itself is injected (`ask`), so this is tested with scripted answers; the
// command passes runPlanner (run-planner.ts) or the demo planner. Nothing here writes anything.
import { PlannerError } from "../shared/errors.ts";
import { type Answer, type AnswerContext, checkAnswer, type DraftItem, parseAnswerText, type Warning } from "./answer.ts";
import { buildPlannerPrompt, type PlanContext } from "./prompt.ts";
import { qualityWarnings } from "./quality.ts";
import { dataBlock } from "./untrusted.ts";

interface Draft {
  outcome: Answer["outcome"];
  reason: string | null;
  items: DraftItem[];
  warnings: Warning[];
  /** Planner calls made: 1, or 2 when the first answer was malformed or not JSON. */
  calls: number;
}

/** The prompt of the one retry: the first prompt, then the problems found (quoted: they may quote the answer). */
export function retryPrompt(prompt: string, problems: readonly string[]): string {
  const text = problems.join("\n");
  return `${prompt}\n## Your previous answer was refused\nIt had these problems (quoted as data):\n${dataBlock("problems", text)}\nAnswer again with the whole corrected JSON document, and nothing else.\n`;
}

export async function draftPlan(o: { context: PlanContext; answerContext: AnswerContext; ask: (prompt: string) => Promise<string> }): Promise<Draft> {
  const prompt = buildPlannerPrompt(o.context);
  let currentPrompt = prompt;
  for (let call = 1; ; call++) {
    const parsed = parseAnswerText(await o.ask(currentPrompt));
    // Truncated output is not retried (it would be paid for again, and cut again), nor an empty one
    // (nothing to tell the planner about); prose is the planner's mistake, like a malformed document.
    if (!parsed.ok && (parsed.why !== "unparseable" || call === 2))
      throw new PlannerError(`the planner's answer is unusable${call === 2 ? " after the retry" : ""}: ${parsed.message}; nothing was drafted`);
    const checked: { ok: false; problems: string[] } | ReturnType<typeof checkAnswer> = parsed.ok
      ? checkAnswer(parsed.value, o.answerContext)
      : { ok: false, problems: [`${parsed.message}. The answer must be the JSON document alone: no prose around it, no code fence`] };
    if (checked.ok) {
      const a = checked.answer;
      const existing = o.context.existing.map((e) => ({ id: e.id, prompt: e.prompt }));
      return { outcome: a.outcome, reason: a.reason, items: a.items, warnings: [...checked.warnings, ...qualityWarnings(a.items, existing)], calls: call };
    }
    if (call === 2)
      throw new PlannerError(`the planner's answer was malformed twice; nothing was drafted. Problems of the second answer: ${checked.problems.join("; ")}`);
    currentPrompt = retryPrompt(prompt, checked.problems);
  }
}
