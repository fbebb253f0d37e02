// The built tools, loaded on demand: `loop --version` and `loop <tool>` evaluate only the modules
// they need, which is most of a compiled binary's start-up time. cmd/tools.ts loads them all (tests).
import type { Tool } from "../lib/shared/cli.ts";
import { DESCRIPTIONS, type ToolName } from "../lib/shared/tools.ts";

export { DESCRIPTIONS, type ToolName };

// biome-ignore lint/suspicious/noExplicitAny: a tool's options are its own type; the registry holds every tool
const LOADERS: Record<ToolName, () => Promise<{ tool: Tool<any> }>> = {
  init: () => import("./loop-init.ts"),
  run: () => import("./loop-run.ts"),
  status: () => import("./loop-status.ts"),
  replay: () => import("./loop-replay.ts"),
  reset: () => import("./loop-reset.ts"),
  ctl: () => import("./loop-ctl.ts"),
  logs: () => import("./loop-logs.ts"),
  plan: () => import("./loop-plan.ts"),
  add: () => import("./loop-add.ts"),
  export: () => import("./loop-export.ts"),
  backup: () => import("./loop-backup.ts"),
  serve: () => import("./loop-serve.ts"),
};

export function isTool(name: string): name is ToolName {
  return Object.hasOwn(DESCRIPTIONS, name);
}

// biome-ignore lint/suspicious/noExplicitAny: a tool's options are its own type; the registry holds every tool
export async function loadTool(name: ToolName): Promise<Tool<any>> {
  return (await LOADERS[name]()).tool;
}
