#!/usr/bin/env bun
// The multi-call entry: `loop <tool> …`, or invoked through a link named `loop-<tool>`.
import { basename } from "node:path";
import { main } from "../lib/cli.ts";
import { VERSION } from "../lib/version.ts";
import { TOOLS, toolFor } from "./tools.ts";
import { runDemoAgent } from "../lib/demo-agent.ts";
import { runSessionWrapper } from "../lib/session-wrapper.ts";

const USAGE = `loop ${VERSION}: drive a backlog of coding-agent work items, one crash-safe step at a time

Usage: loop <tool> [options]     (or call a link named loop-<tool>)

Tools:
${Object.entries(TOOLS).map(([n, t]) => `  ${n.padEnd(8)} ${t.description}`).join("\n")}

Run \`loop <tool> --help\` for a tool's options. Exit codes: 0 ok, 1 problem found, 2 usage,
3 declined, 75 busy, 130 interrupted (docs/cli/).
`;

async function entry(argv0: string, args: string[]): Promise<void> {
  const self = basename(argv0).replace(/\.(ts|js|exe)$/, "");
  const viaLink = self.startsWith("loop-") ? self.slice(5) : null;
  if (viaLink) {
    const t = toolFor(viaLink);
    if (t) return main(t, args);
  }
  const [first, ...rest] = args;
  // Hidden entries used by sessions: the compiled binary has no separate scripts to run.
  if (first === "__demo-agent") {
    process.exitCode = await runDemoAgent(process.env);
    return;
  }
  if (first === "__session") {
    process.exitCode = await runSessionWrapper(rest);
    return;
  }
  if (first === "--version" || first === "-V") {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    process.stdout.write(USAGE);
    if (first === undefined) process.exitCode = 2;
    return;
  }
  const t = toolFor(first);
  if (!t) {
    process.stderr.write(`loop: unknown tool "${first}" (tools: ${Object.keys(TOOLS).join(", ")})\n`);
    process.exitCode = 2;
    return;
  }
  return main(t, rest);
}

await entry(process.argv0 === "bun" ? process.argv[1] ?? "loop" : process.argv0, process.argv.slice(2));
