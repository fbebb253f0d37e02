// The session wrapper: `loop __session <dir>`, started detached (its own process group) by the
// step. It runs the agent with the launch record's argv, cwd and env, sends the agent's output to
// output.log (and to the tmux pane when tee is on), writes started.json once the agent is
// spawned and exit.json when it ends. A missing exit.json after the wrapper is gone means "lost".
// The agent inherits the session's mark (LOOP_SESSION_MARK), by which the close path finds every
// process of the session, even one that left its process group.
import { openSync, writeSync, closeSync } from "node:fs";
import { join } from "node:path";
import { readJsonOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { SESSION_MARK_VAR } from "../shared/process.ts";

export interface LaunchRecord {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  tee: boolean;
  /** The session's mark: the agent and everything it starts carry LOOP_SESSION_MARK=<mark>. */
  mark?: string;
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

export async function runSessionWrapper(args: string[]): Promise<number> {
  const dir = args[0];
  if (!dir) {
    process.stderr.write("loop __session: missing session folder\n");
    return 2;
  }
  const launch = readJsonOrNull<LaunchRecord>(join(dir, SESSION_FILES.launch));
  if (!launch) {
    process.stderr.write(`loop __session: no readable ${SESSION_FILES.launch} in ${dir}\n`);
    return 2;
  }
  const out = openSync(join(dir, SESSION_FILES.output), "a");
  const finish = (code: number | null, signal: string | null, error?: string) =>
    writeFileAtomic(join(dir, SESSION_FILES.exit), JSON.stringify({ code, signal, error: error ?? null, at: new Date().toISOString() }) + "\n");
  let child: ReturnType<typeof Bun.spawn>;
  try {
    child = Bun.spawn(launch.argv, {
      cwd: launch.cwd,
      env: { ...process.env, ...launch.env, ...(launch.mark ? { [SESSION_MARK_VAR]: launch.mark } : {}) },
      stdin: "ignore",
      stdout: launch.tee ? "pipe" : out,
      stderr: launch.tee ? "pipe" : out,
    });
  } catch (err) {
    const msg = `loop: cannot start ${JSON.stringify(launch.argv[0])}: ${(err as Error).message}\n`;
    writeSync(out, msg);
    closeSync(out);
    writeFileAtomic(join(dir, SESSION_FILES.started), JSON.stringify({ wrapperPid: process.pid, agentPid: null, at: new Date().toISOString() }) + "\n");
    finish(127, null, msg.trim());
    return 0;
  }
  writeFileAtomic(join(dir, SESSION_FILES.started), JSON.stringify({ wrapperPid: process.pid, agentPid: child.pid, at: new Date().toISOString() }) + "\n");
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
