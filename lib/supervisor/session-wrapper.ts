// The session wrapper: `loop __session <dir>`, started detached (its own process group) by the
// step. It runs the agent with the launch record's argv, cwd and env, pipes the agent's output to
// output.log, bounded by the launch record's cap (lib/supervisor/output-log.ts), and to the tmux pane
// when tee is on, writes started.json once the agent is spawned and exit.json when it ends. A
// missing exit.json after the wrapper is gone means "lost".
// `loop __session <dir> verify` is the same for an attempt's verify command, with the files of
// VERIFY_FILES in the same folder (lib/supervisor/verify-command.ts), so verify is observed like a session.
// The agent (or verify command) inherits the session's mark (LOOP_SESSION_MARK), by which the close
// path finds every process of the session, even one that left its process group.
// A full disk does not end it: output the disk refuses is dropped and counted (output-log.ts), and
// started.json and exit.json are written once the disk takes them (until then the wrapper lives on,
// so the step sees a session still running, never one lost): the real exit status is kept.
// Once the exit status is written, the launch record's chained step runs (lib/supervisor/chain.ts).
// The wrapper is undumpable from its start: what it is handed privately (WrapperPrivate: a verify's
// proof secrets, the gateway's keys, the chained step's environment) is in its memory only, and the
// agent runs as the same user. What the preset CLI saved in its private config home is kept for a
// resume, and the home removed, before the exit status is written (lib/supervisor/config-home.ts).
import { rmSync } from "node:fs";
import { join } from "node:path";
import { readJsonOrNull, readTextOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { processStartTime, SESSION_MARK_VAR } from "../shared/process.ts";
import { CappedLog, DEFAULT_OUTPUT_CAP } from "./output-log.ts";
import { tmuxSocketFromEnv } from "./tmux.ts";
import { makeUndumpable } from "./undumpable.ts";
import { atDirectory, childEnvironment, type EnvRule } from "../definition/child-environment.ts";
import { gatewayArgv } from "../definition/network.ts";
import { type LaunchChain, runChain } from "./chain.ts";
import type { GatewayRequest } from "./gateway-files.ts";
import { keepConversation } from "./config-home.ts";

export interface LaunchRecord {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  tee: boolean;
  /** The session's mark: the agent and everything it starts carry LOOP_SESSION_MARK=<mark>. */
  mark?: string;
  /** Bytes output.log may take ($LOOP_OUTPUT_CAP when the launch was recorded). */
  outputCap?: number;
  /** What the agent gets of the wrapper's environment (lib/definition/child-environment.ts); all of it without one. */
  envRule?: EnvRule;
  /** The step run when the process ends (lib/supervisor/chain.ts; its environment comes privately); none: cron takes the next step. */
  chain?: LaunchChain;
  /** The session's gateway (lib/supervisor/session-gateway.ts): when present the agent reaches the model APIs and every other host through it. */
  gateway?: GatewayRequest;
  /** Where the wrapper's WrapperPrivate comes from: its stdin (a pipe), or (in tmux) SESSION_FILES.private; none: nothing. */
  private?: "stdin" | "file";
}

/**
 * What a wrapper is handed privately, never in its launch record, argv or environment, all of which
 * the agent can read (docs/threat-model.md#where-each-secret-lives): on its stdin, a pipe, or in tmux
 * (no pipe reaches a tmux pane) in a file it reads and removes before it starts anything.
 */
export interface WrapperPrivate {
  /** A verify's proof secrets (verify-command.ts). */
  proof?: ProofSecrets;
  /** The chained step's environment: loop's, less its secrets. */
  chainEnv?: Record<string, string>;
  /** What the session's gateway holds: loop's model keys and their upstreams (lib/supervisor/session-gateway.ts). */
  upstream?: Record<string, string>;
}

/** How long the output pipes are drained after the agent exited: a process it left behind may hold them open. */
const DRAIN_MS = 2000;
/** How often a record the disk refused (full) is tried again. */
const RETRY_FULL_MS = 1000;

/**
 * Write a small record atomically, trying again while the disk is full (ENOSPC, EDQUOT): a session's
 * exit status must survive the disk filling up. Any other failure is thrown.
 */
export async function writeWhenRoom(path: string, text: string, retryMs = RETRY_FULL_MS): Promise<void> {
  for (;;) {
    try {
      writeFileAtomic(path, text);
      return;
    } catch (err) {
      rmSync(`${path}.tmp-${process.pid}`, { force: true });
      const code = (err as NodeJS.ErrnoException)?.code;
      if (code !== "ENOSPC" && code !== "EDQUOT") throw err;
      await Bun.sleep(retryMs);
    }
  }
}

export const SESSION_FILES = {
  launch: "launch.json",
  started: "started.json",
  exit: "exit.json",
  output: "output.log",
  ask: "ask.txt",
  /** Where an agent that gives up writes why ($LOOP_GIVE_UP_FILE, docs/runners.md#giving-up). */
  giveUp: "give-up.txt",
  handoff: "handoff.md",
  verify: "verify.log",
  /** workspace.setup's output, when the launch ran it (docs/loop-json.md#workspace). */
  setup: "setup.log",
  /** Comments from the forge issue thread for the running agent ($LOOP_INBOX_FILE, docs/runners.md). */
  inbox: "inbox.md",
  /** Where a command runner reports its usage ($LOOP_USAGE_FILE, docs/runners.md#reporting-usage). */
  usage: "usage.jsonl",
  /** The sandboxed session's private object folder (lib/repo/object-import.ts imports it into the repository's). */
  objects: "objects",
  /** The wrapper's WrapperPrivate in tmux, 0600, removed by the wrapper before it starts anything. */
  private: "wrapper-private.json",
} as const;

/** The files of a verify run, beside its attempt's session files. */
export const VERIFY_FILES = {
  launch: "verify-launch.json",
  spawned: "verify-spawned.json",
  started: "verify-started.json",
  exit: "verify-exit.json",
  output: SESSION_FILES.verify,
  /** The sandboxed verify's private object folder: what it writes there is never imported. */
  objects: "verify-objects",
  /** What environment it ran with, by name (lib/step/checkout-place.ts writeEnvironmentReport; `loop logs --verify`). */
  environment: "verify-environment.json",
} as const;

/** What a wrapper reads and writes: an agent session's files, or a verify run's. */
export type WrapperKind = "session" | "verify";
export function wrapperFiles(kind: WrapperKind): { launch: string; started: string; exit: string; output: string } {
  return kind === "verify" ? VERIFY_FILES : SESSION_FILES;
}

/** A verify's two proof secrets (verify-command.ts): revealed in its exit status, one for a pass, one for anything else. */
export interface ProofSecrets {
  pass: string;
  fail: string;
}

/** What the log records of the secrets: their SHA-256, which proves a revealed secret without giving it away. */
export function proofHashes(s: ProofSecrets): { pass: string; fail: string } {
  const h = (x: string) => new Bun.CryptoHasher("sha256").update(x).digest("hex");
  return { pass: h(s.pass), fail: h(s.fail) };
}

/** At most this much is read from the wrapper's stdin (an environment is a few KiB). */
const MAX_PRIVATE = 1 << 20;

async function readStdin(): Promise<string> {
  let text = "";
  for await (const chunk of Bun.stdin.stream()) {
    text += Buffer.from(chunk).toString("utf8");
    if (text.length > MAX_PRIVATE) break;
  }
  return text;
}

/** The private file's text (only the file itself, never through a link), gone once read: nothing the agent starts finds it. */
function takeFile(path: string): string {
  const text = readTextOrNull(path, { maxBytes: MAX_PRIVATE, noLinks: true }) ?? "";
  rmSync(path, { force: true });
  return text;
}

const isStrings = (x: unknown): x is Record<string, string> =>
  typeof x === "object" && x !== null && !Array.isArray(x) && Object.values(x).every((v) => typeof v === "string");

/** The well-formed parts of what the wrapper was handed; nothing (a wrapper started without: stdin /dev/null) is an empty one. */
function parsePrivate(text: string): WrapperPrivate {
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(text);
  } catch {
    return {};
  }
  if (typeof j !== "object" || j === null) return {};
  const p = j.proof as Partial<ProofSecrets> | undefined;
  return {
    ...(typeof p?.pass === "string" && typeof p.fail === "string" && p.pass !== p.fail ? { proof: { pass: p.pass, fail: p.fail } } : {}),
    ...(isStrings(j.chainEnv) ? { chainEnv: j.chainEnv } : {}),
    ...(isStrings(j.upstream) ? { upstream: j.upstream } : {}),
  };
}

export async function runSessionWrapper(args: string[]): Promise<number> {
  const [dir, kind = "session"] = args;
  if (!dir) {
    process.stderr.write("loop __session: missing session folder\n");
    return 2;
  }
  if (kind !== "session" && kind !== "verify") {
    process.stderr.write(`loop __session: unknown kind ${JSON.stringify(kind)} (session or verify)\n`);
    return 2;
  }
  const files = wrapperFiles(kind);
  // Undumpable first: what it starts runs as the same user and must not read from its memory or its
  // environment what it is handed privately (a verify's proof secrets, the gateway's keys).
  await makeUndumpable();
  const launch = readJsonOrNull<LaunchRecord>(join(dir, files.launch));
  if (!launch) {
    process.stderr.write(`loop __session: no readable ${files.launch} in ${dir}\n`);
    return 2;
  }
  // Read before anything is started: what it starts can never read it there.
  const given =
    launch.private === "stdin" ? parsePrivate(await readStdin()) : launch.private === "file" ? parsePrivate(takeFile(join(dir, SESSION_FILES.private))) : {};
  const secrets = kind === "verify" ? (given.proof ?? null) : null;
  let out: CappedLog;
  try {
    out = new CappedLog(join(dir, files.output), launch.outputCap ?? DEFAULT_OUTPUT_CAP);
  } catch (err) {
    // Something loop cannot replace in the log's place (a directory): nothing is run, and the exit status says why.
    writeFileAtomic(
      join(dir, files.exit),
      JSON.stringify({
        code: 127,
        signal: null,
        error: `cannot open ${files.output}: ${(err as Error).message}`,
        at: new Date().toISOString(),
        ...(secrets ? { proof: secrets.fail } : {}),
      }) + "\n",
    );
    return 0;
  }
  // With its pid, names this wrapper (and its group) for whoever adopts it, never a later process reusing the pid.
  const wrapperStart = processStartTime(process.pid);
  // With secrets, the exit status carries the one that proves it: the pass secret only for exit 0.
  // `outputError`: the disk refused some output (output.log says where and how much).
  // `endedAt`: the moment the process ended, before its output is drained (`at` is when this is written).
  const finish = (code: number | null, signal: string | null, error?: string, endedAt = new Date().toISOString()) =>
    writeWhenRoom(
      join(dir, files.exit),
      JSON.stringify({
        code,
        signal,
        error: error ?? null,
        ...(out.writeError ? { outputError: out.writeError } : {}),
        endedAt,
        at: new Date().toISOString(),
        ...(secrets ? { proof: code === 0 && signal === null && !error ? secrets.pass : secrets.fail } : {}),
      }) + "\n",
    );
  // Once the exit status is on disk: the next step can see it (docs/cli/loop-run.md#chained-steps).
  const chain = async () => {
    if (launch.chain && given.chainEnv) await runChain({ ...launch.chain, env: given.chainEnv }, dir, kind);
  };
  // A session's private config home: its conversation kept for a resume, the rest (the credentials' copy) gone.
  const keepHome = () => {
    if (kind === "session") keepConversation(dir);
  };
  // Inside tmux, the server's socket: `loop status` prints the exact `tmux -S <socket> attach` command.
  const tmuxSocket = launch.tee ? tmuxSocketFromEnv(process.env.TMUX) : null;
  const proof = secrets ? { proof: proofHashes(secrets) } : {};
  const startedDoc = (agentPid: number | null) =>
    JSON.stringify({ wrapperPid: process.pid, wrapperStart, agentPid, tmuxSocket, at: new Date().toISOString(), ...proof }) + "\n";
  // Failure injection is for loop's own processes: the agent does not see LOOP_FAILPOINT at all,
  // neither the step's value nor the empty one a launch record sets to clear it.
  // Applied again here: in tmux this process has the tmux server's environment, not the step's.
  // PWD names the agent's working directory, never the one `loop run` was started in.
  const own = launch.envRule
    ? childEnvironment(process.env, launch.envRule, { cwd: launch.cwd })
    : atDirectory(process.env as Record<string, string>, launch.cwd);
  const env: Record<string, string | undefined> = { ...own, ...launch.env, ...(launch.mark ? { [SESSION_MARK_VAR]: launch.mark } : {}), PWD: launch.cwd };
  delete env.LOOP_FAILPOINT;
  // Behind a gateway, the agent's key variables hold the stand-in: loop's keys stay in this process.
  let gateway: { env: Record<string, string>; stop(): Promise<void> } | null = null;
  // A verify has one only for a verifyNetwork list: the proxy alone, its refusals said in the verify's log.
  if (launch.gateway && (kind === "session" || launch.gateway.proxyOnly)) {
    try {
      // Loaded only for a session with a gateway: a server's modules cost every other session's start.
      const { startSessionGateway } = await import("./session-gateway.ts");
      // Loop's keys and upstreams come privately: never from this process's environment, which is the agent's.
      gateway = await startSessionGateway({
        dir,
        request: launch.gateway,
        env: { ...own, ...launch.env, ...given.upstream },
        say: (line) => out.write(Buffer.from(line)),
      });
    } catch (err) {
      const msg = `loop: cannot start the session's gateway: ${(err as Error).message}\n`;
      out.write(Buffer.from(msg));
      out.close();
      keepHome();
      await writeWhenRoom(join(dir, files.started), startedDoc(null));
      await finish(127, null, msg.trim());
      return 0;
    }
    Object.assign(env, gateway.env);
  }
  // A preset that names the gateway on its command line (codex) is given its URL now that it is known.
  const argv = gateway?.env.OPENAI_BASE_URL ? gatewayArgv(launch.argv, gateway.env.OPENAI_BASE_URL) : launch.argv;
  let child: ReturnType<typeof Bun.spawn>;
  try {
    child = Bun.spawn(argv, {
      cwd: launch.cwd,
      env,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
  } catch (err) {
    const msg = `loop: cannot start ${JSON.stringify(launch.argv[0])}: ${(err as Error).message}\n`;
    out.write(Buffer.from(msg));
    out.close();
    await gateway?.stop();
    keepHome();
    await writeWhenRoom(join(dir, files.started), startedDoc(null));
    await finish(127, null, msg.trim());
    await chain();
    return 0;
  }
  // Once the exit status is written, a signal ends the wrapper itself (the close path, while a chained step waits).
  let ended = false;
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(sig, () => (ended ? process.exit(0) : child.kill(sig)));
  // Through the wrapper, never straight to the file: that is how the cap is kept.
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) {
      out.write(chunk);
      if (launch.tee) process.stdout.write(chunk);
    }
  };
  const pumped = Promise.all([pump(child.stdout as ReadableStream<Uint8Array>), pump(child.stderr as ReadableStream<Uint8Array>)]);
  // After the pumps: the agent must not block on a pipe while a full disk holds this back.
  await writeWhenRoom(join(dir, files.started), startedDoc(child.pid));
  const code = await child.exited;
  const endedAt = new Date().toISOString();
  await Promise.race([pumped, Bun.sleep(DRAIN_MS)]);
  await gateway?.stop();
  out.close();
  keepHome();
  const signal = child.signalCode ? String(child.signalCode) : null;
  await finish(signal ? null : code, signal, undefined, endedAt);
  // From here only the chained step is waited for: the exit status is on disk.
  ended = true;
  await chain();
  return 0;
}
