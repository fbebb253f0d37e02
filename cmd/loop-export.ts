#!/usr/bin/env bun
// loop export: print loop.json's items (with their status under --json), or as the text format `loop add --from-file` reads. Read-only.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, main, resolveRoot, resolveStateRoot } from "../lib/shared/cli.ts";
import { EXIT } from "../lib/shared/errors.ts";
import { exportItems } from "../lib/planner/export.ts";
import { formatItemLines } from "../lib/planner/text-format.ts";
import { printableText } from "../lib/shared/printable.ts";

export const tool = defineTool({
  name: "loop-export",
  description: DESCRIPTIONS.export,
  examples: [
    ["loop export --json", "every item with its status and spend"],
    ["loop export --status failed --text", "the failed items as lines `loop add --from-file` reads"],
  ],
  args: {
    status: { type: "string", multiple: true, description: "only items in this status (pending, passed, failed, …); repeatable", valueHint: "status" },
  },
  footer: "Exit codes: 0 printed, 2 usage, invalid loop.json, or a corrupt or outdated store.",
  run(args, ctx) {
    const root = resolveRoot(args.root, ctx.cwd);
    const { uncarried, ...doc } = exportItems({
      root,
      stateRoot: resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd }),
      statuses: args.status,
    });
    if (ctx.format === "json") {
      ctx.outJson(doc);
      return EXIT.ok;
    }
    // Nothing left out without a word: what an item sets that a line cannot carry is named, per item.
    for (const it of doc.items) {
      const left = uncarried.get(it.id) ?? [];
      if (left.length) ctx.log.warn(`item ${it.id}: the text format cannot carry its ${left.join(", ")}; left out (\`loop export --json\` has them)`);
    }
    // On a terminal what a prompt holds cannot drive it; piped, the text is exact (loop add reads it back).
    if (doc.items.length) ctx.out(ctx.stdoutIsTTY ? printableText(formatItemLines(doc.items)) : formatItemLines(doc.items));
    return EXIT.ok;
  },
});

if (import.meta.main) await main(tool);
