// The refs loop owns (docs/state.md#the-refs-loop-owns), and whether they are where loop left them.
// An item branch belongs to its agent while its session is open. Once the session is closed, the
// branch of a passed item (a deliverable) must hold the commit session_closed recorded (`head`);
// any other item's branch must still exist (a person may add to a work in progress between its
// attempts, but only `loop reset` takes a branch away). With landing "merge" (no forge), the target
// must hold the commit of the last merge loop made into it.
// Anything else — an agent that moved another item's branch, pointed a landed branch at a foreign
// commit, deleted a branch, or moved the target — is a change loop did not make, and is named:
// the attempt in flight fails (lib/step/verify.ts), a launch pauses the loop (an environment fault),
// landing refuses to merge on top (lib/step/land.ts), and `loop status` reports it.
import type { Database } from "bun:sqlite";
import { gitTry } from "./git.ts";

/** One ref and the commit loop left it at; `item` is the item whose branch it is (null: the target). */
interface OwnedRef {
  ref: string;
  commit: string;
  item: string | null;
  /** It must stay at `commit`; otherwise only its deletion is a change. */
  exact: boolean;
}

export interface RefChange extends OwnedRef {
  /** Where it is now; null when it is gone. */
  now: string | null;
}

/** What the expectations are built from: the items' sessions (as the projection or state.json has them). */
export interface OwnedRefInput {
  items: { id: string; status: string; session: { branch?: string; closed: { head?: string | null } | null } | null; branch?: string | null }[];
  /** With landing "merge" and no forge: the target and the commit loop last merged into it, else null. */
  landed: { target: string; commit: string } | null;
}

/** The refs loop owns and where it left them. Pure. */
export function ownedRefs(o: OwnedRefInput): OwnedRef[] {
  const out: OwnedRef[] = [];
  for (const it of o.items) {
    const head = it.session?.closed?.head;
    const branch = it.session?.branch ?? it.branch;
    // An open session's branch is its agent's to move; a branch recorded absent expects nothing.
    if (typeof head === "string" && branch) out.push({ ref: `refs/heads/${branch}`, commit: head, item: it.id, exact: it.status === "passed" });
  }
  if (o.landed) out.push({ ref: `refs/heads/${o.landed.target}`, commit: o.landed.commit, item: null, exact: true });
  return out;
}

/** The owned refs that are not where loop left them, given where each is now. Pure. */
export function refChanges(owned: OwnedRef[], now: ReadonlyMap<string, string>): RefChange[] {
  return owned.filter((r) => (r.exact ? now.get(r.ref) !== r.commit : !now.has(r.ref))).map((r) => ({ ...r, now: now.get(r.ref) ?? null }));
}

/** One line naming a change, for a verdict, a pause reason or a finding. */
export function describeRefChange(c: RefChange): string {
  const what = c.item ? `item ${c.item}'s branch ${c.ref.slice("refs/heads/".length)}` : `the landing target ${c.ref.slice("refs/heads/".length)}`;
  return c.now === null ? `${what} was deleted (loop left it at ${c.commit})` : `${what} was moved from ${c.commit} to ${c.now}`;
}

/** How to put a change back, as the git command. */
export function restoreCommand(c: RefChange): string {
  return `git update-ref ${c.ref} ${c.commit}`;
}

/**
 * Where each of `refs` points now, in one git call (a ref that does not exist is absent). A ref
 * made symbolic (`ref: refs/heads/main`, an agent's doing) reads as `symbolic ref to <target>`:
 * never a commit loop left it at, whatever commit its target holds.
 */
export function readRefs(repo: string, refs: string[]): Map<string, string> {
  const out = new Map<string, string>();
  if (refs.length === 0) return out;
  const r = gitTry(repo, ["for-each-ref", "--format=%(objectname)%09%(symref)%09%(refname)", ...refs]);
  if (r.code !== 0) throw new Error(`cannot read the refs loop owns in ${repo}: ${r.stderr.trim()}`);
  const wanted = new Set(refs);
  for (const line of r.stdout.split("\n")) {
    const [commit, symref, ref] = line.split("\t");
    // for-each-ref matches prefixes too: only the exact refs count.
    if (commit && ref !== undefined && wanted.has(ref)) out.set(ref, symref ? `symbolic ref to ${symref}` : commit);
  }
  return out;
}

/**
 * The commit loop last merged into `target` (the newest `landing_finished` with outcome merged and
 * that target), or null. Read from the log, newest first: it is not part of the projection.
 */
export function lastLanded(db: Database, target: string): { target: string; commit: string } | null {
  const row = db
    .query(
      "SELECT json_extract(payload, '$.commit') AS landed FROM events WHERE type = 'landing_finished' AND json_extract(payload, '$.outcome') = 'merged' AND json_extract(payload, '$.target') = ? ORDER BY seq DESC LIMIT 1",
    )
    .get(target) as { landed: unknown } | null;
  return typeof row?.landed === "string" ? { target, commit: row.landed } : null;
}
