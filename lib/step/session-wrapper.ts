// The session wrapper: `loop __session <dir>`, started detached (its own process group) by the
// step. It runs the agent with the launch record's argv, cwd and env, sends the agent's output to
// output.log (and to the tmux pane when tee is on), writes started.json once the agent is
// spawned and exit.json when it ends. A missing exit.json after the wrapper is gone means "lost".
// `loop __session <dir> verify` is the same for an attempt's verify command, with the files of
// VERIFY_FILES in the same folder (lib/step/verify-command.ts), so verify is observed like a session.
import { openSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { readJsonOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { processStartTime } from "../shared/process.ts";

export interface LaunchRecord {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  tee: boolean;
}

export const SESSION_FILES = {
  launch: "launch.json",
  started: "started.json",
  exit: "exit.json",
  output: "output.log",
  ask: "ask.txt",
  handoff: "handoff.md",
  verify: "verify.log",
} as const;

/** The files of a verify run, beside its attempt's session files. */
export const VERIFY_FILES = {
  launch: "verify-launch.json",
  spawned: "verify-spawned.json",
  started: "verify-started.json",
  exit: "verify-exit.json",
  output: SESSION_FILES.verify,
} as const;

/** What a wrapper reads and writes: an agent session's files, or a verify run's. */
export type WrapperKind = "session" | "verify";
export function wrapperFiles(kind: WrapperKind): { launch: string; started: string; exit: string; output: string } {
  return kind === "verify" ? VERIFY_FILES : SESSION_FILES;
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
  const launch = readJsonOrNull<LaunchRecord>(join(dir, files.launch));
  if (!launch) {
    process.stderr.write(`loop __session: no readable ${files.launch} in ${dir}\n`);
    return 2;
  }
  const out = openSync(join(dir, files.output), "a");
  // With its pid, names this wrapper (and its group) for whoever adopts it, never a later process reusing the pid.
  const wrapperStart = processStartTime(process.pid);
  const finish = (code: number | null, signal: string | null, error?: string) =>
    writeFileAtomic(join(dir, files.exit), JSON.stringify({ code, signal, error: error ?? null, at: new Date().toISOString() }) + "\n");
  let child: ReturnType<typeof Bun.spawn>;
  try {
    child = Bun.spawn(launch.argv, {
      cwd: launch.cwd,
      env: { ...process.env, ...launch.env },
      stdin: "ignore",
      stdout: launch.tee ? "pipe" : out,
      stderr: launch.tee ? "pipe" : out,
    });
  } catch (err) {
    const msg = `loop: cannot start ${JSON.stringify(launch.argv[0])}: ${(err as Error).message}\n`;
    writeSync(out, msg);
    closeSync(out);
    writeFileAtomic(join(dir, files.started), JSON.stringify({ wrapperPid: process.pid, wrapperStart, agentPid: null, at: new Date().toISOString() }) + "\n");
    finish(127, null, msg.trim());
    return 0;
  }
  writeFileAtomic(join(dir, files.started), JSON.stringify({ wrapperPid: process.pid, wrapperStart, agentPid: child.pid, at: new Date().toISOString() }) + "\n");
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(sig, () => child.kill(sig));
  if (launch.tee) {
    const pump = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) {
        writeSync(out, chunk);
        process.stdout.write(chunk);
      }
    };
    await Promise.all([pump(child.stdout as ReadableStream<Uint8Array>), pump(child.stderr as ReadableStream<Uint8Array>)]);
  }
  const code = await child.exited;
  closeSync(out);
  const signal = child.signalCode ? String(child.signalCode) : null;
  finish(signal ? null : code, signal);
  return 0;
}
