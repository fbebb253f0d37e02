// A verify that could not find a command the project's setup would have installed, with no
// `workspace.setup` (lib/decisions/setup-missing.ts decides): the facts gathered (the verify log's
// end, the start point's root as loop's own git reads it), and the pause recorded in one commit:
// the verdict, the session closed (its checkout kept), the attempt given back uncounted, the loop
// paused with the fault `setup_missing`.
import type { Payload } from "../log/events.ts";
import type { VerifyCode } from "../log/vocabulary.ts";
import { type ItemState, requireAttempt } from "../log/projection.ts";
import { readRegularFile } from "../shared/fsutil.ts";
import { printable } from "../shared/printable.ts";
import { commitRoot, projectFacts } from "../repo/project-facts.ts";
import { type SetupMissing, setupMissing, setupMissingFault } from "../decisions/setup-missing.ts";
import { append, closeInStep, repoOf, type StepContext, type StepOutcome } from "./context.ts";

/** How much of the verify log's end is read: the shell's line is among the last ones. */
const TAIL_BYTES = 16 * 1024;

/** The setup_missing verdict on a verify that exited `exitCode`, or null (a setup is set, or it failed for another reason). */
export function setupMissingOf(ctx: StepContext, it: ItemState, o: { exitCode: number | null; log: string; startHead: string }): SetupMissing | null {
  if (ctx.def.setup !== undefined || o.exitCode === null || o.exitCode === 0) return null;
  const r = readRegularFile(o.log, { noLinks: true });
  if (r.kind !== "ok") return null;
  const output = r.bytes.subarray(Math.max(0, r.bytes.length - TAIL_BYTES)).toString("utf8");
  // Most failed verifies say neither: the start point is read (a lockfile parsed) only when one does.
  if (!/not found|No module named/.test(output)) return null;
  // What the setup would have run on: the start point's files, never what the agent wrote.
  const start = requireAttempt(it).start ?? o.startHead;
  const root = commitRoot(repoOf(ctx), start);
  const project = projectFacts(root.names, root.read, [], { bins: true });
  return setupMissing({ exitCode: o.exitCode, output, hasSetup: false, project });
}

/** Record the verdict, close the session (the checkout stays), give the attempt back and pause the loop: one commit. */
export async function pauseSetupMissing(
  ctx: StepContext,
  it: ItemState,
  verdict: Payload<"verify_finished"> & { code: VerifyCode; noProgress: boolean },
  m: SetupMissing,
): Promise<StepOutcome> {
  const attempt = requireAttempt(it);
  // The line is the verify's output: escaped before it is part of the loop's reason, which terminals print.
  const fault = setupMissingFault({ ...m, line: printable(m.line), item: it.id, attempt: attempt.n });
  const requeued = `environment fault (setup_missing): \`${m.command}\` not found and no workspace.setup`;
  const c = await closeInStep(ctx, { it, reason: requeued, removeCheckout: false });
  ctx.errors.push(`${it.id}: ${verdict.reason}`);
  ctx.options.log.error(`${it.id}: ${fault.message}`);
  const p = append(
    ctx,
    [
      { type: "verify_finished", item: it.id, payload: verdict },
      ...(c?.events ?? []),
      { type: "item_requeued", item: it.id, payload: { attempt: attempt.n, reason: requeued, failed: false, resetBudget: false } },
      { type: "environment_fault", item: it.id, payload: { kind: fault.kind, attempt: null, reason: fault.message, fix: fault.fix } },
    ],
    "verify",
  );
  return { action: "paused", item: it.id, reason: p.loop.reason };
}
