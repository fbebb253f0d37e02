// Recording a full disk in a step (docs/cli/loop-run.md#a-full-disk): the pause, and the files
// written only if the disk takes them. Whether an error was a full disk, and the error when even the
// pause cannot be recorded, are lib/writer/disk-fault.ts (`loop ctl` and `loop reset` say it too).
import { append, materialize, projection, type StepContext, type StepOutcome } from "./context.ts";
import { diskFullFault, type FullDisk } from "../decisions/faults.ts";
import { diskFullMet } from "../writer/disk-fault.ts";

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
