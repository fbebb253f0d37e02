// Process groups: sessions and verify commands each run in their own group, and ending one means
// ending the whole group: SIGTERM, a grace period, then SIGKILL. Processes that left the group are
// found by the session's mark in their environment (below).

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";

const HAVE_PROC = existsSync("/proc/self/stat");

/** Whether a live process carries one of `marks`; true where this machine cannot tell (no /proc). */
export function markCarried(marks: Iterable<string>): boolean {
  return !HAVE_PROC || markedProcesses(marks).length > 0;
}

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
  // This process's own through its main thread's file: an emulator (qemu-user, running an arm64
  // build) answers /proc/self/stat and /proc/<own pid>/stat itself, with a start time of its own
  // clock that no other process reads; the task's file is the kernel's, as everyone else sees it.
  return procStat(pid === process.pid ? `${pid}/task/${pid}` : pid)?.[19] ?? null;
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
function groupAlive(pgid: number): boolean {
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

// ---------------------------------------------------------------------------------------------
// Session marks. A process that leaves its session's group (setsid, a double fork, a daemonizing
// tool) escapes killGroup, but it keeps the environment it was started with: every session's
// processes carry LOOP_SESSION_MARK=<the session's id> (lib/supervisor/sessions.ts startSession), and
// the close path ends every process of this user that carries the mark of the session it closes.

/** The variable that marks a session's processes; its value is the session's id. */
export const SESSION_MARK_VAR = "LOOP_SESSION_MARK";
/** Sessions started before the mark existed carry only their id, under this name (same value). */
const MARK_NAMES = [`${SESSION_MARK_VAR}=`, "LOOP_SESSION_ID="];

/** The values of the mark variables in a /proc/<pid>/environ buffer. */
export function marksIn(environ: Buffer): string[] {
  const out: string[] = [];
  for (const name of MARK_NAMES) {
    for (let at = environ.indexOf(name); at >= 0; at = environ.indexOf(name, at + 1)) {
      if (at > 0 && environ[at - 1] !== 0) continue; // the middle of another entry
      const start = at + name.length;
      const end = environ.indexOf(0, start);
      out.push(environ.toString("latin1", start, end < 0 ? environ.length : end));
      break;
    }
  }
  return out;
}

/** This process and its ancestors: a `loop` run from inside a session carries that session's mark. */
function selfAndAncestors(): Set<number> {
  const out = new Set<number>([process.pid]);
  for (let pid = process.ppid; pid > 1 && !out.has(pid); ) {
    out.add(pid);
    const ppid = Number(procStat(pid)?.[1]);
    if (!Number.isSafeInteger(ppid) || ppid <= 0) break;
    pid = ppid;
  }
  return out;
}

/** A process as marked: its pid and start time (together they name it, never a later one with its pid). */
export interface MarkedProcess {
  pid: number;
  started: string;
  mark: string;
}

/** PF_KTHREAD in /proc/<pid>/stat's flags: a kernel thread, which has no environment at all. */
const PF_KTHREAD = 0x00200000;
/** How often, and how long apart, an empty environment is read again (below). */
const UNSETTLED_READS = 3;
const UNSETTLED_PAUSE_MS = 10;

/** What the scan for marks reads of /proc; tests hand it a made-up one (a process caught mid-exec). */
export interface ProcView {
  pids(): string[];
  /** The raw environment, or null when it cannot be read (gone, another user's: EACCES). */
  environ(pid: string): Buffer | null;
  stat(pid: string): string[] | null;
  /** The owner's uid, or null when gone. */
  uid(pid: string): number | null;
  sleep(ms: number): void;
}

const LIVE_PROC: ProcView = {
  pids: () => readdirSync("/proc").filter((n) => n.charCodeAt(0) >= 48 && n.charCodeAt(0) <= 57),
  environ: (pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`);
    } catch {
      return null;
    }
  },
  stat: procStat,
  uid: (pid) => {
    try {
      return statSync(`/proc/${pid}`).uid;
    } catch {
      return null;
    }
  },
  sleep: (ms) => Bun.sleepSync(ms),
};

/**
 * Live (non-zombie) processes of this user that carry one of `marks`, never this process or its
 * ancestors. Reads /proc; elsewhere (no /proc) there is nothing to find and it returns [].
 *
 * From the moment exec installs a process's new memory until it lays out the new environment, the
 * kernel reads that environment as empty: a process caught mid-exec would look unmarked. So an
 * empty environment (not a kernel thread's or a zombie's, which have none) is read again, a few
 * times briefly apart; processes started with no environment at all cost that wait once per scan.
 */
export function markedProcesses(marks: Iterable<string>, proc: ProcView = LIVE_PROC): MarkedProcess[] {
  const want = new Set([...marks].filter(Boolean));
  if (want.size === 0 || (proc === LIVE_PROC && !HAVE_PROC)) return [];
  const uid = process.getuid?.() ?? -1;
  const spare = selfAndAncestors();
  const out: MarkedProcess[] = [];
  /** Reads one process: "unsettled" for an empty environment that may yet be laid out. */
  const read = (pid: string): "unsettled" | undefined => {
    const environ = proc.environ(pid);
    if (environ === null) return;
    const mark = environ.length > 0 ? marksIn(environ).find((m) => want.has(m)) : undefined;
    if (environ.length > 0 && mark === undefined) return; // most processes: one read, no stat
    const rest = proc.stat(pid);
    if (rest === null || rest[0] === "Z" || rest[0] === "X") return;
    if (mark === undefined) return (Number(rest[6]) & PF_KTHREAD) === 0 ? "unsettled" : undefined;
    // Root reads every environ: only this user's processes are ours to end.
    if (proc.uid(pid) === uid) out.push({ pid: Number(pid), started: rest[19]!, mark });
  };
  let unsettled = proc.pids().filter((pid) => !spare.has(Number(pid)) && read(pid) === "unsettled");
  for (let round = 0; round < UNSETTLED_READS && unsettled.length > 0; round++) {
    proc.sleep(UNSETTLED_PAUSE_MS);
    unsettled = unsettled.filter((pid) => read(pid) === "unsettled");
  }
  return out;
}

/** Is this very process (not a later one reusing its pid) still alive? */
function stillThere(p: MarkedProcess): boolean {
  const rest = procStat(p.pid);
  return rest !== null && rest[19] === p.started && rest[0] !== "Z" && rest[0] !== "X";
}

function signal(p: MarkedProcess, sig: NodeJS.Signals): void {
  if (!stillThere(p)) return;
  try {
    process.kill(p.pid, sig);
  } catch {
    // gone meanwhile
  }
}

/**
 * End every process carrying one of `marks`: SIGTERM, up to `graceMs` to go, then SIGKILL; again
 * while new ones appear (a daemon may fork while it dies), a few rounds at most. Returns the
 * processes it signalled and those still alive at the end (a process in uninterruptible sleep).
 */
export async function endMarked(marks: Iterable<string>, graceMs: number): Promise<{ ended: MarkedProcess[]; left: MarkedProcess[] }> {
  const list = [...marks];
  const ended = new Map<string, MarkedProcess>();
  let found = markedProcesses(list);
  for (let round = 0; round < 5 && found.length > 0; round++) {
    for (const p of found) ended.set(`${p.pid}:${p.started}`, p);
    for (const p of found) signal(p, "SIGTERM");
    const deadline = Date.now() + graceMs;
    while (found.some(stillThere) && Date.now() < deadline) await Bun.sleep(25);
    const stubborn = found.filter(stillThere);
    for (const p of stubborn) signal(p, "SIGKILL");
    for (let i = 0; i < 40 && stubborn.some(stillThere); i++) await Bun.sleep(25);
    found = markedProcesses(list);
  }
  return { ended: [...ended.values()], left: found };
}
