#!/usr/bin/env bun
// loop plan: draft work items from a brief with one planner call, review them, append them to loop.json.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { confirmArgs, defineTool, main, resolveRoot, resolveStateRoot } from "../lib/shared/cli.ts";
import { EXIT, UsageError } from "../lib/shared/errors.ts";
import { configuredIssueSource } from "../lib/planner/issues.ts";
import { readInputText } from "../lib/planner/loop-file.ts";
import { DEFAULT_MAX_ITEMS, planVerb } from "../lib/planner/plan-verb.ts";
import { renderPlan } from "../lib/planner/render.ts";

export const tool = defineTool({
  name: "loop-plan",
  description: DESCRIPTIONS.plan,
  examples: [
    ['loop plan "add rate limiting to the API"', "draft items with a planner agent, review them, append them"],
    ["loop plan --issues --max-items 5 --yes", "draft from the forge's open issues, without review"],
  ],
  args: {
    brief: { type: "positional", description: "what to draft items for (or --brief-file)", valueHint: "brief" },
    "brief-file": { type: "string", description: "read the brief from a file (- for stdin)", valueHint: "path|-" },
    issues: {
      type: "string",
      description: "also give the planner the forge's open issues matching this search, and its open PRs (needs the forge section)",
      valueHint: "search",
    },
    runner: {
      type: "string",
      description: "the planner: claude, codex, aider, demo or a command runner of loop.json (default: defaults.runner)",
      valueHint: "name",
    },
    model: { type: "string", description: "model for the planner (default: the runner's own)", valueHint: "model" },
    "max-items": { type: "string", description: `at most this many items (default ${DEFAULT_MAX_ITEMS})`, valueHint: "N" },
    yes: { type: "boolean", description: "append the draft without review (required when stdin is not a TTY, unless --dry-run)", short: "y" },
    "dry-run": confirmArgs["dry-run"],
  },
  footer:
    "Exit codes: 0 drafted (and appended, unless --dry-run) or nothing new to add, 1 undraftable brief or unusable planner answer (planner_failed), 2 usage (neither --yes nor --dry-run without a TTY, unknown runner, no forge section for --issues) or invalid loop.json, 3 declined at the review.",
  async run(args, ctx) {
    if ((args.brief === undefined) === (args["brief-file"] === undefined)) throw new UsageError("give the brief as an argument or with --brief-file, once");
    const max = args["max-items"] === undefined ? DEFAULT_MAX_ITEMS : Number(args["max-items"]);
    if (!Number.isInteger(max) || max < 1 || max > 100)
      throw new UsageError(`--max-items must be an integer from 1 to 100, got ${JSON.stringify(args["max-items"])}`);
    const brief = args.brief ?? (await readInputText("--brief-file", args["brief-file"]!, ctx.cwd)).text;
    if (brief.trim() === "") throw new UsageError("the brief is empty");
    const root = resolveRoot(args.root, ctx.cwd);
    const doc = await planVerb({
      root,
      stateRoot: resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd }),
      brief,
      runner: args.runner,
      model: args.model,
      maxItems: max,
      issues: args.issues,
      issueSource: configuredIssueSource(root, ctx.env, (m) => ctx.log.warn(m)),
      dryRun: args["dry-run"],
      yes: args.yes,
      stdinIsTTY: ctx.stdinIsTTY,
      env: ctx.env,
      notice: (text) => ctx.log.warn(text),
    });
    if (ctx.format === "json") ctx.outJson(doc);
    else ctx.out(renderPlan(doc));
    return doc.outcome === "undraftable" ? EXIT.problem : EXIT.ok;
  },
});

if (import.meta.main) await main(tool);
