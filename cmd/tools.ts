// Every tool, loaded eagerly: for the tests (the multi-call entry loads tools on demand, cmd/registry.ts).
import type { Tool } from "../lib/shared/cli.ts";
import { tool as init } from "./loop-init.ts";
import { tool as status } from "./loop-status.ts";
import { tool as replay } from "./loop-replay.ts";
import { tool as run } from "./loop-run.ts";
import { tool as reset } from "./loop-reset.ts";
import { tool as ctl } from "./loop-ctl.ts";
import { tool as logs } from "./loop-logs.ts";
import { tool as plan } from "./loop-plan.ts";
import { tool as add } from "./loop-add.ts";
import { tool as exportTool } from "./loop-export.ts";
import { tool as backup } from "./loop-backup.ts";
import { tool as serve } from "./loop-serve.ts";

// biome-ignore lint/suspicious/noExplicitAny: a tool's options are its own type; the table holds every tool
export const TOOLS: Record<string, Tool<any>> = {
  init,
  run,
  status,
  replay,
  reset,
  ctl,
  logs,
  plan,
  add,
  export: exportTool,
  backup,
  serve,
};
