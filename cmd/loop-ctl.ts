#!/usr/bin/env bun
// loop ctl <verb>: pause, resume, stop, skip, retry, cancel, start, reply — for the loop or items.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { confirmArgs, defineTool, main, resolveRoot, resolveStateRoot, workItemArg } from "../lib/shared/cli.ts";
import { EXIT, UsageError } from "../lib/shared/errors.ts";
import { actorName } from "../lib/shared/actor.ts";
import { applyCtl, DESTRUCTIVE_VERBS, ITEM_VERBS } from "../lib/control/ctl.ts";
import { CTL_VERBS, type CtlVerb } from "../lib/log/vocabulary.ts";
import { planCtl, planRetryAll } from "../lib/decisions/ctl-plan.ts";
import { resolveSelectors } from "../lib/definition/selectors.ts";
import { confirmOrRefuse, wordToType } from "../lib/control/confirm.ts";
import { printable } from "../lib/shared/printable.ts";
import { reviewLines } from "../lib/decisions/review.ts";

export const tool = defineTool({
  name: "loop-ctl",
  description: DESCRIPTIONS.ctl,
  examples: [
    ["loop ctl pause", "no new launch until resumed"],
    ["loop ctl reply --work-item fix-login \"use the v2 API\"", "answer an agent's question"],
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
    const verb = args.verb as CtlVerb;
    if (!CTL_VERBS.includes(verb)) throw new UsageError(`unknown verb "${args.verb}" (verbs: ${CTL_VERBS.join(", ")})`);
    if (verb === "reply" && !args.answer?.trim()) throw new UsageError("reply needs the answer text: loop ctl reply --work-item X \"answer\"");
    if (verb !== "reply" && args.answer !== undefined) throw new UsageError(`unexpected argument "${args.answer}"`);
    const bulk = [...(args["all-failed"] ? (["failed"] as const) : []), ...(args["all-blocked"] ? (["blocked"] as const) : [])];
    if (bulk.length && verb !== "retry") throw new UsageError(`--all-failed and --all-blocked go with retry, not ${verb}`);
    if (bulk.length && args["work-item"].length) throw new UsageError("--all-failed and --all-blocked choose the items themselves; drop --work-item");
    if (ITEM_VERBS.includes(verb) && args["work-item"].length === 0 && !bulk.length)
      throw new UsageError(`loop ctl ${verb} needs --work-item${verb === "retry" ? " (or --all-failed, --all-blocked)" : ""}`);
    if (args.yes && args["dry-run"]) throw new UsageError("--yes and --dry-run exclude each other");
    const root = resolveRoot(args.root, ctx.cwd);
    const actor = actorName(ctx.env);
    const r = await applyCtl({
      root,
      stateRoot: resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd }),
      actor,
      env: ctx.env,
      verb,
      dryRun: args["dry-run"],
      plan: (p) => {
        const keep = p.loop.settings?.keepCheckoutOnClose ?? false;
        // Chosen from the projection each time the plan is made: again under the lease.
        if (bulk.length) return planRetryAll(p, bulk, { actor, keepCheckout: keep });
        const ids = resolveSelectors(p, args["work-item"]);
        return planCtl(p, verb, ids, { text: args.answer ?? null, reason: args.reason ?? null, actor, keepCheckout: keep, accept: args.yes });
      },
      confirm: async (actions, loopName, review) => {
        // control.review: the start of a loop waiting for review shows the review and asks (docs/cli/loop-ctl.md#review-and-start).
        if (review) {
          await confirmOrRefuse({ yes: args.yes, stdinIsTTY: ctx.stdinIsTTY, what: [...reviewLines(review), ...actions.map((a) => a.effect)], command: "loop ctl start", why: "starts paid agent sessions" });
          return;
        }
        if (!DESTRUCTIVE_VERBS.includes(verb)) return;
        // It ends paid sessions: on a terminal the operator types the item's id (the loop's name for the loop or several), not just "y".
        const items = actions.map((a) => a.item);
        const typeToConfirm = items.includes(null) ? { word: loopName, what: "the loop's name" } : wordToType(items as string[], loopName);
        await confirmOrRefuse({ yes: args.yes, stdinIsTTY: ctx.stdinIsTTY, what: actions.map((a) => a.effect), command: `loop ctl ${verb}`, typeToConfirm });
      },
    });
    // A checkout kept because its changes could not be committed needs a person: say so on stderr too.
    for (const c of r.closed) if (c.kept) ctx.log.warn(`${c.item}: ${c.kept}`);
    // The review started, on stderr (--yes skips the prompt that would have shown it).
    if (r.review && args.yes) ctx.log.info(["the review of what was started:", ...reviewLines(r.review, { started: true }).map((l) => `  ${printable(l)}`)].join("\n"));
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
