// The tool table shared by the multi-call entry and the tests.
import type { Tool } from "../lib/cli.ts";
import { tool as init } from "./loop-init.ts";
import { tool as status } from "./loop-status.ts";
import { tool as replay } from "./loop-replay.ts";
import { tool as run } from "./loop-run.ts";
import { tool as ctl } from "./loop-ctl.ts";

export const TOOLS: Record<string, Tool<any>> = { init, run, status, replay, ctl };

export function toolFor(name: string): Tool<any> | undefined {
  return Object.hasOwn(TOOLS, name) ? TOOLS[name] : undefined;
}
