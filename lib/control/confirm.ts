// Confirmation for destructive commands (DESIGN §3): --yes proceeds; a TTY is asked (default No,
// prompt on stderr); anything else refuses with exit 2 and changes nothing.
import { DeclinedError, UsageError } from "../shared/cli.ts";
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
  if (o.typeToConfirm !== undefined) {
    const answer = await clack.text({ message: `Type the loop's name (${printable(o.typeToConfirm)}) to go ahead`, placeholder: "", output: process.stderr });
    if (clack.isCancel(answer) || answer.trim() !== o.typeToConfirm) throw new DeclinedError(`${o.command}: the name typed is not the loop's; nothing was changed`);
    return;
  }
  const answer = await clack.confirm({ message: "Go ahead?", initialValue: false, output: process.stderr });
  if (clack.isCancel(answer) || answer !== true) throw new DeclinedError(`${o.command}: declined; nothing was changed`);
}
