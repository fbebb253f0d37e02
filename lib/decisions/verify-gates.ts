// The gates an ended attempt passes before its verify runs, in order (docs/cli/loop-run.md, step 5,
// and docs/threat-model.md): security policy, so its order is here, in one place, and nowhere else.
// Pure: lib/step/verify.ts gathers each fact when this asks for it (the effects: ending what the
// agent left running, importing its objects, committing its leftovers, asking git) and records what
// this decides. A fact is asked for only once every gate before it has passed, so an effect that
// depends on an earlier one (the leftovers are committed before the protected paths are compared)
// runs after it, and none runs past a gate that refuses.
import type { VerifyVerdict } from "./verify-verdict.ts";

/** A check git could not make (a lock file the agent left, say): git's message. Anything else is thrown by the gatherer. */
type GitFailed = { gitFailed: string };

/** The protected-path check's finding (lib/step/protect.ts): a branch without its start commit, or protected paths it changes. */
type ProtectedPaths = Extract<VerifyVerdict, { code: "start_commit_missing" | "protected_path_changed" }>;
type ProtectedBytes = Extract<VerifyVerdict, { code: "protected_bytes_differ" }>;

/** What is known of an ended attempt; a fact not gathered yet is absent. */
export interface GateFacts {
  /** The attempt's worktree exists. */
  worktree?: boolean;
  /** Objects the sandboxed session wrote that are not what their names say, described; null: none (or no sandbox). */
  objects?: string | null;
  /** Files of the object store rewritten during the attempt (lib/repo/object-store.ts). */
  store?: string[] | GitFailed;
  /** The agent's leftovers committed: the branch's head, or why not (`replaced`: the checkout is not the one loop made). */
  leftovers?: { head: string } | { replaced: string } | GitFailed;
  /** The protected paths the branch changes (or its start commit missing); null: none. */
  protectedPaths?: ProtectedPaths | null | GitFailed;
  /** Protected files whose working copy is not the commit's; null: none. */
  protectedBytes?: ProtectedBytes | null | GitFailed;
  /** Refs loop owns that moved while the attempt ran, described. */
  ownedRefs?: string[] | GitFailed;
  /** `verify: false` only: the commits the attempt made on its branch. */
  commits?: number | GitFailed;
}

export type GateFact = keyof GateFacts;

/** What the item's definition and guards say about the judgement. */
interface GateOptions {
  /** The item has a verify command (false: `verify: false`, judged from the agent's exit and commits). */
  command: boolean;
  /** The agent's exit code (session_ended). */
  exitCode: number | null;
  /** The no-progress guard is on (docs/spend.md#guards). */
  noProgressGuard: boolean;
}

type VerifyGate =
  /** Gather this fact, then ask again. */
  | { kind: "gather"; fact: GateFact }
  /** The first gate that refuses: the attempt fails with this verdict, no verify runs. */
  | { kind: "refuse"; verdict: VerifyVerdict }
  /** `verify: false`: the verdict judged without a command; `noProgress`: the guard names it. */
  | { kind: "judged"; verdict: VerifyVerdict; noProgress: boolean }
  /** Every gate passed: run the verify command. */
  | { kind: "run" };

function failed(fact: unknown): fact is GitFailed {
  return typeof fact === "object" && fact !== null && "gitFailed" in fact;
}

/** The next thing to do for an ended attempt whose verify has not started, from what is known of it. */
export function verifyGate(f: GateFacts, o: GateOptions): VerifyGate {
  const gather = (fact: GateFact): VerifyGate => ({ kind: "gather", fact });
  const refuse = (verdict: VerifyVerdict): VerifyGate => ({ kind: "refuse", verdict });
  // 1. Nothing to verify without the worktree.
  if (f.worktree === undefined) return gather("worktree");
  if (!f.worktree) return refuse({ code: "worktree_missing" });
  // 2. A sandboxed session's objects, each proven, before anything reads its branch.
  if (f.objects === undefined) return gather("objects");
  if (f.objects !== null) return refuse({ code: "objects_refused", named: f.objects });
  // 3. The object store before anything of it is read (a refusal that also pauses the loop).
  if (f.store === undefined) return gather("store");
  if (failed(f.store)) return refuse({ code: "git_failed", check: "object_store", message: f.store.gitFailed });
  if (f.store.length) return refuse({ code: "object_store_tampered", objects: f.store });
  // 4. The agent's leftovers committed, in the checkout loop made only: the verify sees what the branch holds.
  if (f.leftovers === undefined) return gather("leftovers");
  if ("replaced" in f.leftovers) return refuse({ code: "worktree_replaced", at: "leftovers", message: f.leftovers.replaced });
  if (failed(f.leftovers)) return refuse({ code: "git_failed", check: "leftovers", message: f.leftovers.gitFailed });
  // 5. Protected paths: its start commit kept, no protected path changed, whatever its verify would say.
  if (f.protectedPaths === undefined) return gather("protectedPaths");
  if (failed(f.protectedPaths)) return refuse({ code: "git_failed", check: "protected_paths", message: f.protectedPaths.gitFailed });
  if (f.protectedPaths) return refuse(f.protectedPaths);
  // 6. The bytes the verify will run are the commit's, for every protected file.
  if (f.protectedBytes === undefined) return gather("protectedBytes");
  if (failed(f.protectedBytes)) return refuse({ code: "git_failed", check: "protected_bytes", message: f.protectedBytes.gitFailed });
  if (f.protectedBytes) return refuse(f.protectedBytes);
  // 7. Refs loop owns that moved while the agent ran.
  if (f.ownedRefs === undefined) return gather("ownedRefs");
  if (failed(f.ownedRefs)) return refuse({ code: "git_failed", check: "owned_refs", message: f.ownedRefs.gitFailed });
  if (f.ownedRefs.length) return refuse({ code: "owned_ref_changed", changes: f.ownedRefs });
  if (o.command) return { kind: "run" };
  // `verify: false`: passed when the agent exited 0 and the attempt left a change on its branch.
  if (f.commits === undefined) return gather("commits");
  if (failed(f.commits)) return refuse({ code: "git_failed", check: "commits", message: f.commits.gitFailed });
  const verdict: VerifyVerdict =
    o.exitCode !== 0 ? { code: "no_command_agent_failed", exitCode: o.exitCode } : f.commits > 0 ? { code: "no_command_passed", commits: f.commits } : { code: "no_command_no_change" };
  return { kind: "judged", verdict, noProgress: verdict.code !== "no_command_passed" && f.commits === 0 && o.noProgressGuard };
}
