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
  /** Ask the operator to type this (the loop's name, for `loop reset --all`) instead of a yes/no. */
  typeToConfirm?: string;
}): Promise<void> {
  if (o.yes) return;
  if (!o.stdinIsTTY)
    throw new UsageError(`${o.command} is destructive and stdin is not a terminal: pass --yes to do it (or --dry-run to see it). Nothing was changed.`);
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
        ? await clack.text({ message: `Type the loop's name (${printable(o.typeToConfirm)}) to go ahead`, placeholder: "", output: process.stderr })
        : await clack.confirm({ message: "Go ahead?", initialValue: false, output: process.stderr });
  } finally {
    process.stdin.off("data", watch);
  }
  if (clack.isCancel(answer) && interrupted) throw new InterruptedError("interrupted; nothing was changed");
  if (o.typeToConfirm !== undefined) {
    if (clack.isCancel(answer) || typeof answer !== "string" || answer.trim() !== o.typeToConfirm)
      throw new DeclinedError("the name typed is not the loop's; nothing was changed");
    return;
  }
  if (clack.isCancel(answer) || answer !== true) throw new DeclinedError("declined; nothing was changed");
}
