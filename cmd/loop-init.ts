#!/usr/bin/env bun
// loop init: scaffold loop.json and the state root in a git repository.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, EXIT, main, resolveStateRoot } from "../lib/shared/cli.ts";
import { resolve } from "node:path";
import { initProject } from "../lib/control/init.ts";
import { actorName } from "../lib/shared/actor.ts";

export const tool = defineTool({
  name: "loop-init",
  description: DESCRIPTIONS.init,
  args: {
    force: { type: "boolean", description: "overwrite an existing loop.json" },
    nested: { type: "boolean", description: "allow a loop inside a directory that already has one (never inside a state root)" },
    root: { type: "string", description: "the git work tree to set up (default: the cwd)", valueHint: "dir" },
  },
  footer: "Exit codes: 0 done, 2 usage error, loop.json exists without --force, or the root is inside another loop (without --nested) or inside a state root.",
  run(args, ctx) {
    const root = resolve(ctx.cwd, args.root ?? ".");
    const r = initProject(root, resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd }), {
      force: args.force,
      nested: args.nested,
      env: ctx.env,
      actor: actorName(ctx.env),
    });
    if (ctx.format === "json") ctx.outJson({ schema: "loop/init@1", ...r });
    else {
      ctx.out(
        [
          `${r.overwrote ? "overwrote" : "wrote"} ${r.definition} (runner ${r.runner}, base ${r.base}, verify ${r.verify ?? "exit 1 — set yours"})`,
          `state root ${r.stateRoot}`,
          `next: add items to loop.json, then run \`loop run\` (or put it in cron)`,
        ].join("\n"),
      );
    }
    return EXIT.ok;
  },
});

if (import.meta.main) await main(tool);
