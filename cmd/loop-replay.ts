#!/usr/bin/env bun
// loop replay: re-fold the whole log and prove the projection and files agree with it. Read-only.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, main, resolveRoot, resolveStateRoot } from "../lib/shared/cli.ts";
import { EXIT } from "../lib/shared/errors.ts";
import { parseHead, replayReport } from "../lib/reports/replay.ts";
import { renderReplay } from "../lib/reports/render.ts";
import { projectOf } from "../lib/log/ownership.ts";

export const tool = defineTool({
  name: "loop-replay",
  description: DESCRIPTIONS.replay,
  examples: [
    ["loop replay", "fold the whole log again and prove the projection and state.json"],
    ["loop replay --expect-head 1234:<hash>", "also prove the log's head is one you wrote down"],
  ],
  args: {
    "expect-head": {
      type: "string",
      description: "the head a replay printed earlier (<seq>:<hash>): the event at that seq must still have that hash",
      valueHint: "seq:hash",
    },
  },
  footer: "Exit codes: 0 no findings, 1 findings, 2 cannot replay (usage; missing, corrupt or outdated store).",
  async run(args, ctx) {
    const root = resolveRoot(args.root, ctx.cwd);
    const expectHead = args["expect-head"] === undefined ? null : parseHead(args["expect-head"]);
    const report = await replayReport(resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd }), {
      project: projectOf(root, null),
      expectHead,
    });
    if (ctx.format === "json") ctx.outJson(report);
    else ctx.out(renderReplay(report));
    return report.ok ? EXIT.ok : EXIT.problem;
  },
});

if (import.meta.main) await main(tool);
