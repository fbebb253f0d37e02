#!/usr/bin/env bun
// loop reset: erase what loop remembers about work items (session, control, ledgers, checkout,
// branch archived), so they start over. Destructive: --yes, or a confirmation on a terminal.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { confirmArgs, defineTool, main, resolveRoot, resolveStateRoot, workItemArg } from "../lib/shared/cli.ts";
import { EXIT, UsageError } from "../lib/shared/errors.ts";
import { actorName } from "../lib/shared/actor.ts";
import { resolveSelectors } from "../lib/definition/selectors.ts";
import { confirmOrRefuse, wordToType } from "../lib/control/confirm.ts";
import { resetExitCode, runReset } from "../lib/control/reset.ts";
import { renderReset } from "../lib/control/reset-render.ts";

export const tool = defineTool({
  name: "loop-reset",
  description: DESCRIPTIONS.reset,
  examples: [
    ["loop reset --work-item fix-login --dry-run", "show what resetting an item would erase"],
    ["loop reset --work-item fix-login --yes", "erase it, so it starts over"],
  ],
  args: {
    ...workItemArg,
    all: { type: "boolean", description: "every item the store holds any state for (and no other)" },
    ...confirmArgs,
  },
  footer: [
    "Give --work-item (repeatable) or --all. Pieces: session (a live agent is ended first), control,",
    "ledger, workspace (the checkout), branch (renamed to loop/<name>/reset/<item>/e<epoch>, never deleted).",
    "Exit codes: 0 reset done, 1 nothing to reset or a piece could not be removed, 2 usage (or no --yes",
    "and no terminal), 3 declined at the prompt, 75 a step holds the lease (try again).",
  ].join("\n"),
  async run(args, ctx) {
    const items = args["work-item"];
    if (args.all && items.length) throw new UsageError("--all and --work-item exclude each other");
    if (!args.all && items.length === 0) throw new UsageError("name the items to reset: --work-item <ref|id> (repeatable), or --all");
    if (args.yes && args["dry-run"]) throw new UsageError("--yes and --dry-run exclude each other");
    const root = resolveRoot(args.root, ctx.cwd);
    const command = args.all ? "loop reset --all" : "loop reset";
    const r = await runReset({
      root,
      stateRoot: resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd }),
      actor: actorName(ctx.env),
      env: ctx.env,
      dryRun: args["dry-run"],
      select: (p) => (args.all ? { ids: [...p.order], all: true } : { ids: resolveSelectors(p, items), all: false }),
      ask: !args.yes,
      confirm: (plan) =>
        confirmOrRefuse({
          yes: args.yes,
          stdinIsTTY: ctx.stdinIsTTY,
          command,
          what: [...plan.items.flatMap((x) => [...x.effects, ...x.stays.map((s) => `stays: ${s}`)]), ...plan.warnings.map((w) => `warning: ${w}`)],
          // It cannot be undone: on a terminal the operator types the item's id (several, or --all: the loop's name), not just "y".
          typeToConfirm: args.all
            ? { word: plan.loopName, what: "the loop's name" }
            : wordToType(
                plan.items.map((x) => x.item),
                plan.loopName,
              ),
        }),
      warn: (w) => ctx.log.warn(w),
    });
    if (ctx.format === "json") ctx.outJson(r);
    else ctx.out(renderReset(r));
    return resetExitCode(r) === 0 ? EXIT.ok : EXIT.problem;
  },
});

if (import.meta.main) await main(tool);
