// Process groups: sessions and verify commands each run in their own group, and ending one means
// ending the whole group: SIGTERM, a grace period, then SIGKILL.

import { existsSync, readdirSync, readFileSync } from "node:fs";

const HAVE_PROC = existsSync("/proc/self/stat");

/**
 * The fields of /proc/<pid>/stat after "(comm)" (state, ppid, pgrp, …; starttime is [19]), or null
 * when the process is gone or there is no /proc. comm may hold spaces and parentheses: cut at the last ")".
 */
export function procStat(pid: number | string): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** When the process started (clock ticks since boot), or null: with its pid it names one process, never a later one reusing the pid. */
export function processStartTime(pid: number): string | null {
  return procStat(pid)?.[19] ?? null;
}

/** Is the process alive (a zombie awaiting its reaper does not count)? */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  // Unreadable (no /proc, a /proc mounted hidepid for another user's process, a process that just
  // went): trust kill(0). Wrongly "dead" would let a step take over a live holder's lease.
  const state = procStat(pid)?.[0];
  return state === undefined || (state !== "Z" && state !== "X");
}

/**
 * Does any live (non-zombie) process belong to the group? kill(-pgid, 0) also counts zombies,
 * which a container's init may leave unreaped for seconds, so on Linux /proc is read instead.
 */
export function groupAlive(pgid: number): boolean {
  if (HAVE_PROC) {
    for (const name of readdirSync("/proc")) {
      if (name.charCodeAt(0) > 57) continue; // not a pid
      const rest = procStat(name);
      if (rest === null) continue; // exited meanwhile
      if (Number(rest[2]) === pgid && rest[0] !== "Z" && rest[0] !== "X") return true;
    }
    return false;
  }
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Is the process group that `pgid` led when it was recorded still alive? `leaderStart` is the
 * leader's start time then (processStartTime). A leader alive now with another start time means the
 * pid was reused, so the recorded group is gone: Linux never hands out a pid that is still some
 * group's id. Without a recorded start time (no /proc), any live member counts.
 */
export function recordedGroupAlive(pgid: number, leaderStart: string | null): boolean {
  if (leaderStart !== null) {
    const now = processStartTime(pgid);
    if (now !== null && now !== leaderStart) return false;
  }
  return groupAlive(pgid);
}

/** End a recorded process group (killGroup), never a later one that reuses its pid. */
export async function killRecordedGroup(pgid: number, leaderStart: string | null, graceMs: number): Promise<"not_running" | "terminated" | "killed"> {
  if (!recordedGroupAlive(pgid, leaderStart)) return "not_running";
  return killGroup(pgid, graceMs);
}

function signalGroup(pgid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  }
}

/** End a process group. Returns how: "not_running", "terminated" or "killed". */
export async function killGroup(pgid: number, graceMs: number): Promise<"not_running" | "terminated" | "killed"> {
  if (!groupAlive(pgid)) return "not_running";
  signalGroup(pgid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!groupAlive(pgid)) return "terminated";
    await Bun.sleep(25);
  }
  if (!groupAlive(pgid)) return "terminated";
  signalGroup(pgid, "SIGKILL");
  for (let i = 0; i < 40 && groupAlive(pgid); i++) await Bun.sleep(25);
  return "killed";
}
