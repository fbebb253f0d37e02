// The gates an ended attempt passes before its verify runs, in order (docs/cli/loop-run.md, step 5,
// and docs/threat-model.md#the-airlock): security policy, so its order is here, in one place, and
// nowhere else. Pure: lib/step/verify.ts gathers each fact when this asks for it (the effects: ending
// what the agent left running, the airlock, asking git) and records what this decides. A fact is
// asked for only once every gate before it has passed, so an effect that depends on an earlier one
// (the airlock writes the branch before the protected paths are compared) runs after it, and none
// runs past a gate that refuses.
import type { VerifyVerdict } from "./verify-verdict.ts";

/** A check git could not make (a lock file the agent left, say): git's message. Anything else is thrown by the gatherer. */
type GitFailed = { gitFailed: string };

/** The protected-path check's finding (lib/step/protect.ts): a branch without its start commit, or protected paths it changes. */
type ProtectedPaths = Extract<VerifyVerdict, { code: "start_commit_missing" | "protected_path_changed" }>;

/** What came through the airlock (lib/step/checkout.ts airlock): the head loop wrote the item branch to, or why nothing did. */
export type AirlockFact =
  | { head: string; startHead: string }
  | Extract<VerifyVerdict, { code: "seal_failed" | "objects_refused" | "object_too_large" | "head_invalid" | "owned_ref_changed" | "worktree_replaced" }>;

/** What the attempt adds, from its start to its head (lib/step/verify.ts: one git diff and one size listing). */
export interface AttemptChanges {
  /** Paths it adds or changes. */
  paths: string[];
  /** Bytes of the blobs it adds. */
  bytes: number;
}

/** What is known of an ended attempt; a fact not gathered yet is absent. */
export interface GateFacts {
  /** The attempt's checkout: there (the folder loop made), missing, or something else in its place (a link, a file). */
  worktree?: "present" | "missing" | { replaced: string };
  /** Files of the object store rewritten during the attempt (lib/repo/object-store.ts); always empty in the sandbox, where the store is read-only. */
  store?: string[] | GitFailed;
  /** The airlock: what the agent left sealed on its side, its objects proven, the branch written. */
  airlock?: AirlockFact | GitFailed;
  /** The protected paths the branch changes (or its start commit missing); null: none. */
  protectedPaths?: ProtectedPaths | null | GitFailed;
  /** What the attempt adds (for the setup-output and size gates). */
  changes?: AttemptChanges | GitFailed;
  /** Entries of what setup made that are not as setup left them (lib/repo/products.ts); always empty in the sandbox, where they are read-only. */
  products?: string[];
  /** Refs loop owns that moved while the attempt ran, described. */
  ownedRefs?: string[] | GitFailed;
  /** `verify: false` only: the commits the attempt made on its branch. */
  commits?: number | GitFailed;
  /** What the agent wrote in $LOOP_GIVE_UP_FILE, cleaned and capped; null: it did not give up. */
  gaveUp?: string | null;
}

export type GateFact = keyof GateFacts;

/** The most an attempt may add before it is refused, `change_too_large` (docs/threat-model.md#the-airlock). */
export const CHANGE_LIMITS = { files: 20_000, bytes: 200 * 2 ** 20 } as const;

/** What the item's definition, guards and checkout say about the judgement. */
interface GateOptions {
  /** The item has a verify command (false: `verify: false`, judged from the agent's exit and commits). */
  command: boolean;
  /** The agent's exit code (session_ended). */
  exitCode: number | null;
  /** The no-progress guard is on (docs/spend.md#guards). */
  noProgressGuard: boolean;
  /** What `workspace.setup` made in the checkout (top-most paths): never part of an item's work. */
  products: readonly string[];
}

type VerifyGate =
  /** Gather this fact, then ask again. */
  | { kind: "gather"; fact: GateFact }
  /** The first gate that refuses: the attempt fails with this verdict, no verify runs. */
  | { kind: "refuse"; verdict: VerifyVerdict }
  /** `verify: false`: the verdict judged without a command; `noProgress`: the guard names it. */
  | { kind: "judged"; verdict: VerifyVerdict; noProgress: boolean }
  /** Every gate passed: run the verify command on `head`. */
  | { kind: "run"; head: string };

function failed(fact: unknown): fact is GitFailed {
  return typeof fact === "object" && fact !== null && "gitFailed" in fact;
}

/** What a setup made, or looks like a setup's output wherever it is: a virtualenv (its pyvenv.cfg), a node_modules folder. */
function setupOutputIn(paths: readonly string[], products: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    const parts = p.split("/");
    if (products.some((root) => p === root || p.startsWith(`${root}/`)) || parts.includes("node_modules") || parts.at(-1) === "pyvenv.cfg") out.push(p);
  }
  return out;
}

/** The next thing to do for an ended attempt whose verify has not started, from what is known of it. */
export function verifyGate(f: GateFacts, o: GateOptions): VerifyGate {
  const gather = (fact: GateFact): VerifyGate => ({ kind: "gather", fact });
  const refuse = (verdict: VerifyVerdict): VerifyGate => ({ kind: "refuse", verdict });
  // 1. Nothing to verify without the worktree.
  if (f.worktree === undefined) return gather("worktree");
  if (f.worktree === "missing") return refuse({ code: "worktree_missing" });
  if (typeof f.worktree === "object") return refuse({ code: "worktree_replaced", at: "checkout", message: f.worktree.replaced });
  // 2. The object store, before anything of it is read (without the sandbox: a refusal that also pauses the loop).
  if (f.store === undefined) return gather("store");
  if (failed(f.store)) return refuse({ code: "git_failed", check: "object_store", message: f.store.gitFailed });
  if (f.store.length) return refuse({ code: "object_store_tampered", objects: f.store });
  // 3. The airlock: sealed on the agent's side, its objects proven, its head a value, the branch loop's to write.
  if (f.airlock === undefined) return gather("airlock");
  if (failed(f.airlock)) return refuse({ code: "git_failed", check: "leftovers", message: f.airlock.gitFailed });
  if ("code" in f.airlock) return refuse(f.airlock);
  const { head, startHead } = f.airlock;
  // 3b. An agent that gave up: what it did is on the branch (the airlock wrote it) for a person to
  // read, and nothing else is judged: no verify runs, and the attempt never lands.
  if (f.gaveUp === undefined) return gather("gaveUp");
  if (f.gaveUp !== null) return refuse({ code: "gave_up", text: f.gaveUp });
  // 4. Protected paths: its start commit kept, no protected path changed, whatever its verify would say.
  if (f.protectedPaths === undefined) return gather("protectedPaths");
  if (failed(f.protectedPaths)) return refuse({ code: "git_failed", check: "protected_paths", message: f.protectedPaths.gitFailed });
  if (f.protectedPaths) return refuse(f.protectedPaths);
  // 5. What setup made never lands, and nothing lands past the size limits without a word.
  if (f.changes === undefined) return gather("changes");
  if (failed(f.changes)) return refuse({ code: "git_failed", check: "changes", message: f.changes.gitFailed });
  const output = setupOutputIn(f.changes.paths, o.products);
  if (output.length) return refuse({ code: "setup_output_committed", paths: output });
  if (f.changes.paths.length > CHANGE_LIMITS.files || f.changes.bytes > CHANGE_LIMITS.bytes)
    return refuse({ code: "change_too_large", files: f.changes.paths.length, bytes: f.changes.bytes, limits: CHANGE_LIMITS });
  // …and the verify runs on what setup made as it made it, never on what the agent rewrote there.
  if (f.products === undefined) return gather("products");
  if (f.products.length) return refuse({ code: "setup_output_changed", paths: f.products });
  // 6. Refs loop owns that moved while the agent ran.
  if (f.ownedRefs === undefined) return gather("ownedRefs");
  if (failed(f.ownedRefs)) return refuse({ code: "git_failed", check: "owned_refs", message: f.ownedRefs.gitFailed });
  if (f.ownedRefs.length) return refuse({ code: "owned_ref_changed", changes: f.ownedRefs });
  // 7. An agent that failed and changed nothing is a failed attempt, never a verify of the start point.
  if (o.exitCode !== 0 && head === startHead) return refuse({ code: "agent_failed", exitCode: o.exitCode });
  if (o.command) return { kind: "run", head };
  // `verify: false`: passed when the agent exited 0 and the attempt left a change on its branch.
  if (f.commits === undefined) return gather("commits");
  if (failed(f.commits)) return refuse({ code: "git_failed", check: "commits", message: f.commits.gitFailed });
  const verdict: VerifyVerdict =
    o.exitCode !== 0
      ? { code: "no_command_agent_failed", exitCode: o.exitCode }
      : f.commits > 0
        ? { code: "no_command_passed", commits: f.commits }
        : { code: "no_command_no_change" };
  return { kind: "judged", verdict, noProgress: verdict.code !== "no_command_passed" && f.commits === 0 && o.noProgressGuard };
}
