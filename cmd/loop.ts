#!/usr/bin/env bun
// The multi-call entry: `loop <tool> …`, or invoked through a link named `loop-<tool>`.
//
// How the invoked name is found (checked by experiment with `bun build --compile`, Bun 1.4):
//   compiled binary, called through a link `dist/loop-status -> loop`:
//     process.argv0    = "dist/loop-status"   (what the caller exec'd: the link's name)   <- used
//     process.argv[0]  = "bun", process.argv[1] = "/$bunfs/root/loop"   (useless here)
//     process.execPath = ".../dist/loop"      (the resolved binary, never the link)
//   script, `bun cmd/loop.ts`: process.argv0 is whatever started bun ("bun", or a path to it),
//     process.argv[1] is the script's real path                                             <- used
import { basename } from "node:path";
import { VERSION } from "../lib/shared/version.ts";
import { printable } from "../lib/shared/printable.ts";
import { DESCRIPTIONS, isTool, loadTool } from "./registry.ts";
import { didYouMean } from "../lib/shared/suggest.ts";

// Everything else is imported on demand (see cmd/registry.ts): start-up time is module evaluation.
const TOOLS = DESCRIPTIONS;
/** Run a tool; `prog` is the name it was invoked as (`loop run`, or a link's `loop-run`), for its help and messages. */
async function main(name: keyof typeof DESCRIPTIONS, args: string[], prog: string): Promise<void> {
  const [{ main: runMain }, tool] = await Promise.all([import("../lib/shared/cli.ts"), loadTool(name)]);
  return runMain(tool, args, prog);
}
function toolFor(name: string): keyof typeof DESCRIPTIONS | undefined {
  return isTool(name) ? name : undefined;
}

/** Every tool of the command-line contract (docs/cli/README.md): one list, lib/shared/tools.ts. */
export const CONTRACT_TOOLS = Object.keys(DESCRIPTIONS) as (keyof typeof DESCRIPTIONS)[];

/** True when running inside a `bun build --compile` executable (its modules live in /$bunfs). */
export function isCompiled(mainPath: string = Bun.main): boolean {
  return mainPath.startsWith("/$bunfs/") || /^[A-Za-z]:[\\/]~BUN[\\/]/.test(mainPath);
}

/** The name this process was invoked as, without directory or .ts/.js/.exe suffix. */
export function invokedName(argv0: string, argv1: string | undefined, compiled: boolean): string {
  return basename((compiled ? argv0 : argv1) || "loop").replace(/\.(ts|js|exe)$/i, "");
}

/**
 * The tool a link name selects: `loop-<tool>` for a tool of the contract, else null (then the first
 * argument names the tool, so a binary renamed `loop-linux-x64` still works).
 */
export function toolFromName(self: string): keyof typeof DESCRIPTIONS | null {
  if (!self.startsWith("loop-")) return null;
  return toolFor(self.slice(5)) ?? null;
}

/**
 * `loop --version` (or `-V`), alone or with `--json` or `--text` in either order: the format asked
 * for (text unless --json: the version is what scripts compare against), an error for anything
 * else beside it, or null when the arguments do not start with a version request.
 */
export function versionRequest(args: string[]): "text" | "json" | { error: string } | null {
  const isVersion = (a: string | undefined) => a === "--version" || a === "-V";
  const lead = args.slice(0, 2);
  if (!isVersion(args[0]) && !(lead.length === 2 && isVersion(lead[1]) && (lead[0] === "--json" || lead[0] === "--text"))) return null;
  const rest = [...args];
  rest.splice(rest.findIndex(isVersion), 1);
  if (rest.includes("--json") && rest.includes("--text")) return { error: "--json and --text exclude each other" };
  const other = rest.find((a) => a !== "--json" && a !== "--text");
  if (other !== undefined) return { error: `loop --version takes only --json or --text, not ${JSON.stringify(other)}` };
  if (rest.length > 1) return { error: `${rest[0]} was given ${rest.length} times; give it once` };
  return rest[0] === "--json" ? "json" : "text";
}

const USAGE = `loop ${VERSION}: drive a backlog of coding-agent work items, one crash-safe step at a time

Usage: loop <tool> [options]     (or call a link named loop-<tool>)

Tools:
${Object.entries(TOOLS)
  .map(([n, d]) => `  ${n.padEnd(8)} ${d}`)
  .join("\n")}

Run \`loop <tool> --help\` for a tool's options. Exit codes: 0 ok, 1 problem found, 2 usage,
3 declined, 75 busy, 130 interrupted (docs/cli/).
`;

/** stdout before any tool runs. A reader that went away (`loop --help | head -1`) is not an error. */
async function print(text: string): Promise<void> {
  try {
    await Bun.write(Bun.stdout, text);
  } catch (err) {
    if ((err as { code?: string }).code === "EPIPE") return;
    // A full or broken stdout (ENOSPC, EIO): one line, not a stack trace.
    process.stderr.write(`loop: cannot write to stdout: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}

/**
 * A usage error before any tool runs, in the format every tool reports errors in (docs/cli/README.md#errors):
 * a JSON error line under --json, or without --text when stdout is not a terminal; else one line of text.
 */
async function fail(prog: string, message: string, args: string[] = []): Promise<void> {
  const { errorLine, requestedFormat } = await import("../lib/shared/cli.ts");
  if (requestedFormat(args, { isTTY: require("node:tty").isatty(1) }) === "json") process.stderr.write(errorLine("usage", message));
  else process.stderr.write(`${prog}: ${printable(message)}\n`); // it may quote what was typed
  process.exitCode = 2;
}

async function entry(self: string, args: string[]): Promise<void> {
  const linked = toolFromName(self);
  if (linked !== null && args.length === 1 && args[0] === "--version") {
    await print(`${VERSION}\n`); // the fast path: nothing else is loaded
    return;
  }
  if (linked !== null) return main(linked, args, self);
  const [first, ...rest] = args;
  // Hidden entries used by sessions: the compiled binary has no separate scripts to run.
  if (first === "__demo-agent") {
    const { runDemoAgent } = await import("../lib/supervisor/demo-agent.ts");
    process.exitCode = await runDemoAgent(process.env);
    return;
  }
  if (first === "__bridge") {
    const { runBridge } = await import("../lib/supervisor/bridge.ts");
    process.exit(await runBridge(rest));
  }
  if (first === "__session") {
    // Exit explicitly: the wrapper's signal listeners would otherwise keep it alive.
    const { runSessionWrapper } = await import("../lib/supervisor/session-wrapper.ts");
    process.exit(await runSessionWrapper(rest));
  }
  const version = versionRequest(args);
  if (version !== null) {
    if (typeof version === "object") return fail("loop", version.error, args);
    if (version === "text") return print(`${VERSION}\n`);
    const { currentVersionDocument } = await import("../lib/shared/build-info.ts");
    return print(JSON.stringify(currentVersionDocument()) + "\n");
  }
  if (first === "--help" || first === "-h" || first === "help") {
    if (first === "help" && rest[0] !== undefined) {
      const t = toolFor(rest[0]);
      if (t) return main(t, ["--help"], `loop ${t}`);
      return fail("loop", `unknown tool ${JSON.stringify(rest[0])}${didYouMean(rest[0], Object.keys(TOOLS))} (tools: ${Object.keys(TOOLS).join(", ")})`, rest);
    }
    await print(USAGE);
    return;
  }
  if (first === undefined) {
    // A usage error: the usage goes to stderr, stdout stays empty.
    process.stderr.write(USAGE);
    process.exitCode = 2;
    return;
  }
  if (first.startsWith("-")) return fail("loop", `unknown option ${JSON.stringify(first)} (usage: loop <tool> [options])`, args);
  const t = toolFor(first);
  if (t && rest.length === 1 && rest[0] === "--version") {
    await print(`${VERSION}\n`);
    return;
  }
  if (t) return main(t, rest, `loop ${t}`);
  return fail("loop", `unknown tool ${JSON.stringify(first)}${didYouMean(first, Object.keys(TOOLS))} (tools: ${Object.keys(TOOLS).join(", ")})`, args);
}

if (import.meta.main) await entry(invokedName(process.argv0, process.argv[1], isCompiled()), process.argv.slice(2));
