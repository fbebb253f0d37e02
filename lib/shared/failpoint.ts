// Failure injection (docs/failpoints.md): with LOOP_FAILPOINT=<name> the process SIGKILLs itself at that
// point, exactly as a power cut or OOM kill would, so tests can prove the next step recovers.
// LOOP_FAILPOINT may list several names separated by commas; `<name>=throw` throws an ordinary
// error there instead, a bug in loop, to prove that one spends nothing and is reported as internal.
// docs/failpoints.md lists them all; tests/step/failpoints.e2e.test.ts keeps that page and this list in
// step, and kills a process at each.

/** Labels of appends: each gives `<label>:before_commit` (inside the transaction) and `<label>:after_commit`. */
export const COMMIT_LABELS = [
  "import",
  "start",
  "reopen",
  "block",
  "drain",
  "reserve",
  "session_started",
  "launch_failed",
  "fault",
  "session_ended",
  "needs_input",
  "requeue",
  "verify_reserve",
  "verify_started",
  "verify",
  "landing",
  "settle",
  "close",
  "notify",
  "ctl",
  "forge",
  "reaction",
  "reset",
  "usage",
  "budget",
  "watch",
  "relocate",
  "base_verify",
] as const;

/** Points around side effects. */
export const EFFECT_POINTS = [
  "lease:after_acquire",
  "materialize:before",
  "materialize:after_state",
  "launch:before_reserve",
  "launch:after_worktree",
  "launch:after_spawn",
  "airlock:after_seal",
  "airlock:after_import",
  "verify:before",
  "verify:after_reserve",
  "verify:after_spawn",
  "verify:before_record",
  "landing:before_merge",
  "landing:after_merge",
  "landing:after_push",
  "landing:after_pr",
  "landing:before_merge_call",
  "landing:after_merge_call",
  "reaction:after_seen",
  "close:before_kill",
  "close:after_kill",
  "close:after_worktree",
  "reset:after_close",
  "reset:after_files",
  "reset:after_branch",
  "budget:before_close",
  "watch:after_proof",
  "relocate:after_move",
  "trash:after_move",
  "spare:after_move",
  "spare:after_records",
  "setup:during_copy",
  "base_verify:after_start",
] as const;

export type CommitLabel = (typeof COMMIT_LABELS)[number];
/** Every failpoint's name: `failpoint` takes nothing else, so the compiler holds each call site to the list. */
type Failpoint = (typeof EFFECT_POINTS)[number] | `${CommitLabel}:${"before" | "after"}_commit`;
export const FAILPOINTS: readonly Failpoint[] = [
  ...EFFECT_POINTS,
  ...COMMIT_LABELS.flatMap((l) => [`${l}:before_commit` as const, `${l}:after_commit` as const]),
];

/** Each armed name, and what happens there: `<name>` kills the process, `<name>=throw` throws an ordinary error (a bug in loop). */
const armed = new Map(
  (process.env.LOOP_FAILPOINT ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => (s.endsWith("=throw") ? ([s.slice(0, -"=throw".length), "throw"] as const) : ([s, "kill"] as const))),
);

export function failpoint(name: Failpoint): void {
  if (armed.size === 0) return;
  const how = armed.get(name);
  if (how === undefined) return;
  if (how === "throw") throw new Error(`failpoint ${name}: an injected bug`);
  process.stderr.write(`loop: failpoint ${name}: killing self\n`);
  process.kill(process.pid, "SIGKILL");
}
