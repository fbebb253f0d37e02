#!/usr/bin/env bun
// loop run: one bounded, crash-safe dispatch step (or, with --watch, steps in the foreground).
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, main, resolveRoot, resolveStateRoot } from "../lib/shared/cli.ts";
import { BusyLease, EXIT, UsageError } from "../lib/shared/errors.ts";
import { CHAINED_STEP_VAR } from "../lib/step/chain.ts";
import { quietPrints, runStep, type RunResult, stepExitCode } from "../lib/step/step.ts";
import { watchSteps } from "../lib/step/watch.ts";
import { renderRun } from "../lib/reports/render-run.ts";
import { reviewLines } from "../lib/decisions/review.ts";
import { printable } from "../lib/shared/printable.ts";
import { actorName } from "../lib/shared/actor.ts";
import { parseDuration } from "../lib/definition/duration.ts";
import { makeUndumpable } from "../lib/supervisor/undumpable.ts";
import { takeOwnEnvironment } from "../lib/step/own-environment.ts";

export const tool = defineTool({
  name: "loop-run",
  description: DESCRIPTIONS.run,
  examples: [
    ["loop run", "take one step: launch, observe, verify or land, whatever is next"],
    ["* * * * * cd /srv/api && loop run --quiet", "the crontab line: a step a minute, silent until something needs a person"],
    ["loop run --watch --interval 10s", "keep stepping in the foreground until the loop drains or pauses"],
  ],
  args: {
    watch: { type: "boolean", description: "repeat steps in the foreground until the loop drains or pauses" },
    interval: { type: "string", description: "wait between --watch steps (default 30s)", valueHint: "duration" },
    forever: { type: "boolean", description: "with --watch: keep watching after the loop drains or pauses" },
    quiet: {
      type: "boolean",
      short: "q",
      description: "no result for a step that exits 0, nor for one that finds what the last step reported; only warnings and errors on stderr",
    },
  },
  footer:
    "Exit codes: 0 step done and all is well (including recorded item failures and no-ops), 1 an\nenvironment error, or the loop needs a person (waiting for review: `loop ctl start`; paused on a\nquestion or by an environment fault, a landing failed, drained Failed), 2 invalid loop.json or usage, 75 busy (another step holds the\nlease, this step lost it, or another --watch is running), 130 interrupted (--watch).\nWith --quiet a step that exits 0 prints no result (cron stays silent until something is wrong),\nnor does one that finds the loop needing a person for what the previous step reported (exit 1 still).",
  async run(args, ctx) {
    // Loop's keys are in this process's environment and memory, and the agents run as its user: no
    // process of theirs may read them (docs/threat-model.md#where-each-secret-lives).
    await makeUndumpable();
    // Kept here for what loop does itself; out of what its git and tmux inherit. Only this process's
    // own environment (a test that runs the tool in process passes one of its own).
    const env = ctx.env === process.env ? takeOwnEnvironment() : ctx.env;
    if ((args.interval || args.forever) && !args.watch) throw new UsageError("--interval and --forever need --watch");
    let intervalMs = 30_000;
    if (args.interval) {
      try {
        intervalMs = parseDuration(args.interval);
      } catch (err) {
        throw new UsageError(`--interval: ${(err as Error).message}`);
      }
    }
    const root = resolveRoot(args.root, ctx.cwd);
    const stateRoot = resolveStateRoot({ root, flag: args["state-root"], env, cwd: ctx.cwd });
    const options = {
      root,
      stateRoot,
      actor: actorName(env),
      env,
      log: ctx.log,
      chained: env[CHAINED_STEP_VAR] === "1",
      // tracker.query's append is `loop add`'s own (loaded only when a step has issues to append).
      appendItems: async (items: { ref: string; prompt: string; from: string }[]) =>
        (await import("../lib/planner/append.ts")).appendItems({ root, items, dryRun: false }).added,
    };
    const step = () => runStep(options);
    // --quiet: a step that exits 0 prints nothing, nor one that finds the loop needing a person for
    // what the previous step already reported: cron mails (and a log grows) once per trouble.
    // A watcher that stops because the loop needs a person prints that last step all the same: it says why it stopped.
    const render = (r: RunResult) => {
      if (args.quiet && !quietPrints(r) && !(args.watch && !args.forever && stepExitCode(r) !== 0)) return;
      // control.review: the review, on stderr, whatever the format (docs/cli/loop-run.md#review-and-start); a watcher says it once.
      if (r.review && (!args.watch || r.attentionChanged))
        ctx.log.warn(["the loop waits for review; nothing was launched:", ...reviewLines(r.review).map((l) => `  ${printable(l)}`)].join("\n"));
      if (ctx.format === "json") ctx.outJson(r);
      else ctx.out(renderRun(r));
    };
    if (!args.watch) {
      let r: RunResult;
      try {
        r = await step();
      } catch (err) {
        if (!(err instanceof BusyLease) || !err.chained) throw err;
        // A chained step holds the lease: not news. Under --quiet (cron) it is said nowhere; at a
        // terminal the step waits for it a few seconds, as a person would, then runs.
        if (args.quiet) return EXIT.busy;
        if (!ctx.stdoutIsTTY) throw err;
        r = await afterChained(step, err, ctx.log);
      }
      render(r);
      return stepExitCode(r);
    }
    return watchSteps({ root, stateRoot, step, onResult: render, log: ctx.log, intervalMs, forever: args.forever, actor: options.actor });
  },
});

/** How long a step at a terminal waits for a chained step to end: such a step takes a second or two. */
const CHAINED_WAIT_MS = 10_000;

/** At a terminal: say who holds the lease, wait for the chained step, and run; still held after the wait, the busy error. */
async function afterChained(step: () => Promise<RunResult>, first: BusyLease, log: { info(m: string): void }): Promise<RunResult> {
  log.info(`a chained step (pid ${first.holder.pid}) holds the lease; waiting up to ${CHAINED_WAIT_MS / 1000} s for it to end`);
  let last: BusyLease = first;
  for (const until = Date.now() + CHAINED_WAIT_MS; Date.now() < until; ) {
    await Bun.sleep(250);
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof BusyLease)) throw err;
      last = err;
    }
  }
  throw last;
}

if (import.meta.main) await main(tool);
