// A full disk met by a command that writes the log (docs/cli/loop-run.md#a-full-disk): whether an
// error was one, and the error said when even the fault could not be recorded — a step's, `loop
// ctl`'s and `loop reset`'s one wording. The step's pause for it is lib/step/disk-full.ts; what a
// full disk is, and the reserve, are lib/shared/disk.ts.
import { StoreError } from "../shared/errors.ts";
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
