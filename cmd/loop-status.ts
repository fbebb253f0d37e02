#!/usr/bin/env bun
// loop status: report the loop and every item, checked against the log. Read-only.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, main, resolveRoot, resolveStateRoot, workItemArg } from "../lib/shared/cli.ts";
import { EXIT } from "../lib/shared/errors.ts";
import { statusReport } from "../lib/reports/status.ts";
import { renderStatus } from "../lib/reports/render.ts";
import { RECENT_SETTLED } from "../lib/reports/status-times.ts";
import { projectOf } from "../lib/log/ownership.ts";

export const tool = defineTool({
  name: "loop-status",
  description: DESCRIPTIONS.status,
  examples: [
    ["loop status --work-item fix-login --json", "one item, as JSON"],
    ["loop status --check || page-me", "page someone when the loop needs a person"],
    ["loop status --times", "the loop and every item, and where each item's time went, attempt by attempt"],
  ],
  args: {
    ...workItemArg,
    check: {
      type: "boolean",
      description: "exit 1 also when the loop needs a person (attention is not empty), as `loop run` does: for `loop status --check || page-me`",
    },
    times: {
      type: "boolean",
      description: `where the time went for every item shown, attempt by attempt (items[].times); without it, the item in flight's and the last ${RECENT_SETTLED} settled items'`,
    },
  },
  footer:
    "Exit codes: 0 healthy (with --check: and nothing needs a person), 1 divergence found (with --check:\nor attention is not empty), 2 cannot report (usage; missing, corrupt or outdated store).",
  async run(args, ctx) {
    const root = resolveRoot(args.root, ctx.cwd);
    const stateRoot = resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd });
    const options = { env: ctx.env, project: projectOf(root, null), root, times: args.times === true };
    let report = statusReport(stateRoot, args["work-item"], options);
    // loop.json's bytes changed since the last step read them: judged as a step would, which loads the
    // schema only now (a cold status must not pay for it) and reads the store again, in a new snapshot.
    if (report.loop.definition?.state === "unread") {
      const { judgeDefinition } = await import("../lib/reports/definition-judge.ts");
      report = statusReport(stateRoot, args["work-item"], { ...options, judge: judgeDefinition });
    }
    if (ctx.format === "json") ctx.outJson(report);
    else ctx.out(renderStatus(report, ctx.color, { allAttempts: args.times === true }));
    return report.healthy && !(args.check && report.attention.length > 0) ? EXIT.ok : EXIT.problem;
  },
});

if (import.meta.main) await main(tool);
