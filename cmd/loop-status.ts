#!/usr/bin/env bun
// loop status: report the loop and every item, checked against the log. Read-only.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, main, resolveRoot, resolveStateRoot, workItemArg } from "../lib/shared/cli.ts";
import { EXIT } from "../lib/shared/errors.ts";
import { statusReport } from "../lib/reports/status.ts";
import { renderStatus } from "../lib/reports/render.ts";
import { projectOf } from "../lib/log/ownership.ts";

export const tool = defineTool({
  name: "loop-status",
  description: DESCRIPTIONS.status,
  args: { ...workItemArg },
  footer: "Exit codes: 0 healthy, 1 divergence found, 2 cannot report (usage; missing, corrupt or outdated store).",
  run(args, ctx) {
    const root = resolveRoot(args.root, ctx.cwd);
    const report = statusReport(resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd }), args["work-item"], { env: ctx.env, project: projectOf(root, null) });
    if (ctx.format === "json") ctx.outJson(report);
    else ctx.out(renderStatus(report, ctx.color));
    return report.healthy ? EXIT.ok : EXIT.problem;
  },
});

if (import.meta.main) await main(tool);
