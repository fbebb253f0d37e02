// The built tools, loaded on demand: `loop --version` and `loop <tool>` evaluate only the modules
// they need, which is most of a compiled binary's start-up time. cmd/tools.ts loads them all (tests).
import type { Tool } from "../lib/cli.ts";

export const DESCRIPTIONS = {
  init: "Write a starting loop.json and create the state root (.loop/) with its store",
  run: "Advance the loop by one crash-safe step: settle the item in flight, launch the next, drain when done",
  status: "Report the loop and every work item from the log's projection, and check them against the log",
  replay: "Re-fold the event log: hash chain, gaps, legality, determinism, projection tables and files",
  ctl: "Control the loop or its items: start, pause, resume, stop, skip, retry, cancel, reply",
} as const;

export type ToolName = keyof typeof DESCRIPTIONS;

const LOADERS: Record<ToolName, () => Promise<{ tool: Tool<any> }>> = {
  init: () => import("./loop-init.ts"),
  run: () => import("./loop-run.ts"),
  status: () => import("./loop-status.ts"),
  replay: () => import("./loop-replay.ts"),
  ctl: () => import("./loop-ctl.ts"),
};

export function isTool(name: string): name is ToolName {
  return Object.hasOwn(DESCRIPTIONS, name);
}

export async function loadTool(name: ToolName): Promise<Tool<any>> {
  return (await LOADERS[name]()).tool;
}
