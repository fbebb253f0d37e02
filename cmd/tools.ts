// Every tool, loaded eagerly: for the tests (the multi-call entry loads tools on demand, cmd/registry.ts).
import type { Tool } from "../lib/shared/cli.ts";
import { tool as init } from "./loop-init.ts";
import { tool as status } from "./loop-status.ts";
import { tool as replay } from "./loop-replay.ts";
import { tool as run } from "./loop-run.ts";
import { tool as reset } from "./loop-reset.ts";
import { tool as ctl } from "./loop-ctl.ts";

export const TOOLS: Record<string, Tool<any>> = { init, run, status, replay, reset, ctl };
