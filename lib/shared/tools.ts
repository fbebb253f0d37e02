// The tools of the command-line contract and what each does: one list for the multi-call entry's
// help, each tool's own --help and the registry that loads them (cmd/registry.ts).
export const DESCRIPTIONS = {
  init: "Write a starting loop.json and create the state root (.loop/) with its store",
  run: "Advance the loop by one crash-safe step: settle the item in flight, launch the next, drain when done",
  status: "Report the loop and every work item from the log's projection, and check them against the log",
  replay: "Re-fold the event log: hash chain, gaps, legality, determinism, projection tables and files",
  reset: "Erase what loop remembers about work items (session, control, ledgers, checkout; branch archived) so they start over",
  ctl: "Control the loop or its items: start, pause, resume, stop, skip, retry, cancel, reply",
  logs: "Print an attempt's agent output or verify output, or follow it while the session runs",
  plan: "Draft work items from a brief (and forge issues) with one planner call; review, then append them to loop.json",
  add: "Append work items to loop.json (by hand, from a text file, or from forge issues), editing only its items array",
  export: "Print loop.json's work items with their status, as JSON or as the text format loop add reads",
  backup: "Copy loop.db to a new file: a consistent point-in-time backup, taken without stopping the loop",
  serve: "Serve a web page of the loop (a live timeline of every item's attempts, loop ctl's verbs unless --read-only), JSON APIs and Prometheus metrics",
} as const;

export type ToolName = keyof typeof DESCRIPTIONS;
