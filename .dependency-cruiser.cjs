// The direction of imports, checked by dependency-cruiser:
//   cmd/ → lib/control, lib/reports, lib/planner → lib/step → lib/forge, lib/writer (→ lib/supervisor,
//   lib/repo) → lib/decisions → lib/definition → lib/log → lib/shared;  and lib/serve (loop serve) → lib/reports
//   and below, never reaching the writer lib/log/store.ts but through lib/serve/actions.ts (→ lib/control)
// A folder imports its own files and the folders to its right, nothing else. `npm run lint:imports`
// runs it; tests/architecture.test.ts runs it from `npm test`, and proves on a copy of the tree that
// it fails on a planted upward import, cycle, sibling import, import of cmd/, effect in a decision and
// unplaced folder. Each rule lists the folders a layer MAY import, so no layer may import a new folder
// of lib/ until it is placed here.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      // A cycle has no bottom to test or read from; type-only imports count (they tie the modules'
      // meaning together just as much).
      name: "no-cycles",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      // The plumbing every tool loads at start-up (arguments, errors, paths): it knows no subsystem.
      name: "shared-imports-nothing-above",
      severity: "error",
      from: { path: "^lib/shared/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/shared/" },
    },
    {
      // The log (store, reducer, events) is the truth; what it means cannot depend on loop.json,
      // a step or a report.
      name: "log-imports-only-shared",
      severity: "error",
      from: { path: "^lib/log/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(log|shared)/" },
    },
    {
      // The definition (loop.json, refs, runners) is read against the log, never against a step.
      name: "definition-imports-only-log-and-shared",
      severity: "error",
      from: { path: "^lib/definition/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(definition|log|shared)/" },
    },
    {
      // The decisions (which item next, what a session's or a verify's observation means, what an
      // attempt leads to, what needs a person, operator verbs, budgets, guards, faults): plain data
      // in, plain data out. They read the log's and the definition's types, never a process, a file or git.
      name: "decisions-import-only-definition-log-shared",
      severity: "error",
      from: { path: "^lib/decisions/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(decisions|definition|log|shared)/" },
    },
    {
      // ... and nothing effectful below them either: no system module, no store, no file helper.
      name: "decisions-import-nothing-effectful",
      severity: "error",
      from: { path: "^lib/decisions/" },
      to: {
        path: [
          "^(node:)?(fs|fs/promises|child_process|net|http|https|dgram|dns|os|worker_threads|zlib|crypto|process|readline|tty)$",
          "^bun:",
          "^lib/log/(store|writer|snapshot|materialize|locks|ownership|integrity-worker)\\.ts$",
          "^lib/shared/(fsutil|process|failpoint|disk|state-root|paths|cli)\\.ts$",
        ],
      },
    },
    {
      // The repository's effects (every git call, worktrees, branches, merges, the object store, the
      // refs loop owns): what the tick asks of git. It judges nothing about items or sessions.
      name: "repo-imports-only-below",
      severity: "error",
      from: { path: "^lib/repo/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(repo|decisions|definition|log|shared)/" },
    },
    {
      // The forge (one module per provider, the untrusted-text rules, the merge gate) speaks to a
      // code-hosting service for a step; it knows the definition's types, never a step or a report.
      name: "forge-imports-only-below",
      severity: "error",
      from: { path: "^lib/forge/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(forge|definition|log|shared)/" },
    },
    {
      // A session's gateway (the model APIs metered and capped, the key swapped in, the proxy's
      // allow-list): a server over the definition's network rules. It knows nothing of the log,
      // the tick, processes or git; the session's wrapper runs it.
      name: "gateway-imports-only-below",
      severity: "error",
      from: { path: "^lib/gateway/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(gateway|definition|shared)/" },
    },
    {
      // Supervising processes (the agent's and verify's: starting, marking, observing, ending them,
      // their output logs) is effects on whatever the tick decides: it never imports the tick, nor
      // its siblings the forge and the repository (it may name the decisions' types: what it observes).
      name: "supervisor-imports-only-below",
      severity: "error",
      from: { path: "^lib/supervisor/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(supervisor|gateway|decisions|definition|log|shared)/" },
    },
    {
      // The services of the verbs that write (the close path and the airlock's passage it seals
      // leftovers through, run.pid, a full disk's wording): used by the tick and by `loop ctl`,
      // `loop reset` and `loop add` alike, so they sit below the tick and never import it, nor the
      // forge (a sibling), nor the verbs above.
      name: "writer-imports-only-below",
      severity: "error",
      from: { path: "^lib/writer/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(writer|supervisor|gateway|repo|decisions|definition|log|shared)/" },
    },
    {
      // A step decides and acts on the definition and the log; reports and control sit above it.
      name: "step-imports-only-below",
      severity: "error",
      from: { path: "^lib/step/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(step|writer|notify|forge|supervisor|gateway|repo|decisions|definition|log|shared)/" },
    },
    {
      // The read verbs' reports and the operator's controls are siblings over the step: neither
      // imports the other, nor cmd/.
      name: "reports-and-control-import-only-below",
      severity: "error",
      from: { path: "^lib/(reports|control)/" },
      to: { path: "^(lib|cmd)/", pathNot: ["^lib/(step|writer|forge|supervisor|repo|decisions|definition|log|shared)/", "^lib/$1/"] },
    },
    {
      // The web page (loop serve) sits beside the read verbs and may use them (the status document is
      // its header and its API), and everything below; no other folder imports it, and it never
      // imports control, the planner or cmd/ — but for lib/serve/actions.ts, below.
      name: "serve-imports-only-reports-and-below",
      severity: "error",
      from: { path: "^lib/serve/", pathNot: "^lib/serve/actions\\.ts$" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(serve|reports|step|writer|forge|supervisor|repo|decisions|definition|log|shared)/" },
    },
    {
      // The page's actions are `loop ctl`'s own function (lib/control/ctl-request.ts): one write path,
      // with the command's checks, confirmation, events and errors. lib/serve/actions.ts is the one
      // module of the page that may import control, and so reach the writer.
      name: "serve-actions-import-control-and-below",
      severity: "error",
      from: { path: "^lib/serve/actions\\.ts$" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(serve|control|reports|step|writer|forge|supervisor|repo|decisions|definition|log|shared)/" },
    },
    {
      // No module of the page imports the actions: `loop serve` loads them (a dynamic import in
      // cmd/loop-serve.ts) and hands them to the server, only when it is not --read-only.
      name: "serve-never-imports-its-actions",
      severity: "error",
      from: { path: "^lib/serve/", pathNot: "^lib/serve/actions\\.ts$" },
      to: { path: "^lib/serve/actions\\.ts$" },
    },
    {
      // A server that runs for days over a live loop holds no writer unless it takes actions: not
      // even by way of another module (the writer opens the store read-write, and would load on every
      // request). The actions (lib/serve/actions.ts) are the one way in, loaded by `loop serve` only
      // without --read-only (docs/architecture.md, tests/architecture.test.ts).
      name: "serve-never-reaches-the-writer",
      severity: "error",
      from: { path: "^lib/serve/", pathNot: "^lib/serve/actions\\.ts$" },
      to: { path: "^lib/log/store\\.ts$", reachable: true },
    },
    {
      // The planner (loop plan, add, export) sits beside control and reports: it reads the definition
      // and the log, edits loop.json, asks the forge for issues (plan --issues, add --from-issues),
      // and imports neither of its siblings.
      name: "planner-imports-only-below",
      severity: "error",
      from: { path: "^lib/planner/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(planner|step|writer|forge|supervisor|repo|decisions|definition|log|shared)/" },
    },
    {
      // What a notification channel is sent, and the sending: above the decisions, beside the forge.
      name: "notify-imports-only-below",
      severity: "error",
      from: { path: "^lib/notify/" },
      to: { path: "^(lib|cmd)/", pathNot: "^lib/(notify|decisions|definition|log|shared)/" },
    },
    {
      // Every library module sits in a folder placed in these rules: a new folder of lib/ (the forge,
      // the planner) must be given its place in the direction before it may import anything (and
      // the rules above already keep every placed folder from importing it).
      name: "lib-module-in-a-known-folder",
      severity: "error",
      from: {
        path: "^lib/",
        pathNot: "^lib/(shared|log|definition|decisions|repo|forge|gateway|supervisor|writer|step|notify|reports|control|planner|serve)/",
      },
      to: {},
    },
    {
      // cmd/ holds the tools (thin: parse, call lib, render) and the multi-call entry; only the
      // entry, the tests, the build and the benchmarks load a tool.
      name: "cmd-imported-only-by-cmd-tests-scripts-bench",
      severity: "error",
      from: { pathNot: "^(cmd|tests|scripts|bench)/" },
      to: { path: "^cmd/" },
    },
  ],
  options: {
    // Type-only imports are dependencies of the architecture too.
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^node_modules/" },
    tsConfig: { fileName: "tsconfig.json" },
  },
};
