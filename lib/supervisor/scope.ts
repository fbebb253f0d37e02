// Sessions (and verify commands) in a systemd scope of their own (docs/operations.md#sessions-and-systemd).
// Under systemd a step is a unit, and stopping it (a oneshot step's end, with the default
// KillMode=control-group) kills every process left in its cgroup: the agent session or verify
// command the step launched included. So when a systemd manager is reachable, each starts under
// `systemd-run --scope --collect`, in a transient unit of its own: it outlives the step by design,
// and its processes stay in its cgroup, which the close path ends whole (no orphan leaves a cgroup
// by setsid). Elsewhere, process groups. A session and its attempt's verify share a folder, so each
// role has its own unit name and record files (SCOPE_FILES).
//
// `decideMechanism` and `scopeArgv` are pure (facts in, a decision out); `probeSystemd`,
// `confirmScopeStart` and `endScope` carry the effects out.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { procStat } from "../shared/process.ts";
import { readJsonOrNull, readTextOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { StartError } from "../shared/errors.ts";

/** How a session runs, as recorded in session_started's `mechanism` (docs/events.md#session_started). */
export type SessionMechanism =
  | { kind: "systemd_scope"; unit: string; manager: "system" | "user" }
  | { kind: "process_group"; why: string }
  | { kind: "tmux"; why: string };

/** `$LOOP_SESSION_SCOPE`: auto (the default), systemd (required: a launch fails without it), off. */
export type ScopeMode = "auto" | "systemd" | "off";

/** What the machine offers, gathered by probeSystemd. */
export interface SystemdFacts {
  /** systemd-run's path, or null when it is not on PATH. */
  systemdRun: string | null;
  /** systemctl's path, or null. */
  systemctl: string | null;
  /** The system manager runs (sd_booted(): /run/systemd/system exists). */
  systemManager: boolean;
  /** The user manager's private socket exists ($XDG_RUNTIME_DIR/systemd/private). */
  userManager: boolean;
  /** $XDG_RUNTIME_DIR, or /run/user/<uid> when unset (a service's environment has none). */
  runtimeDir: string;
  uid: number;
  /** The user's name (from the password database), or null when it has none. */
  user: string | null;
  /**
   * Lingering is on for the user (/var/lib/systemd/linger/<user>): its user manager runs without a
   * login, and outlives the last one. Null when it cannot be told (no name for the uid).
   */
  linger: boolean | null;
}

/** Why no scope: the machine has no systemd-run, no system manager (root), no user manager, or one that ends at logout. */
type ScopeLack = "no_systemd_run" | "no_system_manager" | "no_user_manager" | "no_linger";

/** What runs in the scope: the agent session, or the attempt's verify command. */
export type ScopeRole = "session" | "verify";

export interface ScopeTarget {
  role: ScopeRole;
  loopName: string;
  item: string;
  epoch: number;
  attempt: number;
  /** The state root: two projects with the same loop name and item must not share a unit name. */
  stateRoot: string;
}

type ScopeDecision =
  | { use: "systemd_scope"; unit: string; manager: "system" | "user" }
  | { use: "process_group"; why: string }
  | { use: "refuse"; why: string; lack: ScopeLack | null };

export function scopeMode(env: Record<string, string | undefined>): ScopeMode | { invalid: string } {
  const v = env.LOOP_SESSION_SCOPE ?? "";
  if (v === "" || v === "auto") return "auto";
  if (v === "systemd" || v === "off") return v;
  return { invalid: `LOOP_SESSION_SCOPE must be auto, systemd or off, not ${JSON.stringify(v)}` };
}

/**
 * Which mechanism a new session runs under. Root uses the system manager; anyone else their user
 * manager (a system scope would need polkit's consent; `loginctl enable-linger <user>` keeps a
 * user manager running without a login).
 */
export function decideMechanism(facts: SystemdFacts, mode: ScopeMode, target: ScopeTarget): ScopeDecision {
  if (mode === "off") return { use: "process_group", why: "LOOP_SESSION_SCOPE=off" };
  const lack = scopeLack(facts);
  if (lack) {
    const why = lackWhy(facts, lack);
    return mode === "systemd" ? { use: "refuse", why: `LOOP_SESSION_SCOPE=systemd, but ${why}`, lack } : { use: "process_group", why };
  }
  return { use: "systemd_scope", unit: scopeUnitName(target), manager: facts.uid === 0 ? "system" : "user" };
}

/**
 * What keeps a session from a scope that outlives the step, or null. A user manager that exists only
 * for a login is no manager to run sessions in: it stops (and ends every scope in it) soon after the
 * last logout, so an operator who tried it while logged in would lose every later session.
 */
export function scopeLack(facts: SystemdFacts): ScopeLack | null {
  if (!facts.systemdRun) return "no_systemd_run";
  if (facts.uid === 0) return facts.systemManager ? null : "no_system_manager";
  if (!facts.userManager) return "no_user_manager";
  return facts.linger === false ? "no_linger" : null;
}

function lackWhy(facts: SystemdFacts, lack: ScopeLack): string {
  const who = facts.user ? `${facts.user} (uid ${facts.uid})` : `uid ${facts.uid}`;
  switch (lack) {
    case "no_systemd_run":
      return "systemd-run is not on PATH";
    case "no_system_manager":
      return "no systemd manager runs here (/run/systemd/system is missing)";
    case "no_user_manager":
      return `no systemd user manager for uid ${facts.uid} (${join(facts.runtimeDir, "systemd", "private")} is missing; \`loginctl enable-linger\` starts one)`;
    case "no_linger":
      return `lingering is off for ${who}: its systemd user manager runs only while it is logged in, and ends every scope in it after the last logout (\`loginctl enable-linger\` keeps it)`;
  }
}

/**
 * A launch's sessions cannot have what LOOP_SESSION_SCOPE asks for: an invalid value, or `systemd`
 * where the machine gives no scope that outlives the step. Probed before a launch is reserved, so
 * it is an environment fault (lib/decisions/faults.ts scopeFault), not a failed attempt. Null when
 * nothing stands in the way.
 */
export function probeScopeRequirement(
  env: Record<string, string | undefined>,
): { invalid: string } | { refused: string; lack: ScopeLack; user: string | null } | null {
  const mode = scopeMode(env);
  if (typeof mode === "object") return mode;
  if (mode !== "systemd") return null;
  const facts = probeSystemd(env);
  const lack = scopeLack(facts);
  return lack ? { refused: lackWhy(facts, lack), lack, user: facts.user } : null;
}

/**
 * `loop-<name>-<item>-e<epoch>-a<attempt>-<8 hex of the state root>.scope` for a session,
 * `…-a<attempt>-verify-<hash>.scope` for its verify, escaped as systemd-escape does.
 */
export function scopeUnitName(t: ScopeTarget): string {
  const root = new Bun.CryptoHasher("sha256").update(t.stateRoot).digest("hex").slice(0, 8);
  const head = `loop-${escapeUnitPart(t.loopName)}-${escapeUnitPart(t.item)}-e${t.epoch}-a${t.attempt}`;
  const end = `${t.role === "verify" ? "-verify" : ""}-${root}.scope`;
  // Unit names are at most 255 bytes: a long loop or item name is cut; the role and hash are kept.
  return head.slice(0, 255 - end.length) + end;
}

/** Bytes outside [A-Za-z0-9:_.-] as \xNN (systemd-escape's form); a leading '.' too. */
function escapeUnitPart(s: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(s)) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9:_.-]/.test(c) && !(out === "" && c === ".") ? c : `\\x${byte.toString(16).padStart(2, "0")}`;
  }
  return out;
}

/** The argv that starts `command` in a transient scope (systemd-run execs it once the scope exists). */
export function scopeArgv(o: { systemdRun: string; unit: string; manager: "system" | "user"; description: string; command: string[] }): string[] {
  return [
    o.systemdRun,
    ...(o.manager === "user" ? ["--user"] : []),
    "--scope",
    // Garbage-collected once empty, even if a process in it failed: no unit left behind per attempt.
    "--collect",
    "--quiet",
    `--unit=${o.unit}`,
    `--description=${o.description}`,
    "--",
    ...o.command,
  ];
}

/** The environment systemd-run needs to reach a user manager from a service (which has no XDG_RUNTIME_DIR). */
function scopeEnv(facts: SystemdFacts, manager: "system" | "user", env: Record<string, string | undefined>): Record<string, string | undefined> {
  return manager === "user" && !env.XDG_RUNTIME_DIR ? { ...env, XDG_RUNTIME_DIR: facts.runtimeDir } : env;
}

export function probeSystemd(env: Record<string, string | undefined>): SystemdFacts {
  const uid = process.getuid?.() ?? -1;
  const runtimeDir = env.XDG_RUNTIME_DIR || `/run/user/${uid}`;
  const path = env.PATH ?? process.env.PATH ?? "";
  let user: string | null = null;
  try {
    user = userInfo().username || null;
  } catch {
    // no entry in the password database for this uid
  }
  return {
    systemdRun: Bun.which("systemd-run", { PATH: path }),
    systemctl: Bun.which("systemctl", { PATH: path }),
    systemManager: existsSync("/run/systemd/system"),
    userManager: existsSync(join(runtimeDir, "systemd", "private")),
    runtimeDir,
    uid,
    user,
    // loginctl enable-linger writes this file; systemd-logind starts the user manager for it at boot.
    linger: user === null ? null : existsSync(join("/var/lib/systemd/linger", user)),
  };
}

/** A scope's record (for the close path) and systemd-run's messages, per role, in the attempt's folder. */
export const SCOPE_FILES: Record<ScopeRole, { record: string; log: string }> = {
  session: { record: "scope.json", log: "scope.log" },
  verify: { record: "verify-scope.json", log: "verify-scope.log" },
};

interface ScopeRecord {
  unit: string;
  manager: "system" | "user";
  /** The scope's cgroup (from /proc/<pid>/cgroup once it started), or null if not seen yet. */
  cgroup: string | null;
  runtimeDir: string;
}

export function writeScopeRecord(dir: string, r: ScopeRecord, role: ScopeRole = "session"): void {
  writeFileAtomic(join(dir, SCOPE_FILES[role].record), JSON.stringify(r) + "\n");
}

export function readScopeRecord(dir: string, role: ScopeRole = "session"): ScopeRecord | null {
  const r = readJsonOrNull<ScopeRecord>(join(dir, SCOPE_FILES[role].record));
  return r && typeof r.unit === "string" && (r.manager === "system" || r.manager === "user") ? r : null;
}

/** The cgroup v2 path of a process ("0::/…" in /proc/<pid>/cgroup), or null. */
function cgroupOf(pid: number): string | null {
  try {
    const line = readFileSync(`/proc/${pid}/cgroup`, "utf8")
      .split("\n")
      .find((l) => l.startsWith("0::"));
    return line ? line.slice(3) : null;
  } catch {
    return null;
  }
}

/**
 * After spawning systemd-run: did the scope start? systemd-run execs the command only once the
 * scope exists, so the wrapper having started (its started.json) or the process sitting in the
 * unit's cgroup says yes; systemd-run exiting first says no (its message is in `errLog`).
 * Bounded: a launch never waits more than `maxMs` here; undecided counts as started (the observe
 * phase then judges the session like any other).
 */
function confirmScopeStart(o: {
  pid: number;
  unit: string;
  startedFile: string;
  errLog: string;
  maxMs: number;
}): { ok: true; cgroup: string | null } | { ok: false; why: string } {
  const deadline = Date.now() + o.maxMs;
  for (;;) {
    const cg = cgroupOf(o.pid);
    if (cg?.endsWith(`/${o.unit}`)) return { ok: true, cgroup: cg };
    if (existsSync(o.startedFile)) return { ok: true, cgroup: cg?.endsWith(`/${o.unit}`) ? cg : null };
    const state = procStat(o.pid)?.[0];
    if (state === undefined || state === "Z" || state === "X") {
      const msg = (readTextOrNull(o.errLog, { maxBytes: 2000, truncate: true, noLinks: true }) ?? "").trim();
      return { ok: false, why: `systemd-run could not start the scope ${o.unit}${msg ? `: ${msg}` : " (it exited without a message)"}` };
    }
    if (Date.now() >= deadline) return { ok: true, cgroup: null };
    Bun.sleepSync(5);
  }
}

/** The pids in a cgroup (cgroup v2 cgroup.procs under `cgroupRoot`), [] when it is gone or empty. */
function cgroupPids(cgroupRoot: string, cgroup: string): number[] {
  try {
    return readFileSync(join(cgroupRoot, cgroup, "cgroup.procs"), "utf8")
      .split("\n")
      .filter((l) => /^\d+$/.test(l))
      .map(Number);
  } catch {
    return [];
  }
}

function livePids(pids: number[]): number[] {
  return pids.filter((p) => {
    const s = procStat(p)?.[0];
    return s !== undefined && s !== "Z" && s !== "X";
  });
}

/**
 * End every process of a session's (or verify's) scope: SIGTERM to each pid in its cgroup (and through systemctl
 * kill, which reaches them even when the cgroup path is unknown), the grace period, then SIGKILL.
 * Returns how, in session_closed's words: not_running, terminated or killed.
 */
export async function endScope(
  record: ScopeRecord,
  graceMs: number,
  o: { cgroupRoot?: string; systemctl?: string | null; env?: Record<string, string | undefined> } = {},
): Promise<"not_running" | "terminated" | "killed"> {
  let r = record;
  const root = o.cgroupRoot ?? "/sys/fs/cgroup";
  const systemctl = o.systemctl === undefined ? Bun.which("systemctl") : o.systemctl;
  const env = { ...(o.env ?? process.env), ...(r.manager === "user" ? { XDG_RUNTIME_DIR: r.runtimeDir } : {}) };
  const members = () => (r.cgroup ? livePids(cgroupPids(root, r.cgroup)) : []);
  const ctl = (signal: string) => {
    if (!systemctl) return;
    Bun.spawnSync([systemctl, ...(r.manager === "user" ? ["--user"] : []), "kill", "--kill-whom=all", `--signal=${signal}`, r.unit], {
      env,
      stdout: "ignore",
      stderr: "ignore",
    });
  };
  const signalAll = (sig: NodeJS.Signals) => {
    for (const pid of members())
      try {
        process.kill(pid, sig);
      } catch {}
  };
  if (!r.cgroup && systemctl) {
    // Not seen at launch (the wrapper had not started yet): ask the manager where the unit lives.
    const q = Bun.spawnSync([systemctl, ...(r.manager === "user" ? ["--user"] : []), "show", "--property=ControlGroup", "--value", r.unit], {
      env,
      stdout: "pipe",
      stderr: "ignore",
    });
    const cg = q.exitCode === 0 ? q.stdout.toString().trim() : "";
    if (cg) r = { ...r, cgroup: cg };
  }
  if (r.cgroup && members().length === 0) return "not_running";
  signalAll("SIGTERM");
  ctl("SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (members().length === 0) return r.cgroup ? "terminated" : "not_running";
    await Bun.sleep(25);
  }
  if (members().length === 0) return "terminated";
  signalAll("SIGKILL");
  ctl("SIGKILL");
  for (let i = 0; i < 40 && members().length > 0; i++) await Bun.sleep(25);
  return "killed";
}

/**
 * Start a session's (or verify's) wrapper (`command`) detached, in a scope of its own when the
 * decision says so; the scope's record goes in `dir` under the target's role (SCOPE_FILES).
 * `spawn` is the caller's detached spawn (lib/supervisor/sessions.ts): it returns the pid. A scope that
 * cannot start falls back to a process group (recorded with why), unless LOOP_SESSION_SCOPE=systemd
 * demands one: then the launch fails with systemd-run's message.
 */
export function launchDetached(o: {
  dir: string;
  command: string[];
  target: ScopeTarget;
  /** loop's environment: what decides (LOOP_SESSION_SCOPE, XDG_RUNTIME_DIR, PATH). */
  env: Record<string, string | undefined>;
  /** The wrapper's environment (lib/definition/child-environment.ts); `env` when not given. */
  childEnv?: Record<string, string | undefined>;
  spawn: (argv: string[], env: Record<string, string | undefined>, errLog: string | null) => number;
  startedFile: string;
  /** What the machine offers; probed when not given (tests give it). */
  facts?: SystemdFacts;
}): { pid: number; mechanism: SessionMechanism } {
  const mode = scopeMode(o.env);
  if (typeof mode !== "string") throw new StartError(mode.invalid);
  const facts = mode === "off" ? null : (o.facts ?? probeSystemd(o.env));
  const decision = facts ? decideMechanism(facts, mode, o.target) : ({ use: "process_group", why: "LOOP_SESSION_SCOPE=off" } as const);
  if (decision.use === "refuse") throw new StartError(decision.why);
  const childEnv = o.childEnv ?? o.env;
  if (decision.use === "process_group") return { pid: o.spawn(o.command, childEnv, null), mechanism: { kind: "process_group", why: decision.why } };
  const record: ScopeRecord = { unit: decision.unit, manager: decision.manager, cgroup: null, runtimeDir: facts!.runtimeDir };
  // Before the spawn: a step killed right after it still leaves the close path the unit's name.
  const role = o.target.role;
  writeScopeRecord(o.dir, record, role);
  const errLog = join(o.dir, SCOPE_FILES[role].log);
  // systemd-run's stderr is opened by name: whatever is there (a link planted in the folder) goes first.
  rmSync(errLog, { force: true });
  const argv = scopeArgv({
    systemdRun: facts!.systemdRun!,
    unit: decision.unit,
    manager: decision.manager,
    description: `loop ${o.target.loopName}: ${o.target.item} attempt ${o.target.attempt}${role === "verify" ? " verify" : ""}`,
    command: o.command,
  });
  const pid = o.spawn(argv, scopeEnv(facts!, decision.manager, childEnv), errLog);
  const started = confirmScopeStart({ pid, unit: decision.unit, startedFile: o.startedFile, errLog, maxMs: 5000 });
  if (started.ok) {
    if (started.cgroup) writeScopeRecord(o.dir, { ...record, cgroup: started.cgroup }, role);
    return { pid, mechanism: { kind: "systemd_scope", unit: decision.unit, manager: decision.manager } };
  }
  rmSync(join(o.dir, SCOPE_FILES[role].record), { force: true });
  if (mode === "systemd") throw new StartError(started.why);
  return { pid: o.spawn(o.command, childEnv, null), mechanism: { kind: "process_group", why: started.why } };
}

/**
 * The close path's part: end the session's (or, with role verify, the verify's) scope if it ran in
 * one. null when it did not. `o` is endScope's (tests point it at a stand-in cgroup).
 */
export async function endRecordedScope(
  dir: string,
  graceMs: number,
  role: ScopeRole = "session",
  o: { cgroupRoot?: string; systemctl?: string | null } = {},
): Promise<"not_running" | "terminated" | "killed" | null> {
  const r = readScopeRecord(dir, role);
  return r ? endScope(r, graceMs, o) : null;
}
