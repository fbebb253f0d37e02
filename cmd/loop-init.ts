#!/usr/bin/env bun
// loop init: scaffold loop.json and the state root in a git repository.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, main, resolveStateRoot } from "../lib/shared/cli.ts";
import { EXIT, UsageError } from "../lib/shared/errors.ts";
import { join, resolve } from "node:path";
import { adoptStateRoot, initProject } from "../lib/control/init.ts";
import type { ProjectIdentity } from "../lib/log/ownership.ts";
import { printable } from "../lib/shared/printable.ts";
import { actorName } from "../lib/shared/actor.ts";

export const tool = defineTool({
  name: "loop-init",
  description: DESCRIPTIONS.init,
  examples: [
    ["loop init", "write loop.json (with a guessed verify and setup) and the store here"],
    ["loop init --force --json", "write it again, answering in JSON"],
  ],
  args: {
    force: { type: "boolean", description: "overwrite an existing loop.json" },
    nested: { type: "boolean", description: "allow a loop inside a directory that already has one (never inside a state root)" },
    adopt: { type: "boolean", description: "bind the existing state root to this project (after moving or renaming it); loop.json is not written" },
    root: { type: "string", description: "the git work tree to set up (default: the cwd)", valueHint: "dir" },
  },
  footer:
    "Exit codes: 0 done, 1 environment error, 2 usage error, loop.json exists without --force, the root is inside another loop\n(without --nested) or inside a state root, or the state root belongs to another project (foreign_store), 75 a step holds\nthe lease (--adopt).",
  async run(args, ctx) {
    const root = resolve(ctx.cwd, args.root ?? ".");
    const stateRoot = resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd });
    if (args.adopt) {
      if (args.force) throw new UsageError("--adopt and --force exclude each other (--adopt never writes loop.json)");
      const a = await adoptStateRoot(root, stateRoot, { actor: actorName(ctx.env) });
      if (ctx.format === "json") ctx.outJson(a);
      else {
        const what = (p: ProjectIdentity) => `the loop "${p.name}" at ${p.root === "." ? p.repo : join(p.repo, p.root)}`;
        ctx.out(
          printable(
            a.bound
              ? `bound ${a.stateRoot} to ${what(a.project)}${a.previous ? ` (it belonged to ${what(a.previous)})` : ""}`
              : `${a.stateRoot} already belongs to ${what(a.project)}; nothing to do`,
          ),
        );
      }
      return EXIT.ok;
    }
    const r = initProject(root, stateRoot, {
      force: args.force,
      nested: args.nested,
      env: ctx.env,
      actor: actorName(ctx.env),
    });
    for (const w of r.warnings) ctx.log.warn(w);
    if (ctx.format === "json") ctx.outJson({ schema: "loop/init@1", ...r });
    else {
      ctx.out(
        [
          `${r.overwrote ? "overwrote" : "wrote"} ${r.definition} (runner ${r.runner}, base ${r.base}, verify ${r.verify ?? "exit 1 — set yours"}, sandbox ${r.sandbox})`,
          ...r.guesses.map((g) =>
            g.value === null
              ? `${g.key}: nothing guessed${g.from ? ` from ${g.from}` : ""}: ${g.why}`
              : `${g.key} \`${g.value}\` (guessed from ${g.from}: ${g.why})`,
          ),
          r.protect.length
            ? `protect (proposed; keep what your verify trusts): ${r.protect.join(", ")}`
            : `protect: nothing proposed (no tests found): list what your verify trusts`,
          `state root ${r.stateRoot}`,
          `next: add items to loop.json, then run \`loop run\` (or put it in cron): it prints the loop's review and launches nothing until \`loop ctl start\``,
        ].join("\n"),
      );
    }
    return EXIT.ok;
  },
});

if (import.meta.main) await main(tool);
