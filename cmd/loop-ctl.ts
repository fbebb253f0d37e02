#!/usr/bin/env bun
// loop ctl <verb>: pause, resume, stop, skip, retry, cancel, start, reply — for the loop or items.
// The rules are lib/control/ctl-request.ts's (the page's actions use them too): this reads the flags and prints.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { confirmArgs, defineTool, main, resolveRoot, resolveStateRoot, workItemArg } from "../lib/shared/cli.ts";
import { EXIT, UsageError } from "../lib/shared/errors.ts";
import { actorName } from "../lib/shared/actor.ts";
import { CTL_VERBS } from "../lib/log/vocabulary.ts";
import { checkCtlRequest, type CtlRequest, runCtl } from "../lib/control/ctl-request.ts";
import { printable } from "../lib/shared/printable.ts";
import { reviewLines } from "../lib/decisions/review.ts";

export const tool = defineTool({
  name: "loop-ctl",
  description: DESCRIPTIONS.ctl,
  examples: [
    ["loop ctl pause", "no new launch until resumed"],
    ['loop ctl reply --work-item fix-login "use the v2 API"', "answer an agent's question"],
    ["loop ctl retry --all-failed --yes", "run every failed item again"],
  ],
  args: {
    verb: { type: "positional", description: `one of: ${CTL_VERBS.join(", ")}`, valueHint: "verb", required: true },
    answer: { type: "positional", description: "the answer, for reply", valueHint: "text" },
    ...workItemArg,
    reason: { type: "string", description: "why (recorded; shown by loop status for pause and stop)", valueHint: "text" },
    "all-failed": { type: "boolean", description: "retry: every failed item, instead of --work-item" },
    "all-blocked": { type: "boolean", description: "retry: every blocked item, instead of --work-item" },
    ...confirmArgs,
  },
  footer: [
    "Verbs: start [--work-item X] · pause [--reason R] · resume · stop [--work-item X] · skip --work-item X",
    "       retry (--work-item X | --all-failed | --all-blocked) · cancel --work-item X · reply --work-item X <text>",
    "stop, skip and cancel end live sessions: they need --yes, or a confirmation on a terminal.",
    "start of a loop waiting for review (control.review) shows the review and asks the same way.",
    "resume --yes, when the verify failed on the base, accepts that failure for this verify and setup.",
    "Exit codes: 0 done or nothing to do, 1 refused (e.g. retry of a passed item), 2 usage,",
    "3 declined at the prompt, 75 a step holds the lease (try again).",
  ].join("\n"),
  async run(args, ctx) {
    const request: CtlRequest = {
      verb: args.verb ?? "",
      items: args["work-item"],
      text: args.answer,
      reason: args.reason,
      bulk: [...(args["all-failed"] ? (["failed"] as const) : []), ...(args["all-blocked"] ? (["blocked"] as const) : [])],
      dryRun: args["dry-run"],
      accept: args.yes,
    };
    // Bad input is said before the loop is looked for.
    checkCtlRequest(request);
    if (args.yes && args["dry-run"]) throw new UsageError("--yes and --dry-run exclude each other");
    const root = resolveRoot(args.root, ctx.cwd);
    const r = await runCtl({
      root,
      stateRoot: resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd }),
      env: ctx.env,
      actor: actorName(ctx.env),
      request,
      confirmation: { kind: "terminal", yes: args.yes, stdinIsTTY: ctx.stdinIsTTY },
    });
    // A checkout kept because its changes could not be committed needs a person: say so on stderr too.
    for (const c of r.closed) if (c.kept) ctx.log.warn(`${c.item}: ${c.kept}`);
    // The review started, on stderr (--yes skips the prompt that would have shown it).
    if (r.review && args.yes)
      ctx.log.info(["the review of what was started:", ...reviewLines(r.review, { started: true }).map((l) => `  ${printable(l)}`)].join("\n"));
    if (ctx.format === "json") ctx.outJson(r);
    else
      ctx.out(
        [
          ...r.actions.map((a) => `${r.dryRun ? "would " : a.noop ? "no-op: " : ""}${a.effect}`),
          ...r.closed.map((c) => `closed ${c.item} attempt ${c.attempt}: ${c.how}${c.worktreeRemoved ? ", worktree removed" : ""}`),
        ]
          .map(printable)
          .join("\n"),
      );
    return EXIT.ok;
  },
});

if (import.meta.main) await main(tool);
