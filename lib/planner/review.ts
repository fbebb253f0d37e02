// Review before anything is queued, on a terminal (docs/cli/loop-plan.md#review): each drafted item
// kept, dropped or edited, then one confirmation (default No). The prompts are @clack/prompts on
// stderr, loaded only here. No or Escape declines (exit 3), Ctrl-C interrupts (exit 130); either
// way nothing is written. Everything shown at a prompt is escaped (shown.ts), the value a person
// edits included: a prompt that clears the screen or retitles the terminal at the moment of
// decision is shown as the escapes it holds.
import { DeclinedError, InterruptedError } from "../shared/errors.ts";
import type { Warning } from "./answer.ts";
import { type Describable, describeItem, otherWarnings, type ReviewDefaults } from "./describe.ts";
import { editable, fromEditable } from "./shown.ts";

/** What review shows of an item: every field that will be written (describe.ts describeItem). */
type Reviewable = Describable;

/** Runs a clack prompt, telling Ctrl-C (a raw byte on the terminal) from Escape: clack reports both as "cancel". */
async function ask<T>(run: () => Promise<T | symbol>): Promise<T> {
  const { isCancel } = await import("@clack/prompts");
  let interrupted = false;
  const watch = (d: Buffer | string) => {
    if (String(d).includes("\x03")) interrupted = true;
  };
  process.stdin.on("data", watch);
  let answer: T | symbol;
  try {
    answer = await run();
  } finally {
    process.stdin.off("data", watch);
  }
  if (isCancel(answer) && interrupted) throw new InterruptedError("interrupted; nothing was written");
  if (isCancel(answer)) throw new DeclinedError("declined; nothing was written");
  return answer as T;
}

/** Keep, drop or edit each item; the items kept (edited prompts in place), after a final Yes. */
export async function reviewItems<T extends Reviewable>(
  items: readonly T[],
  o: { editable: boolean; what: string; defaults: ReviewDefaults; warnings: readonly Warning[] },
): Promise<T[]> {
  const clack = await import("@clack/prompts");
  const kept: T[] = [];
  const general = otherWarnings(items, o.warnings);
  if (general.length) process.stderr.write(`\n${general.join("\n")}\n`);
  for (const [n, it] of items.entries()) {
    process.stderr.write(`\n${describeItem(it, { n: n + 1, of: items.length, defaults: o.defaults, warnings: o.warnings })}\n`);
    if (!o.editable) {
      kept.push(it);
      continue;
    }
    const choice = await ask(() =>
      clack.select<"keep" | "drop" | "edit">({
        message: `Item ${it.id}`,
        options: [
          { value: "keep", label: "keep" },
          { value: "drop", label: "drop" },
          { value: "edit", label: "edit the prompt" },
        ],
        initialValue: "keep",
        output: process.stderr,
      }),
    );
    if (choice === "drop") continue;
    if (choice === "edit") {
      const edited = await ask<string>(() =>
        clack.text({
          message: `Prompt of ${it.id} (escaped: \\n is a line break, \\\\ a backslash, \\uXXXX a character that would act on the terminal)`,
          initialValue: editable(it.prompt),
          validate: (s) => {
            const r = fromEditable(s ?? "");
            return !r.ok ? r.problem : r.text.trim() ? undefined : "a prompt cannot be empty";
          },
          output: process.stderr,
        }),
      );
      const r = fromEditable(edited);
      if (!r.ok) throw new Error(`internal: an edited prompt passed validation unreadable: ${r.problem}`);
      kept.push({ ...it, prompt: r.text });
    } else kept.push(it);
  }
  if (kept.length === 0) return kept;
  const yes = await ask(() => clack.confirm({ message: `${o.what.replace("{n}", String(kept.length))}?`, initialValue: false, output: process.stderr }));
  if (!yes) throw new DeclinedError("declined; nothing was written");
  return kept;
}
