#!/usr/bin/env bun
// loop backup <file>: a consistent copy of loop.db, made from a read-only snapshot. Read-only.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, main, resolveRoot, resolveStateRoot } from "../lib/shared/cli.ts";
import { EXIT } from "../lib/shared/errors.ts";
import { resolve } from "node:path";
import { backupStore } from "../lib/reports/backup.ts";
import { printable } from "../lib/shared/printable.ts";

export const tool = defineTool({
  name: "loop-backup",
  description: DESCRIPTIONS.backup,
  examples: [
    ["loop backup --file /backups/loop-$(date +%F).db", "a consistent copy of the store while steps run"],
    ["loop backup --file /backups/loop.db --json", "the same, answering in JSON"],
  ],
  args: {
    file: { type: "positional", description: "the new file to write the copy to (never overwritten)", valueHint: "file", required: true },
  },
  footer: [
    "The copy holds every event committed when it was taken; it is made with VACUUM INTO from a",
    "read-only snapshot, so a step may run meanwhile and nothing under the state root changes.",
    "Exit codes: 0 written, 1 the copy could not be written, 2 usage (the file exists, its directory",
    "does not), missing, corrupt or outdated store.",
  ].join("\n"),
  run(args, ctx) {
    const root = resolveRoot(args.root, ctx.cwd);
    const stateRoot = resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd });
    const report = backupStore(stateRoot, resolve(ctx.cwd, args.file!));
    if (ctx.format === "json") ctx.outJson(report);
    else
      ctx.out(
        printable(`backed up ${report.stateRoot}/loop.db to ${report.path} (${report.bytes} bytes, ${report.seq} events, head ${report.hash.slice(0, 12)})`),
      );
    return EXIT.ok;
  },
});

if (import.meta.main) await main(tool);
