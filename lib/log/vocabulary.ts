// The loop's words in one table each: the statuses an item can have (and where each sits in its
// life), what a settled item's status says about the drain, the outcomes of a landing (and which
// ones landed), how an attempt's session can end, and the verbs an operator has. The payload
// schemas (events.ts), the reducer, the step's decisions, `loop ctl` and the reports take their
// lists and predicates from here, so adding a word is one edit the compiler then follows.
// Import-free: read verbs load it at start-up.

/** Where a status sits in an item's life. */
export type Phase = "waiting" | "in_flight" | "settled" | "withdrawn";

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
 * What happened on a pull request that loop can react to (docs/forge.md#reactions), each named as
 * loop.json's `reactions` names it: the checks on loop's head failed, an authorized reviewer asked
 * for changes (or commented on the diff), the PR no longer merges into its base.
 */
export const REACTION_SIGNALS = ["checksFailed", "changesRequested", "conflict"] as const;
export type ReactionSignal = (typeof REACTION_SIGNALS)[number];
/** What loop.json says to do about a signal, and what a reaction decided (`forge_reaction_recorded`'s `decision`). */
export const REACTION_DECISIONS = ["retry", "block"] as const;
export type ReactionDecision = (typeof REACTION_DECISIONS)[number];
