// Running loop's tools from tests, two ways, both in the scrubbed environment of tests/helpers/env.ts:
//   runInProcess  the tool's `runTool` with captured streams, in this process: for usage, output
//                 format and exit-code tests, where a real process is not the point (no start-up
//                 per case, so a table of cases stays cheap);
//   spawnLoop / runLoop / runLoopSync   the real entry `bun cmd/loop.ts …` (or another script): for
//                 tests about processes, the multi-call entry and argv0, pipes, signals, terminals.
import { join, resolve } from "node:path";
import { type OutStream, runTool } from "../../lib/shared/cli.ts";
import { TOOLS } from "../../cmd/tools.ts";
import { testEnv } from "./env.ts";

export const REPO = resolve(import.meta.dir, "..", "..");
export const LOOP = join(REPO, "cmd", "loop.ts");
export const BUN = process.execPath;

export type Env = Record<string, string | undefined>;

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CmdResult {
  pid: number;
  /** null when a signal ended it. */
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON, when it is JSON (else null). */
  json: any;
}

export function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A stream that keeps what is written; never a TTY, like a pipe. */
class Captured implements OutStream {
  readonly isTTY = false;
  private chunks: string[] = [];
  write(s: string): boolean {
    this.chunks.push(s);
    return true;
  }
  text(): string {
    return this.chunks.join("");
  }
}

export interface InProcessOptions {
  /** The tool's working directory (default: the repository). */
  cwd?: string;
  /** Set on top of the scrubbed test environment; undefined removes a variable. */
  env?: Env;
  /** What the tool believes about stdin (default false: not a terminal, as under cron). */
  stdinIsTTY?: boolean;
}

/**
 * `loop <tool> <args…>` in this process: argv[0] names the tool (as after `loop`), the rest are
 * its arguments. stdout and stderr are captured and are not terminals, so the default format is
 * JSON, as when piped. The multi-call entry itself (no tool, an unknown tool, `loop --help`,
 * argv0) is cmd/loop.ts: test it with runLoop. Only the tool sees `env`: the programs lib/ starts
 * (git, verify commands, sessions) get this process's environment, and a failpoint is armed from
 * it, so a `loop run` step that launches or verifies belongs in a real process.
 */
export async function runInProcess(argv: string[], o: InProcessOptions = {}): Promise<RunResult> {
  const [name, ...args] = argv;
  const tool = name === undefined ? undefined : TOOLS[name];
  if (!tool) throw new Error(`runInProcess: no tool ${JSON.stringify(name)} (tools: ${Object.keys(TOOLS).join(", ")})`);
  const stdout = new Captured();
  const stderr = new Captured();
  // Named as `bun cmd/loop.ts <tool>` names it, so help and messages match the real process.
  const code = await runTool(tool, {
    argv: args,
    prog: `loop ${name}`,
    stdout,
    stderr,
    stdinIsTTY: o.stdinIsTTY ?? false,
    env: testEnv(o.env),
    cwd: o.cwd ?? REPO,
  });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

export interface SpawnOptions {
  cwd?: string;
  /** Set on top of the scrubbed test environment; undefined removes a variable. */
  env?: Env;
  /** The script to run instead of cmd/loop.ts (e.g. cmd/loop-status.ts). */
  script?: string;
}

/** Start `bun cmd/loop.ts <args>` without waiting for it; stdin is /dev/null, stdout and stderr pipes. */
export function spawnLoop(args: string[], o: SpawnOptions = {}) {
  return Bun.spawn([BUN, o.script ?? LOOP, ...args], { cwd: o.cwd ?? REPO, env: testEnv(o.env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
}

/** Wait for a spawned command and collect what it printed. */
export async function finish(proc: ReturnType<typeof spawnLoop>): Promise<CmdResult> {
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  return { pid: proc.pid, code: proc.exitCode, signal: proc.signalCode ? String(proc.signalCode) : null, stdout, stderr, json: parseJson(stdout) };
}

/** Run `bun cmd/loop.ts <args>` to the end. */
export function runLoop(args: string[], o: SpawnOptions = {}): Promise<CmdResult> {
  return finish(spawnLoop(args, o));
}

/** Run `bun cmd/loop.ts <args>` to the end, synchronously (for tests that are not async). */
export function runLoopSync(args: string[], o: SpawnOptions = {}): { code: number | null; stdout: string; stderr: string } {
  const r = Bun.spawnSync([BUN, o.script ?? LOOP, ...args], { cwd: o.cwd ?? REPO, env: testEnv(o.env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}
