// The tools of the command-line contract and what each does: one list for the multi-call entry's
// help, each tool's own --help and the registry that loads them (cmd/registry.ts).
export const DESCRIPTIONS = {
  init: "Write a starting loop.json and create the state root (.loop/) with its store",
  run: "Advance the loop by one crash-safe step: settle the item in flight, launch the next, drain when done",
  status: "Report the loop and every work item from the log's projection, and check them against the log",
  replay: "Re-fold the event log: hash chain, gaps, legality, determinism, projection tables and files",
  reset: "Erase what loop remembers about work items (session, control, ledgers, checkout; branch archived) so they start over",
  ctl: "Control the loop or its items: start, pause, resume, stop, skip, retry, cancel, reply",
} as const;

export type ToolName = keyof typeof DESCRIPTIONS;
