// Which branch an attempt's agent works on. Pure: the launch looks at the branch (lib/step/launch.ts)
// and acts on this. An item branch lives under `loop/<name>/item/`, a folder any agent can write
// (in the sandbox too): a branch there that no session of this item worked on is not the item's
// work, whoever made it, and nothing is built on it.

/** What the launch does with the item's branch, and the commit the attempt's branch must contain from then on. */
type BranchPlan =
  /** The branch an earlier session of this epoch worked on: built on, its start kept. */
  | { kind: "reuse"; start: string }
  /** No branch: made at the start point's commit. */
  | { kind: "create"; start: string }
  /** A branch no session worked on that holds nothing the start point does not (loop made it at an older base, a launch cut short): started again at the start point's commit, silently. */
  | { kind: "restart"; start: string; found: string }
  /** A branch no session of this item worked on (another agent's, left from anything): renamed away, then made at the start point's commit. */
  | { kind: "move_aside"; start: string; found: string };

/**
 * `inherited`: the start recorded by the latest attempt of this epoch whose session started on the
 * branch (its agent's work is on it), else null. `startCommit`: the start point's commit now.
 * `branchHead`: the branch's commit, null when there is none. A branch exactly at the start point
 * is what loop itself made (a launch cut short after making it) and is used as it is. One the start
 * point contains (`headInStart`: every commit on it is the base's; loop made it at an older base,
 * and its setup failed before any session started) holds no one's work: it starts again there.
 */
export function branchAtLaunch(o: { inherited: string | null; startCommit: string; branchHead: string | null; headInStart?: boolean }): BranchPlan {
  if (o.inherited !== null && o.branchHead !== null) return { kind: "reuse", start: o.inherited };
  if (o.branchHead === null) return { kind: "create", start: o.startCommit };
  if (o.branchHead === o.startCommit) return { kind: "reuse", start: o.startCommit };
  if (o.headInStart) return { kind: "restart", start: o.startCommit, found: o.branchHead };
  return { kind: "move_aside", start: o.startCommit, found: o.branchHead };
}

/** Where a branch no session worked on is moved: beside the item branches, out of the agents' folder. */
export function asideBranchName(loopName: string, item: string, epoch: number, attempt: number, taken: (name: string) => boolean): string {
  const base = `loop/${loopName}/aside/${item}/e${epoch}-a${attempt}`;
  if (!taken(base)) return base;
  for (let k = 2; ; k++) if (!taken(`${base}-${k}`)) return `${base}-${k}`;
}
