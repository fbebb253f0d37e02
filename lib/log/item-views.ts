// What holds of an item in a given status, as types (issue 47): the projection's ItemState is one
// flat record whose session is null before a first reservation, and whose current attempt's end,
// verify and landing are null until recorded. The phases of a step take these views instead, so the
// compiler proves present what a phase relies on. Each narrowing checks the status and the field
// once and returns the same object as its view; a miss is a bug in loop (the reducer gives every
// such item the field), thrown as an internal error that names the item and what was missing.
import { type AttemptRecord, type ItemState, requireAttempt, type SessionRecord, type VerifyRun } from "./projection.ts";

/** An item whose session is recorded: every item from its first reservation on (a reset forgets it). */
export type SessionItem = ItemState & { session: SessionRecord };
/** Reserved, its start not recorded yet (attempt_reserved; observeLaunching). */
export type LaunchingItem = SessionItem & { status: "launching" };
/** Its session recorded started (session_started; observeRunning). */
export type RunningItem = SessionItem & { status: "running" };
/** Its session ended, the attempt's fate not decided yet: verify, land, settle (afterSession). */
export type EndedItem = SessionItem & { status: "ended" };

type Ended = NonNullable<AttemptRecord["end"]>;
type Verified = NonNullable<AttemptRecord["verify"]>;
type Landed = NonNullable<AttemptRecord["landing"]>;

/** An attempt whose session's end is recorded (session_ended, launch_failed, needs_input, …). */
type EndedAttempt = AttemptRecord & { end: Ended };
/** An ended attempt whose verify has its verdict (verify_finished): what landing reads. */
type VerifiedAttempt = EndedAttempt & { verify: Verified };
/** A verified attempt whose landing ended (landing_finished): what settling reads. */
type LandedAttempt = VerifiedAttempt & { landing: Landed };
/** An attempt whose verify command is reserved (verify_reserved): observed until its verdict. */
type VerifyingAttempt = AttemptRecord & { verifyRun: VerifyRun };
/** A verify command recorded started (verify_started): its wrapper's pid and its deadline. */
export type StartedVerify = VerifyRun & { pid: number; deadline: string };

/** The bug a failed narrowing is: the item, its status, and what the view needed. */
function missing(it: ItemState, what: string): Error {
  return new Error(`item ${it.id} (${it.status}) has no ${what}: the log gives every such item one`);
}

/** Whether the item's session is recorded (for readers to which an item without one is ordinary). */
export function hasSession(it: ItemState): it is SessionItem {
  return it.session !== null;
}

function inStatus<S extends ItemState["status"]>(it: ItemState, status: S): it is ItemState & { status: S } {
  return it.status === status;
}

/** The item as one whose session is recorded; none is a bug. */
export function sessionItem(it: ItemState): SessionItem {
  if (!hasSession(it)) throw missing(it, "session");
  return it;
}

/** The item in `status`, as its view: another status, or no session, is a bug (the phase was chosen by its status). */
export function itemIn<S extends "launching" | "running" | "ended">(it: ItemState, status: S): SessionItem & { status: S } {
  if (!inStatus(it, status)) throw new Error(`item ${it.id} is ${it.status}, not ${status}`);
  if (!hasSession(it)) throw missing(it, "session");
  return it;
}

const isEnded = (a: AttemptRecord): a is EndedAttempt => a.end !== null;
const isVerified = (a: AttemptRecord): a is VerifiedAttempt => a.end !== null && a.verify !== null;
const isLanded = (a: AttemptRecord): a is LandedAttempt => a.end !== null && a.verify !== null && a.landing !== null;
const isVerifying = (a: AttemptRecord): a is VerifyingAttempt => a.verifyRun !== null;

/** The item's current attempt, its end recorded; an attempt not ended is a bug. */
export function endedAttempt(it: ItemState): EndedAttempt {
  const a = requireAttempt(it);
  if (!isEnded(a)) throw missing(it, `end of attempt ${a.n}`);
  return a;
}

/** The item's current attempt, ended and its verify's verdict recorded; anything less is a bug. */
export function verifiedAttempt(it: ItemState): VerifiedAttempt {
  const a = endedAttempt(it);
  if (!isVerified(a)) throw missing(it, `verdict of attempt ${a.n}'s verify`);
  return a;
}

/** The item's current attempt, verified and its landing recorded; anything less is a bug. */
export function landedAttempt(it: ItemState): LandedAttempt {
  const a = verifiedAttempt(it);
  if (!isLanded(a)) throw missing(it, `landing of attempt ${a.n}`);
  return a;
}

/** Whether the verify command's start is recorded (verify_started gives it its pid and deadline together). */
export function isStarted(run: VerifyRun): run is StartedVerify {
  return run.pid !== null && run.deadline !== null;
}

/** The item's current attempt, its verify command reserved; none is a bug. */
export function verifyingAttempt(it: ItemState): VerifyingAttempt {
  const a = requireAttempt(it);
  if (!isVerifying(a)) throw missing(it, `verify reserved for attempt ${a.n}`);
  return a;
}
