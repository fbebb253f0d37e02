// `loop plan`'s drafting: one planner call (plus at most one retry for a malformed answer), then the
// quality checks. The call itself is injected (`ask`), so this is tested with scripted answers; the
// command passes runPlanner (run-planner.ts) or the demo planner. Nothing here writes anything.
import { PlannerError } from "../shared/errors.ts";
import { type Answer, type AnswerContext, checkAnswer, type DraftItem, parseAnswerText, type Warning } from "./answer.ts";
import { buildPlannerPrompt, type PlanContext } from "./prompt.ts";
import { qualityWarnings } from "./quality.ts";
import { fence, fenceNonce } from "./untrusted.ts";

export interface Draft {
  outcome: Answer["outcome"];
  reason: string | null;
  items: DraftItem[];
  warnings: Warning[];
  /** Planner calls made: 1, or 2 when the first answer was malformed. */
  calls: number;
}

/** The prompt of the one retry: the first prompt, then the problems found (quoted: they may quote the answer). */
export function retryPrompt(prompt: string, problems: readonly string[]): string {
  const text = problems.join("\n");
  const nonce = fenceNonce([prompt, text]);
  return `${prompt}\n## Your previous answer was refused\nIt had these problems (quoted as data between the two DATA ${nonce} lines):\n${fence("problems", text, nonce)}\nAnswer again with the whole corrected JSON document, and nothing else.\n`;
}

export async function draftPlan(o: { context: PlanContext; answerContext: AnswerContext; ask: (prompt: string) => Promise<string> }): Promise<Draft> {
  const prompt = buildPlannerPrompt(o.context);
  let currentPrompt = prompt;
  for (let call = 1; ; call++) {
    const parsed = parseAnswerText(await o.ask(currentPrompt));
    if (!parsed.ok) throw new PlannerError(`the planner's answer is unusable: ${parsed.message}; nothing was drafted`);
    const checked = checkAnswer(parsed.value, o.answerContext);
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
