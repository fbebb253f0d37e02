// Real loop projects for CLI scenario tests: a temp git repository (branch main, local identity,
// one commit) with a loop.json, driven by spawning the real entry point `bun cmd/loop.ts …`.
// Everything is asynchronous (Bun.spawn), so independent scenarios can run as test.concurrent.
//
// Layout of one project:  <base>/repo   the git repository and loop root (state root repo/.loop)
//                         <base>/aux    files the test's scripts write (pid files, markers)
import { expect } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventType, StoredEvent, StoredEventOf } from "../../lib/log/events.ts";
import type { Projection } from "../../lib/log/projection.ts";
import type { RunResult } from "../../lib/step/step.ts";
import { headOf, iterateEvents, readProjection, rowToEvent, withReadSnapshot } from "../../lib/log/store.ts";
import { markedProcesses } from "../../lib/shared/process.ts";
import { BUN, type Env, LOOP, type RunResult as CliResult, spawnLoop } from "./cli.ts";
import { testEnv, worktreesOf } from "./env.ts";
import { git, gitOk, initRepo, writeLoopJson } from "./repo.ts";

// The shared pieces, under the names this harness has always exported.
export { BUN, LOOP, REPO } from "./cli.ts";
export { type CliResult, git, gitOk };

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
  async runUntil(done: (r: RunResult, p: Project) => boolean, o: { maxPolls?: number; pauseMs?: number; codes?: number[]; what?: string } = {}): Promise<RunResult> {
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
      for (const e of this.events()) if ((e.type === "session_started" || e.type === "verify_started") && typeof e.payload.pid === "number") pids.add(e.payload.pid);
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
    const marks = this.events().filter((e) => e.type === "launch_reserved").map((e) => e.payload.sessionId as string);
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
      const marks = this.events().filter((e) => e.type === "launch_reserved").map((e) => e.payload.sessionId as string);
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
