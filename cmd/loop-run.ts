#!/usr/bin/env bun
// loop run: one bounded, crash-safe dispatch step (or, with --watch, steps in the foreground).
import { printable } from "../lib/shared/printable.ts";
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { existsSync } from "node:fs";
import { defineTool, EXIT, main, resolveRoot, resolveStateRoot, UsageError } from "../lib/shared/cli.ts";
import { BusyError, DefinitionError } from "../lib/shared/errors.ts";
import { preflight, runStep, type RunResult } from "../lib/step/step.ts";
import { claimRunPid, releaseRunPid, selfRunPid } from "../lib/step/run-pid.ts";
import { renderRun } from "../lib/reports/render-run.ts";
import { actorName } from "../lib/shared/actor.ts";
import { parseDuration } from "../lib/definition/duration.ts";
import { statePaths } from "../lib/shared/paths.ts";
import { ensureStateRoot } from "../lib/shared/state-root.ts";
import { projectOf, refuseForeignStateRoot } from "../lib/log/ownership.ts";

export const tool = defineTool({
  name: "loop-run",
  description: DESCRIPTIONS.run,
  args: {
    watch: { type: "boolean", description: "repeat steps in the foreground until the loop drains or pauses" },
    interval: { type: "string", description: "wait between --watch steps (default 30s)", valueHint: "duration" },
    forever: { type: "boolean", description: "with --watch: keep watching after the loop drains or pauses" },
  },
  footer:
    "Exit codes: 0 step done (including recorded item failures and no-ops), 1 environment error,\n2 invalid loop.json or usage, 75 busy (another step holds the lease, this step lost it, or another\n--watch is running), 130 interrupted (--watch).",
  async run(args, ctx) {
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
    const stateRoot = resolveStateRoot(root, args["state-root"], ctx.env, ctx.cwd);
    const opts = { root, stateRoot, actor: actorName(ctx.env), env: ctx.env, log: ctx.log };
    const emit = (r: RunResult) => (ctx.format === "json" ? ctx.outJson(r) : ctx.out(renderRun(r)));
    const once = async (): Promise<{ code: number; r: RunResult | null }> => {
      try {
        const r = await runStep(opts);
        emit(r);
        return { code: r.errors.length ? EXIT.problem : EXIT.ok, r };
      } catch (err) {
        // A single step reports busy like any error (exit 75); a watcher waits for the next turn,
        // also after a step lost its lease to another `loop run` (it outlived the lease). So it
        // does when loop.json is invalid for a moment (an editor saving it): it was valid when the
        // watcher started (preflight), and the step refused before touching anything.
        if (!args.watch) throw err;
        if (err instanceof BusyError) {
          ctx.log.warn(err.message);
          return { code: EXIT.busy, r: null };
        }
        // A root that is gone (the repository deleted) is no edit in progress: the watcher stops.
        if (err instanceof DefinitionError && existsSync(root)) {
          ctx.log.warn(`${err.lines().map(printable).join("\n")}\n(the watcher tries again in ${args.interval ?? "30s"})`);
          return { code: EXIT.usage, r: null };
        }
        throw err;
      }
    };
    if (!args.watch) return (await once()).code;

    const def = preflight(root); // before run.pid: a watcher that cannot step creates nothing
    refuseForeignStateRoot(stateRoot, projectOf(root, def.name)); // nor in another project's state root
    const pidFile = statePaths(stateRoot).runPid;
    ensureStateRoot(stateRoot);
    const me = selfRunPid();
    claimRunPid(pidFile, me);
    let stopping = false;
    let wake: (() => void) | null = null;
    const onSignal = () => {
      stopping = true;
      wake?.();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    let code: number = EXIT.ok;
    try {
      for (;;) {
        const { code: c, r } = await once();
        code = c;
        const done = r && ["drained", "paused", "stopped"].includes(r.action);
        if (stopping || (done && !args.forever)) break;
        await new Promise<void>((resolve) => {
          // A signal wakes the wait early; clearing the timer lets the process exit right away
          // instead of being held open for the rest of the interval.
          const timer = setTimeout(resolve, intervalMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        if (stopping) break;
      }
    } finally {
      releaseRunPid(pidFile, me);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
    return stopping ? EXIT.interrupted : code;
  },
});

if (import.meta.main) await main(tool);
