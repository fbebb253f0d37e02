// run.pid: the one `loop run --watch` of a state root. A second watcher would only take turns with
// the first for the lease, and whichever stopped first removed the other's file, so a watcher
// claims the file exclusively and removes it only while it still names itself.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { BusyError } from "./errors.ts";

/** Write our pid to `path`, unless it names another live process (BusyError, exit 75). */
export function claimRunPid(path: string, pid: number, isAlive: (pid: number) => boolean): void {
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, `${pid}\n`, { flag: "wx" });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw err;
    }
    const holder = readPid(path);
    if (holder !== null && holder !== pid && isAlive(holder))
      throw new BusyError(`another \`loop run --watch\` (pid ${holder}, ${path}) is watching this loop`);
    // Left by a watcher that was killed (or unreadable): stale, replace it once.
    rmSync(path, { force: true });
  }
}

/** Remove `path` if it still names `pid`. */
export function releaseRunPid(path: string, pid: number): void {
  if (readPid(path) === pid) rmSync(path, { force: true });
}

function readPid(path: string): number | null {
  try {
    const n = Number(readFileSync(path, "utf8").trim());
    return Number.isSafeInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}
