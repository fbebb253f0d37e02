// Confirmation for destructive commands (docs/cli/README.md#confirmation): --yes proceeds; a TTY is asked (default No,
// prompt on stderr); anything else refuses with exit 2 and changes nothing.
import { DeclinedError, UsageError } from "../shared/cli.ts";
import { printable } from "../shared/printable.ts";

export async function confirmOrRefuse(o: { yes: boolean; stdinIsTTY: boolean; what: string[]; command: string }): Promise<void> {
  if (o.yes) return;
  if (!o.stdinIsTTY)
    throw new UsageError(`${o.command} is destructive and stdin is not a terminal: pass --yes to do it (or --dry-run to see it). Nothing was changed.`);
  process.stderr.write(`${o.command} will:\n${o.what.map((w) => `  - ${printable(w)}`).join("\n")}\n`);
  const { confirm: clackConfirm, isCancel } = await import("@clack/prompts"); // only a terminal prompt needs it
  const answer = await clackConfirm({ message: "Go ahead?", initialValue: false, output: process.stderr });
  if (isCancel(answer) || answer !== true) throw new DeclinedError(`${o.command}: declined; nothing was changed`);
}
