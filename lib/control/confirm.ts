// Confirmation for destructive commands (docs/cli/README.md#confirmation): --yes proceeds; a TTY is
// asked (default No, prompt on stderr); anything else refuses with exit 2 and changes nothing. No, or
// Escape, is a refusal (exit 3); Ctrl-C is an interruption (exit 130), as it is everywhere else.
import { DeclinedError, InterruptedError, UsageError } from "../shared/errors.ts";
import { printable } from "../shared/printable.ts";

export async function confirmOrRefuse(o: {
  yes: boolean;
  stdinIsTTY: boolean;
  what: string[];
  command: string;
  /** Why it asks, in the refusal off a terminal: "is destructive" unless said otherwise ("starts paid sessions"). */
  why?: string;
  /**
   * For what cannot be undone (deleting logs, archiving branches, ending a paid session): the
   * operator types this word (`what` names it: "the item's id", "the loop's name") instead of a
   * yes/no, which one stray key would give.
   */
  typeToConfirm?: { word: string; what: string };
}): Promise<void> {
  if (o.yes) return;
  if (!o.stdinIsTTY)
    throw new UsageError(
      `${o.command} ${o.why ?? "is destructive"} and stdin is not a terminal: pass --yes to do it (or --dry-run to see it). Nothing was changed.`,
    );
  process.stderr.write(`${o.command} will:\n${o.what.map((w) => `  - ${printable(w)}`).join("\n")}\n`);
  const clack = await import("@clack/prompts"); // only a terminal prompt needs it
  // The prompt reads the terminal raw, so Ctrl-C arrives as a byte, not as SIGINT; clack reports it
  // and Escape alike as "cancel", so the byte is watched for here.
  let interrupted = false;
  const watch = (d: Buffer | string) => {
    if (String(d).includes("\x03")) interrupted = true;
  };
  process.stdin.on("data", watch);
  let answer: string | boolean | symbol;
  try {
    answer =
      o.typeToConfirm !== undefined
        ? await clack.text({
            message: `Type ${o.typeToConfirm.what} (${printable(o.typeToConfirm.word)}) to go ahead`,
            placeholder: "",
            output: process.stderr,
          })
        : await clack.confirm({ message: "Go ahead?", initialValue: false, output: process.stderr });
  } finally {
    process.stdin.off("data", watch);
  }
  if (clack.isCancel(answer) && interrupted) throw new InterruptedError("interrupted; nothing was changed");
  if (o.typeToConfirm !== undefined) {
    if (clack.isCancel(answer)) throw new DeclinedError("declined; nothing was changed");
    if (typeof answer !== "string" || answer.trim() !== o.typeToConfirm.word)
      throw new DeclinedError(`declined: what was typed is not ${o.typeToConfirm.what}; nothing was changed`);
    return;
  }
  if (clack.isCancel(answer) || answer !== true) throw new DeclinedError("declined; nothing was changed");
}

/** What the operator types to confirm acting on `items` of the loop `loopName`: the one item's id, else the loop's name. */
export function wordToType(items: readonly string[], loopName: string): { word: string; what: string } {
  const one = [...new Set(items)];
  return one.length === 1 ? { word: one[0]!, what: "the item's id" } : { word: loopName, what: "the loop's name" };
}
