// Recording a full disk in a step (docs/cli/loop-run.md#a-full-disk): the pause, the error when even
// that cannot be recorded, and the files written only if the disk takes them. What a full disk is,
// and the reserve, are lib/shared/disk.ts.
import { StoreError } from "../shared/errors.ts";
import { append, materialize, projection, type StepContext, type StepOutcome } from "./context.ts";
import { diskFullCause, diskSpace, LOW_SPACE_BYTES } from "../shared/disk.ts";
import { diskFullFault, type FullDisk } from "../decisions/faults.ts";

/**
 * A full disk where even the fault could not be recorded: said as such, with where, instead of
 * SQLite's words. A step says so by default; `loop ctl` and `loop reset` name themselves (`who`) and
 * what to do once there is room (`then`).
 */
export function unrecorded(
  err: unknown,
  stateRoot: string,
  o: { who: string; then: string } = { who: "this step could record nothing, not even that", then: "the next `loop run` goes on from where the log is" },
): StoreError | null {
  const space = diskSpace(stateRoot);
  if (!diskFullCause(err, space !== null && space.free < LOW_SPACE_BYTES)) return null;
  const f = diskFullFault({ path: stateRoot, mount: space?.mount ?? stateRoot, free: space?.free ?? null });
  return new StoreError("io_error", `${f.message}; ${o.who} (${(err as Error).message}). To fix: free space on it; ${o.then}`);
}

/** The full disk an error of the step was caused by, or null when it was something else. */
export function diskFullMet(err: unknown, stateRoot: string): FullDisk | null {
  const space = diskSpace(stateRoot);
  if (!diskFullCause(err, space !== null && space.free < LOW_SPACE_BYTES)) return null;
  return { path: stateRoot, mount: space?.mount ?? stateRoot, free: space?.free ?? null };
}

/**
 * Pause the loop for a full disk (environment_fault, kind disk_full: nothing else is recorded, no
 * session observed or ended, no attempt spent). A loop already paused for it is left as it is; a
 * loop that is not running (paused by someone, stopped, drained) cannot be paused by a fault: the
 * full disk is then an error of the step (exit 1).
 */
export function pauseForDiskFull(ctx: StepContext, disk: FullDisk): StepOutcome {
  const p = projection(ctx);
  if (p.loop.state === "paused" && p.loop.fault?.kind === "disk_full") return { action: "paused", item: p.loop.current, reason: p.loop.reason };
  const f = diskFullFault(disk);
  if (p.loop.state !== "running") {
    const said = `${f.message}. To fix: ${f.fix}`;
    ctx.errors.push(said);
    ctx.options.log.error(said);
    const action = p.loop.state === "paused" ? "paused" : p.loop.state === "stopped" ? "stopped" : p.loop.state === "drained" ? "drained" : "idle";
    return { action, item: p.loop.current, reason: p.loop.state === "drained" ? p.loop.outcome : p.loop.reason };
  }
  const q = append(ctx, [{ type: "environment_fault", payload: { kind: f.kind, attempt: null, reason: f.message, fix: f.fix } }], "fault");
  return { action: "paused", item: q.loop.current, reason: q.loop.reason };
}

/** state.json and RUNLOG.md after the disk filled: written if it takes them, else the next step repairs them. */
export function materializeIfRoom(ctx: StepContext): void {
  try {
    materialize(ctx);
  } catch (err) {
    if (!diskFullMet(err, ctx.options.stateRoot)) throw err;
    ctx.options.log.warn(`state.json and RUNLOG.md were not rewritten: ${(err as Error).message} (the next step writes them)`);
  }
}
