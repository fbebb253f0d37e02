// Agent sessions as effects: start one detached (own process group, or a tmux session), observe
// it from outside, end it. What an observation means is decided in lib/decisions/session-verdict.ts.
import { closeSync, existsSync, lstatSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openOwnFile, readAt, readJsonOrNull, readRegularFile, sliceText, writeFileAtomic } from "../shared/fsutil.ts";
import { killGroup, SESSION_MARK_VAR } from "../shared/process.ts";
import { StartError } from "../shared/errors.ts";
import { sessionAlive } from "./liveness.ts";
import { lastProgressAt } from "./progress.ts";
import { tmux, tmuxHasSession } from "./tmux.ts";
import { type LaunchRecord, type ProofSecrets, SESSION_FILES, type WrapperKind, type WrapperPrivate, wrapperFiles } from "./session-wrapper.ts";
import type { GatewayRequest } from "./gateway-files.ts";
import { selfArgv } from "./self.ts";
import type { ChainRecord } from "./chain.ts";
import { outputCapFrom } from "./output-log.ts";
import { launchDetached, type ScopeTarget, type SessionMechanism } from "./scope.ts";
import { type SandboxRequest, sandboxArgv, sandboxSpec } from "./sandbox.ts";
import type { AttemptRecord, SessionRecord } from "../log/projection.ts";
import { childEnvironment, type EnvRule } from "../definition/child-environment.ts";
import type { SessionObservation } from "../decisions/session-verdict.ts";

export function tmuxSessionName(loopName: string, item: string, attempt: number, epoch = 0): string {
  // tmux forbids '.' and ':' in session names. After a reset (epoch > 0) the name carries the epoch,
  // as session folders do, so a leftover session of an old epoch is never taken for a new attempt.
  return `loop-${loopName}-${item}-${epoch > 0 ? `e${epoch}-` : ""}${attempt}`.replace(/[.:]/g, "_");
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

interface StartedSession {
  pid: number;
  tmux: string | null;
  /** How it runs (session_started's `mechanism`), or null when the caller gave no scope target. */
  mechanism: SessionMechanism | null;
}

/** The mark a session's processes carry (LOOP_SESSION_MARK): its session id, unique per attempt. */
export function sessionMark(s: { sessionId: string }): string {
  return s.sessionId;
}

/**
 * Write the launch record and start the wrapper detached. Throws with a clear message on failure.
 * `kind: "verify"` starts an attempt's verify command the same way, with its own files (and the
 * attempt's session mark, so whatever ends the session's marked processes ends it too).
 */
export function startSession(o: {
  dir: string;
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  tmuxName: string | null;
  kind?: WrapperKind;
  /** Where a systemd scope would be named from; without it, a plain process group. */
  scope?: ScopeTarget;
  /** The session's mark (sessionMark); defaults to the LOOP_SESSION_ID the step puts in env. */
  mark?: string;
  /** Run the command under bubblewrap (lib/supervisor/sandbox.ts); the wrapper stays outside. */
  sandbox?: SandboxRequest;
  /** A verify's proof secrets (verify-command.ts), handed to the wrapper privately with `upstream` and the chain's environment. */
  proof?: ProofSecrets;
  /** What the session's gateway holds (loop's model keys and upstreams), handed to the wrapper privately. */
  upstream?: Record<string, string>;
  /**
   * What the wrapper, and so the agent or verify, gets of loop's environment (lib/definition/child-environment.ts);
   * without one, all of it (loop's own tests of the supervisor).
   */
  envRule?: EnvRule;
  /** The step the wrapper starts when its process ends (lib/supervisor/chain.ts); its environment is handed privately. */
  chain?: ChainRecord;
  /** The session's gateway (lib/supervisor/session-gateway.ts), run by the wrapper around the agent. */
  gateway?: GatewayRequest;
}): StartedSession {
  mkdirSync(o.dir, { recursive: true });
  const kind = o.kind ?? "session";
  const mark = o.mark ?? o.env.LOOP_SESSION_ID;
  // The only place a command is put in the sandbox: the launch record holds the bwrap command line.
  // With a gateway in the sandbox, the bridge comes first inside: it serves the gateway's sockets on the sandbox's loopback.
  const inner = o.sandbox && o.gateway?.socketDir ? [...selfArgv(), "__bridge", o.gateway.socketDir, "--", ...o.argv] : o.argv;
  const argv = o.sandbox
    ? sandboxArgv(sandboxSpec(o.gateway?.socketDir ? { ...o.sandbox, gatewaySockets: o.gateway.socketDir } : o.sandbox, o.dir), inner)
    : o.argv;
  // The cap travels in the launch record: a tmux session does not inherit the step's environment.
  // The rule travels in the launch record too: in tmux the wrapper starts with the tmux server's
  // environment, not the one given here, and applies the rule to it again.
  // The launch record is in the session folder, which the agent reads: values of loop's environment
  // (the chained step's, the gateway's keys) go to the wrapper privately (session-wrapper.ts WrapperPrivate).
  const chainEnv = o.chain?.env;
  const given: WrapperPrivate = { ...(o.proof ? { proof: o.proof } : {}), ...(chainEnv ? { chainEnv } : {}), ...(o.upstream ? { upstream: o.upstream } : {}) };
  const handed = Object.keys(given).length ? JSON.stringify(given) : null;
  const privately = handed === null ? {} : { private: o.tmuxName ? ("file" as const) : ("stdin" as const) };
  const launch: LaunchRecord = {
    argv,
    cwd: o.cwd,
    env: o.env,
    tee: o.tmuxName !== null,
    outputCap: outputCapFrom(process.env),
    ...(mark ? { mark } : {}),
    ...(o.envRule ? { envRule: o.envRule } : {}),
    ...(o.chain ? { chain: { argv: o.chain.argv, cwd: o.chain.cwd, log: o.chain.log } } : {}),
    ...(o.gateway ? { gateway: o.gateway } : {}),
    ...privately,
  };
  const childEnv: Record<string, string> = o.envRule ? childEnvironment(process.env, o.envRule, { cwd: o.cwd }) : (process.env as Record<string, string>);
  writeFileAtomic(join(o.dir, wrapperFiles(kind).launch), JSON.stringify(launch, null, 2) + "\n");
  const wrapper = [...selfArgv(), "__session", o.dir, ...(kind === "verify" ? ["verify"] : [])];
  // The wrapper carries the mark from its start, so everything it and the agent start inherits it.
  const marked = mark ? { [SESSION_MARK_VAR]: mark } : {};
  if (o.tmuxName) {
    if (o.proof !== undefined) throw new Error("a verify's proof cannot be handed to a wrapper in tmux");
    // No pipe reaches a tmux pane: a file only this user reads, made here (never through anything in
    // its place), read and removed by the wrapper before it starts anything.
    const privateFile = join(o.dir, SESSION_FILES.private);
    if (handed !== null) writeFileSync(privateFile, handed, { flag: "wx", mode: 0o600 });
    const cmd = (mark ? `export ${SESSION_MARK_VAR}=${shellQuote(mark)}; ` : "") + "exec " + wrapper.map(shellQuote).join(" ");
    const r = tmux(["new-session", "-d", "-s", o.tmuxName, "-x", "200", "-y", "50", "-c", o.cwd, cmd], process.env, childEnv);
    if (r.status !== 0) {
      rmSync(privateFile, { force: true });
      throw new StartError(`tmux new-session failed: ${r.stderr.trim()}`);
    }
    const pid = Number(tmux(["display-message", "-p", "-t", `=${o.tmuxName}:`, "#{pane_pid}"]).stdout.trim());
    if (!Number.isSafeInteger(pid) || pid <= 0) throw new StartError(`tmux session ${o.tmuxName} has no pane pid`);
    return { pid, tmux: o.tmuxName, mechanism: { kind: "tmux", why: "a tmux session runs in the tmux server's process tree, not in a scope of its own" } };
  }
  // Bun.spawn (setsid with detached), not node:child_process, which costs a step ~3 ms to load.
  const spawn = (argv: string[], env: Record<string, string | undefined>, errLog: string | null): number => {
    let child: Bun.Subprocess;
    try {
      child = Bun.spawn(argv, {
        cwd: o.cwd,
        detached: true,
        stdio: [handed === null ? "ignore" : "pipe", "ignore", errLog ? Bun.file(errLog) : "ignore"],
        env,
      });
    } catch (err) {
      throw new StartError(`could not start the session wrapper ${argv[0]}: ${(err as Error).message}`, { cause: err });
    }
    if (handed !== null) {
      // A pipe, not a buffer: Bun keeps a buffer in a memfd that /proc/<pid>/fd would show to others.
      const sink = child.stdin as import("bun").FileSink;
      sink.write(handed);
      void sink.end();
    }
    child.unref();
    return child.pid;
  };
  const env = { ...childEnv, ...marked };
  // In a systemd scope of its own where there is systemd, else a process group (lib/supervisor/scope.ts).
  if (!o.scope) return { pid: spawn(wrapper, env, null), tmux: null, mechanism: null };
  // The role names the unit and the record files: a verify's must never be taken for its session's.
  if (o.scope.role !== kind) throw new Error(`a ${kind} cannot start in a scope meant for a ${o.scope.role}`);
  // This kind's own started file: the session's, in the same folder, exists long before its verify starts.
  const r = launchDetached({
    dir: o.dir,
    command: wrapper,
    target: o.scope,
    env: { ...process.env, ...marked },
    childEnv: env,
    spawn,
    startedFile: join(o.dir, wrapperFiles(kind).started),
  });
  return { pid: r.pid, tmux: null, mechanism: r.mechanism };
}

export function observeSession(s: SessionRecord, a: AttemptRecord, timeouts: { launch: number; stall: number }, now: number): SessionObservation {
  const dir = s.sessionDir;
  const exit = readJsonOrNull<{ code: number | null; signal: string | null; outputError?: unknown }>(join(dir, SESSION_FILES.exit));
  // The agent's question, bounded: it is recorded in events and shown in the loop's reason. Only
  // the file the agent wrote itself is read, never what a link in its place points to (nor a FIFO,
  // which would block): anything else is no question, and the session's verdict says it was ignored.
  const askPath = join(dir, SESSION_FILES.ask);
  const ask = readRegularFile(askPath, { maxBytes: 64 * 1024, truncate: true, noLinks: true });
  const asked = ask.kind === "ok" ? ask.bytes.toString("utf8").trim() : "";
  const question = asked ? (asked.length > 4000 ? `${sliceText(asked, 0, 4000)}…` : asked) : null;
  const askIgnored = ask.kind === "error" ? `its ask file ${askPath} was not read: ${ask.message}` : null;
  let askedAt: number | null = null;
  if (question !== null)
    try {
      askedAt = lstatSync(askPath).mtimeMs;
    } catch {
      askedAt = null; // gone since: asked, at an unknown time
    }
  // Output growth that only says the agent waits is no progress (lib/supervisor/progress.ts); no output
  // yet: the stall deadline counts from the start.
  const lastOutputAt = lastProgressAt(dir, SESSION_FILES.output);
  const wrapper = readJsonOrNull<{ wrapperPid?: unknown; wrapperStart?: unknown }>(join(dir, SESSION_FILES.started));
  const alive = sessionAlive(s, process.env, wrapper?.wrapperPid === s.pid && typeof wrapper.wrapperStart === "string" ? wrapper.wrapperStart : null);
  // Re-read exit.json after seeing the process gone: it may have been written in between.
  const exitNow = exit ?? (alive ? null : readJsonOrNull(join(dir, SESSION_FILES.exit)));
  return {
    recordPresent: existsSync(join(dir, SESSION_FILES.launch)) && (s.pid !== null || s.tmux !== null),
    exit: exitNow
      ? { code: exitNow.code ?? null, signal: exitNow.signal ?? null, outputError: typeof exitNow.outputError === "string" ? exitNow.outputError : null }
      : null,
    question,
    askIgnored,
    askedAt,
    started: existsSync(join(dir, SESSION_FILES.started)),
    alive,
    lastOutputAt,
    startedAt: Date.parse(s.startedAt ?? a.reservedAt),
    reservedAt: Date.parse(a.reservedAt),
    now,
    timeouts,
  };
}

/**
 * Evidence that the wrapper was spawned for a reserved attempt whose start was never recorded.
 * The tmux target comes from spawned.json, so an adopted tmux session keeps it.
 */
export function adoptable(dir: string): { pid: number; tmux: string | null } | null {
  const spawned = readJsonOrNull<{ pid: number; tmux?: string | null }>(join(dir, "spawned.json"));
  const tmux = typeof spawned?.tmux === "string" ? spawned.tmux : null;
  const started = readJsonOrNull<{ wrapperPid: number }>(join(dir, SESSION_FILES.started));
  if (started?.wrapperPid) return { pid: started.wrapperPid, tmux };
  return spawned?.pid ? { pid: spawned.pid, tmux } : null;
}

export function graceMs(env: Record<string, string | undefined>): number {
  const v = Number(env.LOOP_KILL_GRACE_MS);
  return Number.isFinite(v) && v >= 0 ? v : 5000;
}

/** End a session: kill its tmux session and its process group. Returns how it ended. */
export async function endSession(s: { pid: number | null; tmux: string | null }, grace: number): Promise<string> {
  let how = "not_running";
  if (s.tmux && tmuxHasSession(s.tmux)) {
    tmux(["kill-session", "-t", `=${s.tmux}`]);
    how = "tmux_killed";
  }
  if (s.pid !== null) {
    const r = await killGroup(s.pid, grace);
    if (r !== "not_running") how = r;
  }
  return how;
}

/**
 * The first `bytes` of the session's output: agents announce their conversation id in their first
 * event (lib/definition/runners.ts conversationIdFromLog), and a long session's log can be any size.
 */
export function readOutputHead(dir: string, bytes = 1 << 20): string {
  // Only the wrapper's own file: never through a link, never a FIFO in its place.
  const opened = openOwnFile(join(dir, SESSION_FILES.output));
  if (opened.kind !== "ok") return ""; // no output yet, or not the wrapper's
  try {
    return readAt(opened.fd, 0, bytes).toString("utf8");
  } finally {
    closeSync(opened.fd);
  }
}
