#!/usr/bin/env bun
// loop logs <item>: print an attempt's agent output (or verify output), or follow it. Read-only.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, main, resolveRoot, resolveStateRoot } from "../lib/shared/cli.ts";
import { EXIT, UsageError } from "../lib/shared/errors.ts";
import { attemptLive, findFeedback, findLog, findRefusals, logFacts, printLog, verifyEnvironment } from "../lib/reports/logs.ts";
import { printable, printableText } from "../lib/shared/printable.ts";

export const tool = defineTool({
  name: "loop-logs",
  description: DESCRIPTIONS.logs,
  examples: [
    ["loop logs fix-login", "the latest attempt's agent output"],
    ["loop logs fix-login --verify --attempt 1", "attempt 1's verify output"],
    ["loop logs fix-login --follow", "follow the running agent's output"],
  ],
  args: {
    item: { type: "positional", description: "the work item, by id or forge ref", valueHint: "item", required: true },
    attempt: { type: "string", description: "which attempt (default: the latest)", valueHint: "n" },
    follow: { type: "boolean", description: "keep printing what the session appends until it ends (Ctrl-C stops)", short: "f" },
    verify: { type: "boolean", description: "the verify command's output instead of the agent's" },
    setup: { type: "boolean", description: "workspace.setup's output (the attempt that made the worktree) instead of the agent's" },
    feedback: { type: "boolean", description: "the feedback the attempt was given by a reaction to its pull request (a rework), instead of a log" },
    network: {
      type: "boolean",
      description:
        "what the attempt's gateway refused (hosts off its network list, model requests past a budget, endpoints it does not forward), instead of a log",
    },
    json: { type: "boolean", description: "print where the log is and its size, as one JSON document, instead of the log" },
    text: { type: "boolean", description: "print the log (the default, whatever stdout is)" },
  },
  footer: [
    "The log is printed as it is on disk to a pipe or file; on a terminal, control characters are escaped.",
    "Exit codes: 0 printed (or nothing logged yet, said on stderr), 1 the file cannot be read, 2 usage,",
    "unknown item or attempt, missing or corrupt store; 130 interrupted.",
  ].join("\n"),
  async run(args, ctx) {
    let attempt: number | null = null;
    if (args.attempt !== undefined) {
      if (!/^[1-9][0-9]{0,8}$/.test(args.attempt)) throw new UsageError(`--attempt must be a positive whole number, not "${args.attempt}"`);
      attempt = Number(args.attempt);
    }
    if (args.json && args.follow) throw new UsageError("--json and --follow exclude each other");
    if (args.feedback && (args.follow || args.verify || args.setup))
      throw new UsageError(`--feedback and --${args.follow ? "follow" : args.verify ? "verify" : "setup"} exclude each other`);
    if (args.verify && args.setup) throw new UsageError("--verify and --setup exclude each other");
    const root = resolveRoot(args.root, ctx.cwd);
    const stateRoot = resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd });
    if (args.network && (args.follow || args.verify || args.feedback || args.setup))
      throw new UsageError(`--network and --${args.follow ? "follow" : args.verify ? "verify" : args.feedback ? "feedback" : "setup"} exclude each other`);
    if (args.network) {
      const n = findRefusals(stateRoot, args.item!, { attempt });
      if (args.json) {
        ctx.outJson({ schema: "loop/network@1", item: n.item, attempt: n.attempt, attempts: n.attempts, refused: n.refused, unreadable: n.unreadable });
        return EXIT.ok;
      }
      if (n.unreadable) ctx.log.warn(`${n.unreadable} line(s) of the attempt's gateway-refused.jsonl could not be read`);
      if (n.refused.length === 0) ctx.log.info(`${printable(n.item)} attempt ${n.attempt}: its gateway refused nothing (or it ran without one)`);
      const lines = n.refused.map((r) =>
        r.kind === "network"
          ? `${r.at} refused ${r.host}:${r.port} (not on the network list)`
          : r.kind === "endpoint"
            ? `${r.at} refused ${r.method} ${r.path}: not a model endpoint the gateway forwards (${r.code})`
            : `${r.at} refused a model request: ${r.reason} (${r.code})`,
      );
      if (lines.length) await ctx.outRaw(printableText(lines.join("\n") + "\n"));
      return EXIT.ok;
    }
    if (args.feedback) {
      // From the log: the digest recorded with the reaction to the attempt before this one.
      const fb = findFeedback(stateRoot, args.item!, { attempt });
      if (args.json) {
        ctx.outJson({ schema: "loop/feedback@1", item: fb.item, attempt: fb.attempt, attempts: fb.attempts, feedback: fb.feedback });
        return EXIT.ok;
      }
      if (fb.feedback === null)
        ctx.log.info(`${printable(fb.item)} attempt ${fb.attempt} was given no feedback (it was no rework after a reaction to its pull request)`);
      else await ctx.outRaw(ctx.stdoutIsTTY ? printableText(`${fb.feedback}\n`) : `${fb.feedback}\n`);
      return EXIT.ok;
    }
    const target = findLog(stateRoot, args.item!, { attempt, kind: args.verify ? "verify" : args.setup ? "setup" : "output" });
    if (args.json) {
      ctx.outJson({
        schema: "loop/logs@1",
        item: target.item,
        attempt: target.attempt,
        attempts: target.attempts,
        kind: target.kind,
        path: target.path,
        ...logFacts(target),
      });
      return EXIT.ok;
    }
    // Which environment the verify ran with: on stderr, names and PATH only (docs/cli/loop-logs.md).
    if (target.kind === "verify") for (const line of verifyEnvironment(target) ?? []) ctx.log.info(printable(line));
    // Raw to a pipe (it is the agent's own output; people grep it), escaped on a terminal.
    const decoder = new TextDecoder();
    const write = ctx.stdoutIsTTY ? (b: Uint8Array) => ctx.outRaw(printableText(decoder.decode(b, { stream: true }))) : (b: Uint8Array) => ctx.outRaw(b);
    let interrupted = false;
    const onInt = () => void (interrupted = true);
    if (args.follow) process.on("SIGINT", onInt);
    try {
      const end = await printLog({
        target,
        write,
        live: args.follow ? () => attemptLive(stateRoot, target, ctx.env) : undefined,
        interrupted: () => interrupted,
      });
      // A character cut short at the very end of the log: shown as U+FFFD, not dropped.
      if (ctx.stdoutIsTTY && end !== "reader_gone") {
        const rest = decoder.decode();
        if (rest) await ctx.outRaw(printableText(rest));
      }
      if (end === "interrupted") return EXIT.interrupted;
      const what =
        target.kind === "verify"
          ? "verify output"
          : target.kind === "setup"
            ? "setup output (workspace.setup ran in another attempt, or not at all)"
            : "agent output";
      // Information, not a problem: --quiet silences it.
      if (end === "absent") ctx.log.info(`${printable(target.item)} attempt ${target.attempt}: no ${what} yet (${printable(target.path)} does not exist)`);
      return EXIT.ok;
    } finally {
      if (args.follow) process.off("SIGINT", onInt);
    }
  },
});

if (import.meta.main) await main(tool);
