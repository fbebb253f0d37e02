// The loop's words in one table each: the statuses an item can have (and where each sits in its
// life), what a settled item's status says about the drain, the outcomes of a landing (and which
// ones landed), how an attempt's session can end, the verbs an operator has, and the codes of the
// verdicts (why a verify, a landing, a settlement ended as it did). The payload
// schemas (events.ts), the reducer, the step's decisions, `loop ctl` and the reports take their
// lists and predicates from here, so adding a word is one edit the compiler then follows.
// Import-free: read verbs load it at start-up.

/** Where a status sits in an item's life. */
type Phase = "waiting" | "in_flight" | "settled" | "withdrawn";

/** Every status an item can have, in the order of its life, with its phase. */
const STATUS_PHASES = {
  pending: "waiting",
  launching: "in_flight",
  running: "in_flight",
  ended: "in_flight",
  needs_input: "in_flight",
  passed: "settled",
  failed: "settled",
  skipped: "settled",
  cancelled: "settled",
  blocked: "settled",
  landing_blocked: "settled",
  withdrawn: "withdrawn",
} as const satisfies Record<string, Phase>;

export type ItemStatus = keyof typeof STATUS_PHASES;
/** The statuses of one phase, as a type. */
type StatusIn<P extends Phase> = { [S in ItemStatus]: (typeof STATUS_PHASES)[S] extends P ? S : never }[ItemStatus];
type SettledOutcome = StatusIn<"settled">;

/** Every status, in the order of its life (`loop export --status` takes these). */
export const ITEM_STATUSES = Object.keys(STATUS_PHASES) as ItemStatus[];
const statusesIn = <P extends Phase>(phase: P) => ITEM_STATUSES.filter((s) => STATUS_PHASES[s] === phase) as StatusIn<P>[];
export const IN_FLIGHT: readonly StatusIn<"in_flight">[] = statusesIn("in_flight");
/** The statuses an item settles with (`item_settled`'s `outcome`). */
export const SETTLED_OUTCOMES: readonly SettledOutcome[] = statusesIn("settled");

export function isSettled(s: ItemStatus): s is SettledOutcome {
  return STATUS_PHASES[s] === "settled";
}
export function isInFlight(s: ItemStatus): s is StatusIn<"in_flight"> {
  return STATUS_PHASES[s] === "in_flight";
}

/** How the loop drains (`loop_drained`'s `outcome`): the worst of what its settled items say. */
export const DRAIN_OUTCOMES = ["Succeeded", "Failed", "Stopped"] as const;
export type DrainOutcome = (typeof DRAIN_OUTCOMES)[number];
const SETTLED_DRAIN = {
  passed: "Succeeded",
  skipped: "Succeeded",
  failed: "Failed",
  blocked: "Failed",
  landing_blocked: "Failed",
  cancelled: "Stopped",
} as const satisfies Record<SettledOutcome, DrainOutcome>;
/** What a settled status says about the drain; other statuses say nothing. */
export function drainsAs(s: ItemStatus): DrainOutcome | null {
  return isSettled(s) ? SETTLED_DRAIN[s] : null;
}

/** The outcomes of a landing (`landing_finished`), and whether the item's work landed. */
const LANDING = {
  none: "landed",
  merged: "landed",
  // The target already held the verified commit: nothing was merged, nothing changed (docs/events.md#landing_finished).
  already_contained: "landed",
  pr_opened: "landed",
  conflict: "failed",
  failed: "failed",
  blocked: "blocked",
} as const satisfies Record<string, "landed" | "failed" | "blocked">;
export type LandingOutcome = keyof typeof LANDING;
export const LANDING_OUTCOMES = Object.keys(LANDING) as LandingOutcome[];
export function landed(o: LandingOutcome): boolean {
  return LANDING[o] === "landed";
}

/**
 * How a step saw a session end (`session_ended`'s `verdict`). `drained`: gone without an exit status
 * after the watcher it ran beside was stopped (a pod's end, a node drain): the machine's doing, not counted.
 */
export const END_VERDICTS = ["exited", "never_started", "stalled", "lost", "closed", "drained"] as const;
type EndVerdict = (typeof END_VERDICTS)[number];
/** How an attempt's session ended, as the reducer records it: a step's verdict, or what another event says. */
export type AttemptEndVerdict = EndVerdict | "launch_interrupted" | "launch_failed" | "environment_fault" | "needs_input";

/** The operator's verbs (`loop ctl <verb>`). */
export const CTL_VERBS = ["start", "pause", "resume", "stop", "skip", "retry", "cancel", "reply"] as const;
export type CtlVerb = (typeof CTL_VERBS)[number];
/** The verbs that act on the loop alone: recorded by their loop events, never as `control_recorded`. */
const LOOP_ONLY_VERBS = ["pause", "resume"] as const satisfies readonly CtlVerb[];
export type ControlVerb = Exclude<CtlVerb, (typeof LOOP_ONLY_VERBS)[number]>;
/** The verbs `control_recorded` records for an item. */
export const CONTROL_VERBS = CTL_VERBS.filter((v): v is ControlVerb => !(LOOP_ONLY_VERBS as readonly string[]).includes(v));

/**
 * Why a loop waits for a person's review before it launches anything (docs/loop-json.md#control,
 * `review_required`'s reasons): it was never started, or its definition widened what it may do
 * (lib/decisions/widening.ts).
 */
export const REVIEW_CODES = [
  /** control.review is on and no person has started the loop since. */
  "not_started",
  /** landing now does more to the repository (none → pr → merge). */
  "landing_widened",
  /** A budget was raised. */
  "budget_raised",
  /** A budget was removed (nothing bounds that spend any more). */
  "budget_removed",
  /** A session, verify or setup may reach more of the network. */
  "network_widened",
  /** An item no longer runs in the sandbox. */
  "sandbox_off",
  /** A runner or model no item used before, or a runner's command changed. */
  "runner_added",
  /** control.review was turned off. */
  "review_off",
  /** tracker.query was turned on: every issue the tracker's filter selects becomes an item by itself. */
  "tracker_query_on",
] as const;
export type ReviewCode = (typeof REVIEW_CODES)[number];

/**
 * What happened on a pull request that loop can react to (docs/forge.md#reactions), each named as
 * loop.json's `reactions` names it: the checks on loop's head failed, an authorized reviewer asked
 * for changes (or commented on the diff), the PR no longer merges into its base.
 */
export const REACTION_SIGNALS = ["checksFailed", "changesRequested", "conflict"] as const;
export type ReactionSignal = (typeof REACTION_SIGNALS)[number];
/** What loop.json says to do about a signal, and what a reaction decided (`forge_reaction_recorded`'s `decision`). */
export const REACTION_DECISIONS = ["retry", "block"] as const;
export type ReactionDecision = (typeof REACTION_DECISIONS)[number];

/** What the default verify on the base tree came to (docs/events.md#base_verify_finished). */
export const BASE_VERIFY_CODES = [
  /** Setup (if any) and the verify passed on the base tree. */
  "passed",
  /** The verify exited non-zero, was killed or outlived its deadline on the base tree. */
  "failed",
  /** `workspace.setup` failed on the base tree: the verify did not run. */
  "setup_failed",
] as const;
export type BaseVerifyCode = (typeof BASE_VERIFY_CODES)[number];

/**
 * Why a verify_finished verdict is what it is (docs/events.md#verify_finished): decisions, status and
 * the page read this code; the `reason` beside it is a sentence for people, rendered from the code and
 * its facts (lib/decisions/verify-verdict.ts verifyReason), so a reworded message changes no behaviour.
 */
export const VERIFY_CODES = [
  /** The verify command exited 0 within its deadline. */
  "passed",
  /** The verify command exited with a code other than 0. */
  "exit_nonzero",
  /** It could not find a command the project's setup would have installed, and there is no workspace.setup: an environment fault, the attempt given back. */
  "setup_missing",
  /** The verify command was killed by a signal (not at its deadline). */
  "killed",
  /** The verify command could not be run: its wrapper could not be started, or could not start it. */
  "could_not_run",
  /** The verify command outlived its deadline and was ended. */
  "timed_out",
  /** The verify's process vanished without an exit status. */
  "lost",
  /** The reserved verify did not start within the launch timeout. */
  "never_started",
  /** An exit status the recorded verify's wrapper did not write (its proof does not match): never a pass. */
  "verify_result_forged",
  /** `verify: false`: the agent exited 0 and the attempt committed something. */
  "no_command_passed",
  /** `verify: false`: the agent exited non-zero (or was killed). */
  "no_command_agent_failed",
  /** `verify: false`: the agent exited 0 but the attempt changed nothing. */
  "no_command_no_change",
  /** The attempt's worktree is gone: nothing to verify. */
  "worktree_missing",
  /** The attempt's checkout is not the one loop made (or its branch was made a symbolic ref): nothing committed, no verify. */
  "worktree_replaced",
  /** The sandboxed session wrote objects that are not what their names say: none imported, no verify. */
  "objects_refused",
  /** Files of the repository's object store were rewritten during the attempt: no verify, and the loop pauses. */
  "object_store_tampered",
  /** A git command a check before the verify needed failed (a lock file the agent left, say): the check could not be made. */
  "git_failed",
  /** The attempt's branch no longer contains the commit loop made it at. */
  "start_commit_missing",
  /** The attempt's branch changes a protected path. */
  "protected_path_changed",
  /** The working copy of a protected file is not what the branch's commit holds. */
  "protected_bytes_differ",
  /** Refs loop owns were moved, deleted or created while the attempt ran. */
  "owned_ref_changed",
  /** Committing what the agent left, done on the agent's side, failed or timed out. */
  "seal_failed",
  /** The proposed head is not a commit whose objects are all present. */
  "head_invalid",
  /** The attempt adds an object larger than the documented limit. */
  "object_too_large",
  /** The attempt adds a virtualenv, a node_modules or what the workspace's setup made. */
  "setup_output_committed",
  /** Without the sandbox: the attempt changed what the workspace's setup made in the checkout. */
  "setup_output_changed",
  /** The attempt changes more files or bytes than the documented limit. */
  "change_too_large",
  /** The agent exited non-zero and changed nothing. */
  "agent_failed",
  /** The agent gave up, with its reason in $LOOP_GIVE_UP_FILE: no verify, its work kept on the branch and never landed. */
  "gave_up",
  /** The verify command changed a protected path. */
  "protected_changed_by_verify",
  /** The verify command moved the attempt's branch. */
  "branch_moved_by_verify",
] as const;
export type VerifyCode = (typeof VERIFY_CODES)[number];

/**
 * The merge gate's refusals, which a landing through a forge ends `blocked` with (lib/forge/merge-gate.ts
 * decides them; docs/forge.md#what-each-code-means says each).
 */
const FORGE_BLOCK_CODES = [
  /** The pull request was closed without merging. */
  "closed",
  /** It no longer merges into its base (a conflict). */
  "conflict",
  /** It is a draft. */
  "draft",
  /** The forge's own refusals (GitLab's detailed_merge_status): unresolved discussions, missing approvals, requested changes, a rebase needed, another merge request first, anything else it will not merge. */
  "discussions",
  "approvals",
  "changes_requested",
  "rebase",
  "blocked",
  "refused",
  /** A check on the pushed head failed. */
  "checks_failed",
  /** More checks than loop reads: it merges only what it has seen pass. */
  "checks_unread",
  /** More review feedback than loop reads (or a page it would not follow): a change request may be unread. */
  "reviews_unread",
  /** The PR's head is not the sha loop pushed: someone pushed to the branch (or force-pushed it). */
  "head_moved",
  /** The PR's base is not the loop's base. */
  "base_changed",
  /** Merged, but not by loop's rules: into another branch, or with a head loop did not push. */
  "merged_elsewhere",
  /** Checks are green, but auto-merge is not allowed in the environment of `loop run`. */
  "auto_merge_unset",
  /** The forge refused the merge in a way waiting cannot fix (405 of that kind, 422, another 4xx). */
  "merge_refused",
  /** A 401/403/404 that is not a rate limit, on any landing request. */
  "forge_refused",
  /** The landing deadline (timeouts.landing) passed. */
  "deadline",
] as const;
export type ForgeBlockCode = (typeof FORGE_BLOCK_CODES)[number];

/** Why a landing_finished ended as it did (docs/events.md#landing_finished): the outcome says what, the code why. */
export const LANDING_CODES = [
  /** Landing "none": the branch is the deliverable. */
  "branch_delivered",
  /** Merged into the loop's target (with a forge: its pull request merged into the base). */
  "merged",
  /** The target already held the verified commit: nothing merged, nothing changed. */
  "already_contained",
  /** The item branch moved since its verify: nothing merged. */
  "branch_moved",
  /** The target branch is checked out in a worktree that is not loop's landing checkout: nothing merged. */
  "target_checked_out",
  /** The landing checkout is not the one loop made: nothing merged. */
  "landing_replaced",
  /** git merge failed for another reason than a conflict. */
  "merge_failed",
  /** The target is not where loop's last merge left it: loop does not merge on top. */
  "target_moved",
  /** With a forge and landing "pr": the pull request is opened (or reused), and the item passes with it. */
  "pr_opened",
  /** With a forge: landing is no longer "merge" in loop.json, so the pull request is left open, unmerged. */
  "landing_changed",
  // "conflict" (a local merge's conflict too) and the forge's refusals.
  ...FORGE_BLOCK_CODES,
] as const;
export type LandingCode = (typeof LANDING_CODES)[number];

/** Why an item_settled settled the item (docs/events.md#item_settled); its `outcome` says how. */
export const SETTLE_CODES = [
  /** Verified, and landed (or delivered). */
  "passed",
  /** Its landing through a forge was blocked; the pull request is left open. */
  "landing_blocked",
  /** Its merge into the loop's target conflicted. */
  "merge_conflict",
  /** Its landing failed otherwise (the target moved, the branch moved, git merge failed, …). */
  "landing_failed",
  /** Its last allowed attempt failed its verify (the attempt's verify code says how). */
  "verify_failed",
  /** Its last allowed attempt's session failed: it never started, stalled, was lost or closed, or its launch failed. */
  "session_failed",
  /** Two failed attempts in a row failed the same way: the retries are stopped early. */
  "identical_failure",
  /** Its agent gave up with a reason ($LOOP_GIVE_UP_FILE): never retried blindly, it waits for a person (retry, skip or reset). */
  "gave_up",
  /** Its own budget is spent. */
  "budget_exhausted",
  /** Its session hung up on too many model answers before their usage: its gateway stopped it (docs/spend.md#the-gateway). */
  "answers_cut_off",
  /** `loop ctl skip` (or the same comment on the forge). */
  "operator_skipped",
  /** `loop ctl cancel` (or the same comment on the forge). */
  "operator_cancelled",
  /** A dependency settled without passing. */
  "dependency_failed",
  /** A dependency is not an item of the loop. */
  "dependency_unknown",
  /** A dependency was removed from the definition. */
  "dependency_removed",
  /** Its forge issue is closed. */
  "issue_closed",
  /** Its forge issue was transferred or deleted. */
  "issue_gone",
  /** Its ref names no issue (missing, or a pull request's number). */
  "issue_ref_invalid",
  /** Its forge issue could not be read for the item's timeouts.launch. */
  "issue_unreadable",
] as const;
export type SettleCode = (typeof SETTLE_CODES)[number];

/**
 * The loop's pause reason for an environment fault, as the reducer records it and every reader
 * (decisions, the page's timeline) says it: what is wrong, then how to fix it.
 */
export function faultSentence(o: { reason: string; fix: string; item: string | null; doing: "launching" | "verifying" }): string {
  return `environment fault${o.item ? ` ${o.doing} ${o.item}` : ""}: ${o.reason}. To fix: ${o.fix}`;
}

/** The moments loop moves an issue through its tracker's workflow (docs/trackers.md#states, `tracker_issue_moved`). */
export const TRACKER_MOVES = ["started", "completed", "reset"] as const;
export type TrackerMove = (typeof TRACKER_MOVES)[number];
