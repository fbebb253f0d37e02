#!/usr/bin/env bun
// loop add: append work items to loop.json (by hand, from a text file, or from the forge), editing only its items array.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { confirmArgs, defineTool, main, resolveRoot } from "../lib/shared/cli.ts";
import { EXIT } from "../lib/shared/errors.ts";
import { addVerb } from "../lib/planner/add-verb.ts";
import { configuredIssueSource } from "../lib/planner/issues.ts";
import { readInputText } from "../lib/planner/loop-file.ts";
import { renderAdd } from "../lib/planner/render.ts";

export const tool = defineTool({
  name: "loop-add",
  description: DESCRIPTIONS.add,
  examples: [
    ['loop add "Fix the login redirect" --id fix-login', "append one item"],
    ["loop export --text | loop add --from-file - --yes", "append items from the text format"],
  ],
  args: {
    prompt: { type: "positional", description: "the new item's prompt (or --from-file, --from-issues)", valueHint: "prompt" },
    id: { type: "string", description: "the item's id (default: from --ref, else a slug of the prompt)", valueHint: "id" },
    ref: { type: "string", description: "the forge issue the item is about (provider:owner/repo#N)", valueHint: "ref" },
    "depends-on": { type: "string", multiple: true, description: "an item this one waits for; repeatable", valueHint: "id" },
    runner: { type: "string", description: "the runner of the new items (default: defaults.runner)", valueHint: "name" },
    model: { type: "string", description: "the model of the new items", valueHint: "model" },
    verify: { type: "string", description: "the verify command of the new items (default: defaults.verify)", valueHint: "command" },
    "from-file": { type: "string", description: "one item per line, in the text format (- for stdin)", valueHint: "path|-" },
    "from-issues": { type: "string", description: "one item per open issue of the forge matching the search (needs the forge section)", valueHint: "search" },
    yes: { type: "boolean", description: "append a list without review (required for --from-file/--from-issues when stdin is not a TTY)", short: "y" },
    "dry-run": confirmArgs["dry-run"],
  },
  footer:
    "Exit codes: 0 appended (or, with --dry-run, shown), 1 refused: an id or ref already taken, loop.json changed meanwhile (nothing written), 2 usage or a result that is not a valid loop.json (nothing written), 3 declined at the review.",
  async run(args, ctx) {
    const root = resolveRoot(args.root, ctx.cwd);
    const fromFile = args["from-file"] === undefined ? undefined : await readInputText("--from-file", args["from-file"], ctx.cwd);
    const doc = await addVerb({
      root,
      prompt: args.prompt,
      id: args.id,
      ref: args.ref,
      dependsOn: args["depends-on"],
      runner: args.runner,
      model: args.model,
      verify: args.verify,
      fromFile,
      fromIssues: args["from-issues"],
      issueSource: configuredIssueSource(root, ctx.env, (m) => ctx.log.warn(m)),
      dryRun: args["dry-run"],
      yes: args.yes,
      stdinIsTTY: ctx.stdinIsTTY,
      notice: (text) => ctx.log.warn(text),
    });
    if (ctx.format === "json") ctx.outJson(doc);
    else ctx.out(renderAdd(doc));
    return EXIT.ok;
  },
});

if (import.meta.main) await main(tool);
