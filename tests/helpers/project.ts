// The one harness of end-to-end tests: real loop projects in temp git repositories, driven by
// spawning the real entry point `bun cmd/loop.ts …`, real SQLite, real agent processes. Everything
// is asynchronous (Bun.spawn), so independent scenarios can run as test.concurrent. Nothing here
// measures time: every wait polls with a generous bound and fails with a message.
//   Project / scenario   a project (repository, loop.json, state root) and its commands, one step at
//                        a time (`run`, `runToDrain`), with what the log and the projection say;
//   LoopUnderTest        a loop driven to its drain with a failpoint armed until a command dies by
//                        it (the crash tests), and checkDrained, the invariants every crash test
//                        checks once the loop has drained (nothing launched twice, nothing lost).
//
// Layout of one Project:  <base>/repo   the git repository and loop root (state root repo/.loop)
//                         <base>/aux    files the test's scripts write (pid files, markers)
import { Database } from "bun:sqlite";
import { expect } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventType, StoredEvent, StoredEventOf } from "../../lib/log/events.ts";
import type { Projection } from "../../lib/log/projection.ts";
import type { RunResult } from "../../lib/step/step.ts";
import { repairRunlog } from "../../lib/log/materialize.ts";
import { rowToEvent } from "../../lib/log/store.ts";
import { dbPath, headOf, iterateEvents, readProjection, withReadSnapshot } from "../../lib/log/snapshot.ts";
import type { EventRow } from "../../lib/log/integrity.ts";
import { markedProcesses } from "../../lib/shared/process.ts";
import { BUN, type CmdResult, type Env, LOOP, type RunResult as CliResult, runLoop, spawnLoop } from "./cli.ts";
import { testEnv, worktreesOf } from "./env.ts";
import { git, gitOk, initRepo, makeRepo, writeLoopJson } from "./repo.ts";

// The shared pieces, under the names this harness has always exported.
export { BUN, LOOP, REPO, finish, spawnLoop } from "./cli.ts";
export { type CliResult, type CmdResult, git, gitOk, makeRepo, writeLoopJson };

/** The environment of every spawned command: the scrubbed test environment, and `loop run` acting as cron@test. */
export function cliEnv(extra: Env = {}): Record<string, string> {
  return testEnv({ LOOP_ACTOR: "cron@test", ...extra });
}

/** Run a program to completion in the environment of cliEnv; stdin is /dev/null (never a TTY). */
export async function exec(argv: string[], opts: { cwd: string; env?: Env }): Promise<CliResult> {
  const proc = Bun.spawn(argv, { cwd: opts.cwd, env: cliEnv(opts.env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

export const sleep = (ms: number) => Bun.sleep(ms);

/**
 * Live (non-zombie) processes whose process group is `pgid` and that belong to the temp dir
 * `marker` (their cwd, command line or environment names it). The same /proc scan as
 * lib/shared/process.ts groupAlive, narrowed to the project: pids wrap quickly on a busy box
 * (pid_max is often 32768), and another test's session may lead a group with a recycled pid.
 */
export function groupMembers(pgid: number, marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(rest[2]) !== pgid || rest[0] === "Z" || rest[0] === "X") continue;
    let mine = false;
    try {
      mine = readlinkSync(`/proc/${name}/cwd`).includes(marker);
    } catch {}
    for (const f of ["cmdline", "environ"])
      try {
        mine ||= readFileSync(`/proc/${name}/${f}`).toString("latin1").includes(marker);
      } catch {}
    if (mine) out.push(Number(name));
  }
  return out;
}

/** loop.json content: an object (written as JSON), raw text, or a function of the project. */
export type DefinitionInput = Record<string, unknown> | string | ((p: Project) => Record<string, unknown> | string);

export interface ProjectOptions {
  /** Files committed in the initial commit (besides loop.json and .gitignore). */
  files?: Record<string, string>;
  /** Environment for every command this project spawns. */
  env?: Record<string, string>;
  /** The state root, when not repo/.loop (pass LOOP_STATE_ROOT in `env` too). */
  stateRoot?: string;
}

export class Project {
  readonly base: string;
  readonly root: string;
  readonly aux: string;
  readonly stateRoot: string;
  /** Extra process groups the test knows about (verify commands, …); checked like sessions. */
  readonly extraGroups: number[] = [];
  /** Every run document seen, for failure messages. */
  readonly runs: RunResult[] = [];
  readonly env: Record<string, string>;

  /** `def` may be a function of the project, for definitions naming its paths (e.g. `aux`). */
  constructor(def: DefinitionInput, opts: ProjectOptions = {}) {
    this.base = mkdtempSync(join(tmpdir(), "loop-scn-"));
    this.root = join(this.base, "repo");
    this.aux = join(this.base, "aux");
    this.stateRoot = opts.stateRoot ?? join(this.root, ".loop");
    this.env = opts.env ?? {};
    mkdirSync(this.root);
    mkdirSync(this.aux);
    const definition = typeof def === "function" ? def(this) : def;
    initRepo(this.root, { files: { ".gitignore": ".loop/\n", ...(opts.files ?? { "README.md": "# project\n" }) }, definition });
  }

  writeDefinition(def: Record<string, unknown> | string): void {
    writeLoopJson(this.root, def);
  }

  /** `bun cmd/loop.ts <args>` in the project root. */
  loop(args: string[], env: Env = {}): Promise<CliResult> {
    return exec([BUN, LOOP, ...args], { cwd: this.root, env: { ...this.env, ...env } });
  }

  /** Start `bun cmd/loop.ts <args>` without waiting for it (stdout and stderr piped). */
  spawn(args: string[], env: Env = {}) {
    return spawnLoop(args, { cwd: this.root, env: { LOOP_ACTOR: "cron@test", ...this.env, ...env } });
  }

  /**
   * One `loop run --json` step; its exit code must be one of `codes`. Without `codes`: no
   * environment errors, and exit 1 exactly when the loop needs a person (`attention`), else 0.
   */
  async run(codes?: number[]): Promise<RunResult & { exitCode: number; stderr: string }> {
    const r = await this.loop(["run", "--json", "--root", this.root]);
    let expected = codes;
    if (!expected) {
      let parsed: RunResult | null = null;
      try {
        parsed = JSON.parse(r.stdout) as RunResult;
      } catch {}
      expected = parsed && parsed.errors.length === 0 ? [parsed.attention.length ? 1 : 0] : [0];
    }
    if (!expected.includes(r.code))
      throw new Error(`loop run exited ${r.code} (expected ${expected.join("|")})\nstderr: ${r.stderr}\nstdout: ${r.stdout}\n${this.history()}`);
    const doc = JSON.parse(r.stdout) as RunResult;
    expect(doc.schema).toBe("loop/run@1");
    this.runs.push(doc);
    return { ...doc, exitCode: r.code, stderr: r.stderr };
  }

  /**
   * Step until `done` holds for a step's document (or for the store after it), at most `maxPolls`
   * steps with a pause between them. Never measures time: only the number of polls is bounded.
   */
  async runUntil(
    done: (r: RunResult, p: Project) => boolean,
    o: { maxPolls?: number; pauseMs?: number; codes?: number[]; what?: string } = {},
  ): Promise<RunResult> {
    const max = o.maxPolls ?? 150;
    for (let i = 0; i < max; i++) {
      const r = await this.run(o.codes);
      if (done(r, this)) return r;
      await sleep(o.pauseMs ?? 200);
    }
    throw new Error(`not reached after ${max} steps: ${o.what ?? done.toString()}\n${this.history()}`);
  }

  /** Step until the loop drains. */
  runToDrain(o: { maxPolls?: number; codes?: number[] } = {}): Promise<RunResult> {
    return this.runUntil((r) => r.action === "drained", { ...o, what: "loop drained" });
  }

  /** `loop ctl <args> --json`, acting as `actor`. */
  ctl(args: string[], actor = "alice@test"): Promise<CliResult> {
    return this.loop(["ctl", ...args, "--json", "--root", this.root], { LOOP_ACTOR: actor });
  }

  events(): StoredEvent[] {
    return withReadSnapshot(this.stateRoot, ({ db }) => [...iterateEvents(db)].map(rowToEvent));
  }

  projection(): Projection {
    return withReadSnapshot(this.stateRoot, ({ db }) => readProjection(db));
  }

  head(): number {
    return withReadSnapshot(this.stateRoot, ({ db }) => headOf(db).seq);
  }

  eventsOf<T extends EventType>(type: T, item?: string): StoredEventOf<T>[] {
    return this.events().filter((e) => e.type === type && (item === undefined || e.item === item)) as StoredEventOf<T>[];
  }

  /** Every process group a session or verify command of this project ever had: recorded pids and the wrapper's own files. */
  sessionGroups(): number[] {
    const pids = new Set<number>();
    if (existsSync(join(this.stateRoot, "loop.db")))
      for (const e of this.events())
        if ((e.type === "session_started" || e.type === "verify_started") && typeof e.payload.pid === "number") pids.add(e.payload.pid);
    const sessions = join(this.stateRoot, "sessions");
    if (existsSync(sessions))
      for (const item of readdirSync(sessions))
        for (const attempt of readdirSync(join(sessions, item)))
          for (const f of ["started.json", "spawned.json", "verify-started.json", "verify-spawned.json"]) {
            try {
              const j = JSON.parse(readFileSync(join(sessions, item, attempt, f), "utf8"));
              const pid = j.wrapperPid ?? j.pid;
              if (typeof pid === "number" && pid > 0) pids.add(pid);
            } catch {}
          }
    return [...pids];
  }

  /** Is anything of this project still running in process group `pgid`? */
  alive(pgid: number): boolean {
    return groupMembers(pgid, this.base).length > 0;
  }

  /** The session directory of an attempt (epoch 0). */
  sessionDir(item: string, attempt: number): string {
    return join(this.stateRoot, "sessions", item, String(attempt));
  }

  handoff(item: string, attempt: number): string {
    return readFileSync(join(this.sessionDir(item, attempt), "handoff.md"), "utf8");
  }

  history(): string {
    return this.runs
      .map((r) => `${r.action} ${r.item ?? ""} ${r.reason ?? ""}${r.transitions.map((t) => `\n    ${t.seq} ${t.type} ${t.item ?? ""}: ${t.summary}`).join("")}`)
      .join("\n");
  }

  /**
   * The end of every scenario: `loop status` and `loop replay` exit 0, and no process of any of
   * the project's sessions (or of the extra groups) is left: no non-zombie process in their groups,
   * and none carrying a session's mark.
   */
  async finish(): Promise<void> {
    for (const verb of ["status", "replay"]) {
      const r = await this.loop([verb, "--json", "--root", this.root]);
      // On failure the diff shows what the command reported.
      expect({ verb, code: r.code, report: r.code === 0 ? "" : r.stdout + r.stderr }).toEqual({ verb, code: 0, report: "" });
    }
    const groups = [...this.sessionGroups(), ...this.extraGroups];
    expect(groups.length).toBeGreaterThan(0);
    expect(groups.flatMap((g) => groupMembers(g, this.base).map((pid) => ({ group: g, pid })))).toEqual([]);
    // Nor anything that left its group: no process carries the mark of any session of the project.
    const marks = this.events()
      .filter((e) => e.type === "launch_reserved")
      .map((e) => e.payload.sessionId as string);
    expect(markedProcesses(marks).map((m) => m.pid)).toEqual([]);
  }

  /** Kill whatever survived (only after a failure) and remove the temp dirs. */
  dispose(): void {
    let groups: number[] = [];
    try {
      groups = [...this.sessionGroups(), ...this.extraGroups];
    } catch {}
    for (const g of groups)
      for (const pid of groupMembers(g, this.base))
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
    // And whatever left its group but carries a session's mark (a daemon an agent started).
    try {
      const marks = this.events()
        .filter((e) => e.type === "launch_reserved")
        .map((e) => e.payload.sessionId as string);
      for (const m of markedProcesses(marks))
        try {
          process.kill(m.pid, "SIGKILL");
        } catch {}
    } catch {}
    rmSync(this.base, { recursive: true, force: true });
    // The loop's worktrees live outside the repository (lib/shared/paths.ts worktreesRoot).
    rmSync(worktreesOf(this.stateRoot, this.env), { recursive: true, force: true });
  }

  /** Where this loop's worktrees are. */
  get worktrees(): string {
    return worktreesOf(this.stateRoot, this.env);
  }
}

/** Create a project, run the scenario, then `finish()` (status, replay, no survivors); always clean up. */
export async function scenario(def: DefinitionInput, opts: ProjectOptions, body: (p: Project) => Promise<void>): Promise<void> {
  const p = new Project(def, opts);
  try {
    await body(p);
    await p.finish();
  } finally {
    p.dispose();
  }
}

/** A definition with the demo runner and sane test defaults; `over` is merged on top. */
export function demoDefinition(items: unknown[], over: Record<string, unknown> = {}): Record<string, unknown> {
  const { defaults, ...rest } = over as { defaults?: Record<string, unknown> };
  return {
    name: "t",
    defaults: { runner: "demo", verify: "true", maxAttempts: 2, timeouts: { launch: "2m", stall: "10m", verify: "2m" }, landing: "none", ...(defaults ?? {}) },
    ...rest,
    items,
  };
}

/**
 * Poll a condition (not a duration): at most `max` checks with a pause between them. The default
 * allows a minute: tests run concurrently, and a loaded machine may take that long to start a process.
 */
export async function pollUntil(cond: () => boolean, what: string, max = 1200, pauseMs = 50): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (cond()) return;
    await sleep(pauseMs);
  }
  throw new Error(`condition not reached after ${max} checks: ${what}`);
}

/** The blocks of RUNLOG.md: seq, heading. */
export function runlogBlocks(stateRoot: string): { seq: number; heading: string }[] {
  const text = readFileSync(join(stateRoot, "RUNLOG.md"), "utf8");
  return [...text.matchAll(/<!-- loop:seq=(\d+) -->\n### (.*)\n/g)].map((m) => ({ seq: Number(m[1]), heading: m[2]! }));
}

// ---------------------------------------------------------------------------------------------
// Loops driven to their drain, failpoints armed (LoopUnderTest, checkDrained)

/** Single-quote for sh. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Run `bun cmd/loop.ts <args>` to the end. */
export async function loop(args: string[], env: Env = {}, cwd?: string): Promise<CmdResult> {
  return runLoop(args, { env, cwd });
}

/**
 * A command runner that records each session start as a line "<item> <attempt>" in `launchLog`
 * (outside the worktree), then becomes the built-in demo agent (which obeys the @demo lines).
 */
export function countingRunner(launchLog: string): { command: string[] } {
  return { command: ["sh", "-c", `echo "$LOOP_ITEM $LOOP_ATTEMPT" >> ${shq(launchLog)} && exec ${shq(BUN)} ${shq(LOOP)} __demo-agent`] };
}

/**
 * A verify command that records each run as a line "<item> <attempt>" in `verifyLog` (outside the
 * worktree) before it runs `command`: checkDrained proves no attempt's verify ran twice.
 */
export function countingVerify(verifyLog: string, command: string): string {
  return `echo "$LOOP_ITEM $LOOP_ATTEMPT" >> ${shq(verifyLog)}; ${command}`;
}

export function readLaunches(launchLog: string): string[] {
  if (!existsSync(launchLog)) return [];
  return readFileSync(launchLog, "utf8").split("\n").filter(Boolean);
}

/** Every event row, read from a read-only connection (call after the loop processes are gone). */
export function readEvents(stateRoot: string): EventRow[] {
  const db = new Database(dbPath(stateRoot), { readonly: true });
  try {
    return db.query("SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events ORDER BY seq").all() as EventRow[];
  } finally {
    db.close();
  }
}

export function eventCount(stateRoot: string): number {
  return readEvents(stateRoot).length;
}

// ---------------------------------------------------------------------------------------------
// Processes

/** Live (non-zombie) processes whose command line or working directory mentions `dir`. */
export function processesUnder(dir: string, opts: { ignoreTmuxServers?: boolean } = {}): { pid: number; cmd: string }[] {
  const out: { pid: number; cmd: string }[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state === "Z" || state === "X") continue;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      let cwd = "";
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {}
      const text = cmd.join(" ");
      if (opts.ignoreTmuxServers && /(^|\/)tmux$/.test(cmd[0] ?? "")) continue;
      if (text.includes(dir) || cwd.startsWith(dir)) out.push({ pid, cmd: `${text} (cwd ${cwd})` });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** Poll until no process refers to `dir`; returns what is still there after `boundMs`. */
export async function waitNoProcesses(dir: string, boundMs = 20_000, opts: { ignoreTmuxServers?: boolean } = {}): Promise<{ pid: number; cmd: string }[]> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const left = processesUnder(dir, opts);
    if (left.length === 0 || Date.now() > deadline) return left;
    await sleep(100);
  }
}

/** Cleanup: SIGKILL every process (and its group) that refers to `dir`. */
export function killProcessesUnder(dir: string): void {
  for (const { pid } of processesUnder(dir)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
}

/** A concurrency limit for test.concurrent cases that each start many processes (2 cores). */
export class Semaphore {
  private queue: (() => void)[] = [];
  constructor(private free: number) {}
  async use<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.queue.push(r));
    try {
      return await fn();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.free++;
    }
  }
}

/** mulberry32: a small seeded PRNG, so a random-kill run can be repeated exactly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Driving a loop

export interface DriveOptions {
  /** Extra environment for every loop command. */
  env?: Record<string, string | undefined>;
  /** Arm LOOP_FAILPOINT with this name until some command dies by it. */
  failpoint?: string | null;
  /** Accept exit 1 from `loop run` when the step recorded environment errors (a runner that cannot start). */
  allowStepErrors?: boolean;
}

/**
 * One loop under test: its repository, state root and launch log, and the commands run on it.
 * While a failpoint is armed every loop command gets it; the first command that dies by SIGKILL
 * disarms it (the failpoint was reached), and the rest of the run goes on without it.
 */
export class LoopUnderTest {
  readonly stateRoot: string;
  readonly launchLog: string;
  /** Where countingVerify records verify runs. */
  readonly verifyLog: string;
  readonly history: string[] = [];
  killedBy: { args: string[]; stderr: string; pid: number } | null = null;
  /** Steps of untilDrained stop being taken after this time (a bound, not an expectation). */
  deadline = Date.now() + 240_000;

  constructor(
    readonly dir: string,
    readonly root: string,
    readonly o: DriveOptions = {},
  ) {
    this.stateRoot = join(root, ".loop");
    this.launchLog = join(dir, "launches.log");
    this.verifyLog = join(dir, "verifies.log");
  }

  /** Arm the failpoint from now on (after an unarmed setup). */
  arm(name: string): void {
    this.o.failpoint = name;
  }

  get armed(): boolean {
    return Boolean(this.o.failpoint) && this.killedBy === null;
  }

  /** Any loop tool on this root; a SIGKILL is accepted only from the armed failpoint. */
  async cmd(args: string[], expect: number[] = [0]): Promise<CmdResult> {
    const armed = this.armed;
    const full = [...args, "--root", this.root];
    const r = await loop(full, { ...this.o.env, ...(armed ? { LOOP_FAILPOINT: this.o.failpoint! } : {}) });
    this.history.push(`${args.join(" ")}${armed ? ` [${this.o.failpoint}]` : ""} -> ${r.signal ?? r.code}${r.json?.action ? ` ${r.json.action}` : ""}`);
    if (r.signal !== null) {
      const why = `loop ${args.join(" ")} died by ${r.signal}`;
      if (!armed || r.signal !== "SIGKILL") throw new Error(`${why} with no failpoint armed\n${r.stderr}\n${this.trace()}`);
      if (!r.stderr.includes(`failpoint ${this.o.failpoint}: killing self`))
        throw new Error(`${why} but not at failpoint ${this.o.failpoint}:\n${r.stderr}\n${this.trace()}`);
      this.killedBy = { args, stderr: r.stderr, pid: r.pid };
      return r;
    }
    if (r.code === null || !expect.includes(r.code))
      throw new Error(`loop ${args.join(" ")} exited ${r.code} (expected ${expect.join("|")}):\n${r.stderr}\n${r.stdout}\n${this.trace()}`);
    return r;
  }

  /**
   * One `loop run --json`; null when it was killed by the armed failpoint. Exit 1 must come with
   * its reason: the loop needs a person (`attention`: a pause on a fault or question, a Failed
   * drain), or (with allowStepErrors) environment errors.
   */
  async step(): Promise<any | null> {
    const r = await this.cmd(["run", "--json"], [0, 1]);
    if (r.signal) return null;
    const needsPerson = r.json?.attention?.length > 0;
    const errors = r.json?.errors?.length > 0;
    if (r.code === 1 && !needsPerson && !(this.o.allowStepErrors && errors))
      throw new Error(
        `loop run exited 1 without a person needed${errors ? " (errors not allowed here)" : " or recorded errors"}:\n${r.stderr}\n${r.stdout}\n${this.trace()}`,
      );
    if (r.code === 0 && needsPerson) throw new Error(`loop run exited 0 while the loop needs a person:\n${r.stdout}\n${this.trace()}`);
    return r.json;
  }

  async ctl(args: string[], expect: number[] = [0]): Promise<CmdResult> {
    return this.cmd(["ctl", ...args, "--json"], expect);
  }

  trace(): string {
    return `history:\n  ${this.history.join("\n  ")}`;
  }

  state(): any {
    try {
      return JSON.parse(readFileSync(join(this.stateRoot, "state.json"), "utf8"));
    } catch {
      return null;
    }
  }

  /**
   * While the current item's session works, or its verify command runs: wait for its exit (or ask
   * file) status (bounded), instead of busy-stepping.
   */
  async waitForSession(boundMs = 15_000): Promise<void> {
    const st = this.state();
    const cur = st?.loop?.current;
    if (!cur) return;
    const it = st.items.find((i: any) => i.id === cur);
    if (!it || (it.status !== "running" && it.status !== "launching" && it.status !== "ended")) return;
    const dir = join(this.stateRoot, "sessions", cur, it.epoch === 0 ? String(it.attempts) : `e${it.epoch}-${it.attempts}`);
    const [launch, done] = it.status === "ended" ? ["verify-launch.json", ["verify-exit.json"]] : ["launch.json", ["exit.json", "ask.txt"]];
    if (!existsSync(join(dir, launch!))) return;
    const deadline = Date.now() + boundMs;
    while (Date.now() < deadline) {
      if (done!.some((f) => existsSync(join(dir, f)))) return;
      await sleep(50);
    }
  }

  /**
   * Step until the loop drains. `onPaused` / `onStopped` handle a paused or stopped loop (else it
   * is an error); a killed step is simply followed by the next one, as cron would.
   */
  async untilDrained(o: { onPaused?: (run: any) => Promise<void>; maxSteps?: number } = {}): Promise<any> {
    const max = o.maxSteps ?? 150;
    for (let i = 0; i < max; i++) {
      if (Date.now() > this.deadline) throw new Error(`the loop did not drain within the bound\n${this.trace()}`);
      const r = await this.step();
      if (r === null) continue;
      switch (r.action) {
        case "drained":
          return r;
        case "paused":
        case "stopped":
          if (!o.onPaused) throw new Error(`loop ${r.action}: ${r.reason}\n${this.trace()}`);
          await o.onPaused(r);
          break;
        case "launched":
        case "waiting":
        case "progressed":
          await this.waitForSession();
          break;
        default:
          throw new Error(`unexpected action ${r.action}: ${r.reason}\n${this.trace()}`);
      }
    }
    throw new Error(`the loop did not drain in ${max} steps\n${this.trace()}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The invariants of a drained loop

export interface Expected {
  outcome: "Succeeded" | "Failed" | "Stopped";
  /** item id -> final status */
  items: Record<string, string>;
}

/**
 * After the loop drained: nothing launched twice, nothing lost or duplicated in the log, nothing
 * stuck in flight or left open, every materialization equal to what the log implies (`loop replay`
 * and `loop status` exit 0, RUNLOG.md needs no repair), and no process left behind.
 */
export async function checkDrained(l: LoopUnderTest, expected: Expected, opts: { ignoreTmuxServers?: boolean; everyStartRan?: boolean } = {}): Promise<void> {
  const trace = l.trace();
  const where = (msg: string) => `${msg}\n${trace}`;

  const replay = await loop(["replay", "--json", "--root", l.root], l.o.env);
  if (replay.code !== 0) throw new Error(where(`loop replay exited ${replay.code}: ${replay.stdout}\n${replay.stderr}`));
  const status = await loop(["status", "--json", "--root", l.root], l.o.env);
  if (status.code !== 0) throw new Error(where(`loop status exited ${status.code}: ${status.stdout}\n${status.stderr}`));
  const st = status.json;
  if (st.loop.state !== "drained" || st.loop.outcome !== expected.outcome)
    throw new Error(where(`loop is ${st.loop.state} (${st.loop.outcome}), expected drained (${expected.outcome})`));
  const statuses = Object.fromEntries(st.items.map((i: any) => [i.id, i.status]));
  if (JSON.stringify(statuses) !== JSON.stringify(expected.items))
    throw new Error(where(`item statuses ${JSON.stringify(statuses)}, expected ${JSON.stringify(expected.items)}`));
  for (const it of st.items)
    if (it.session && !it.session.closed) throw new Error(where(`${it.id}: session of attempt ${it.session.attempt} was never closed`));

  const rows = readEvents(l.stateRoot);
  rows.forEach((r, i) => {
    if (r.seq !== i + 1) throw new Error(where(`seq gap: row ${i} has seq ${r.seq}`));
  });
  if (rows.at(-1)!.seq !== st.loop.logSeq) throw new Error(where(`status reports seq ${st.loop.logSeq}, the log ends at ${rows.at(-1)!.seq}`));

  // One reservation per (item, epoch, attempt), and every session start belongs to one.
  const reserved = new Map<string, number>();
  for (const r of rows.filter((r) => r.type === "launch_reserved")) {
    const pl = JSON.parse(r.payload);
    reserved.set(pl.key, (reserved.get(pl.key) ?? 0) + 1);
  }
  for (const [key, n] of reserved) if (n !== 1) throw new Error(where(`${key} reserved ${n} times`));
  // A reset starts an item's attempts again at 1 (a new epoch, a new reservation key): the runner
  // line "<item> <attempt>" may then appear once per epoch that reserved that attempt, never more.
  const reservedAttempts = new Map<string, number>();
  for (const r of rows.filter((r) => r.type === "launch_reserved")) {
    const k = `${r.item} ${JSON.parse(r.payload).attempt}`;
    reservedAttempts.set(k, (reservedAttempts.get(k) ?? 0) + 1);
  }
  const launches = readLaunches(l.launchLog);
  const seen = new Map<string, number>();
  for (const line of launches) {
    seen.set(line, (seen.get(line) ?? 0) + 1);
    if (!reservedAttempts.has(line)) throw new Error(where(`session "${line}" started without a reservation`));
    if (seen.get(line)! > reservedAttempts.get(line)!) throw new Error(where(`session "${line}" was started twice; launches: ${launches.join(", ")}`));
  }
  const startedEvents = rows.filter((r) => r.type === "session_started").map((r) => `${r.item} ${JSON.parse(r.payload).attempt}`);
  for (const s of startedEvents)
    if (!seen.has(s) && opts.everyStartRan !== false) throw new Error(where(`session_started for "${s}" but the runner never ran`));

  // One verify reservation per (item, epoch, attempt), and no attempt's verify command ran twice.
  const verifyKeys = rows.filter((r) => r.type === "verify_reserved").map((r) => JSON.parse(r.payload).key as string);
  if (new Set(verifyKeys).size !== verifyKeys.length) throw new Error(where(`a verify was reserved twice: ${verifyKeys.join(", ")}`));
  const verifyReserved = new Set(rows.filter((r) => r.type === "verify_reserved").map((r) => `${r.item} ${JSON.parse(r.payload).attempt}`));
  const verifies = readLaunches(l.verifyLog);
  if (new Set(verifies).size !== verifies.length) throw new Error(where(`a verify command ran twice for one attempt: ${verifies.join(", ")}`));
  for (const v of verifies) if (!verifyReserved.has(v)) throw new Error(where(`verify "${v}" ran without a reservation`));

  // terminal_state.json present with the outcome; RUNLOG.md needs no repair.
  const term = JSON.parse(readFileSync(join(l.stateRoot, "terminal_state.json"), "utf8"));
  if (term.outcome !== expected.outcome) throw new Error(where(`terminal_state.json outcome ${term.outcome}`));
  const copyDir = mkdtempSync(join(tmpdir(), "loop-runlog-"));
  try {
    const copy = join(copyDir, "RUNLOG.md");
    copyFileSync(join(l.stateRoot, "RUNLOG.md"), copy);
    const db = new Database(dbPath(l.stateRoot), { readonly: true });
    try {
      if (repairRunlog(copy, db)) throw new Error(where(`RUNLOG.md is not what the log implies:\n${readFileSync(join(l.stateRoot, "RUNLOG.md"), "utf8")}`));
    } finally {
      db.close();
    }
  } finally {
    rmSync(copyDir, { recursive: true, force: true });
  }

  const left = await waitNoProcesses(l.dir, 20_000, opts);
  if (left.length) {
    killProcessesUnder(l.dir);
    throw new Error(where(`processes left behind:\n${left.map((p) => `${p.pid} ${p.cmd}`).join("\n")}`));
  }
}

export function cleanupDir(dir: string): void {
  // The loop's worktrees are outside the repository (lib/shared/paths.ts worktreesRoot): its agents' cwd too.
  const worktrees = worktreesOf(join(dir, "repo", ".loop"));
  killProcessesUnder(dir);
  killProcessesUnder(worktrees);
  rmSync(dir, { recursive: true, force: true });
  rmSync(worktrees, { recursive: true, force: true });
}
