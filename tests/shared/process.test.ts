// Session marks (lib/shared/process.ts): finding the processes that carry a session's mark in their
// environment, and ending them. Real processes, started with and without the mark.
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { endMarked, markedProcesses, marksIn, processStartTime, type ProcView } from "../../lib/shared/process.ts";

const started: Bun.Subprocess[] = [];
afterEach(() => {
  for (const p of started.splice(0)) p.kill("SIGKILL");
});

function sleeper(env: Record<string, string>, script = "echo ready; exec sleep 600"): Bun.Subprocess<"ignore", "pipe", "ignore"> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "LOOP_SESSION_MARK" && k !== "LOOP_SESSION_ID")) as Record<string, string>;
  const p = Bun.spawn(["sh", "-c", script], { env: { ...clean, ...env }, stdio: ["ignore", "pipe", "ignore"] });
  started.push(p);
  return p;
}

/** Wait for a sleeper's first line: what its script prints once it is set up (a trap in place). */
async function ready(p: Bun.Subprocess<"ignore", "pipe", "ignore">): Promise<void> {
  const { value } = await p.stdout.getReader().read();
  expect(new TextDecoder().decode(value)).toBe("ready\n");
}

/** Wait until a sleeper that ends in `exec sleep` is sleep: no longer in the middle of its exec. */
async function execd(p: Bun.Subprocess<"ignore", "pipe", "ignore">): Promise<void> {
  await ready(p);
  for (let i = 0; i < 400 && readFileSync(`/proc/${p.pid}/comm`, "utf8") !== "sleep\n"; i++) await Bun.sleep(10);
}

/** A made-up /proc: each pid's environment reads (the last repeats), stat state and flags, owner. */
function fakeProc(procs: Record<string, { environ: string[]; state?: string; flags?: number; uid?: number }>) {
  const reads: Record<string, number> = {};
  const sleeps: number[] = [];
  const view: ProcView = {
    pids: () => Object.keys(procs),
    environ: (pid) => {
      const all = procs[pid]!.environ;
      const n = (reads[pid] = (reads[pid] ?? 0) + 1);
      return Buffer.from(all[Math.min(n, all.length) - 1]!, "latin1");
    },
    stat: (pid) => {
      const rest = Array.from({ length: 44 }, () => "0");
      rest[0] = procs[pid]!.state ?? "S";
      rest[6] = String(procs[pid]!.flags ?? 0x400000);
      rest[19] = `t${pid}`;
      return rest;
    },
    uid: (pid) => procs[pid]!.uid ?? process.getuid!(),
    sleep: (ms) => void sleeps.push(ms),
  };
  return { view, reads, sleeps };
}

describe("marksIn", () => {
  const cases: [string, string[]][] = [
    ["LOOP_SESSION_MARK=abc\0PATH=/bin\0", ["abc"]],
    ["PATH=/bin\0LOOP_SESSION_MARK=abc", ["abc"]],
    ["PATH=/bin\0LOOP_SESSION_ID=old\0", ["old"]],
    ["LOOP_SESSION_MARK=new\0LOOP_SESSION_ID=id\0", ["new", "id"]],
    ["XLOOP_SESSION_MARK=abc\0", []], // the middle of another entry
    ["NOTE=LOOP_SESSION_MARK=abc\0", []],
    ["", []],
  ];
  for (const [env, want] of cases) test(JSON.stringify(env), () => expect(marksIn(Buffer.from(env, "latin1"))).toEqual(want));
});

describe("markedProcesses and endMarked", () => {
  test("finds exactly the processes carrying one of the marks (or the older LOOP_SESSION_ID), never this process", async () => {
    const mark = `test-${crypto.randomUUID()}`;
    const a = sleeper({ LOOP_SESSION_MARK: mark });
    const b = sleeper({ LOOP_SESSION_ID: mark });
    const other = sleeper({ LOOP_SESSION_MARK: `other-${crypto.randomUUID()}` });
    await Promise.all([a, b, other].map(execd));
    expect(
      markedProcesses([mark])
        .map((m) => m.pid)
        .sort(),
    ).toEqual([a.pid, b.pid].sort());
    expect(markedProcesses([]).length).toBe(0);
    expect(markedProcesses([mark]).every((m) => m.pid !== process.pid && m.mark === mark)).toBe(true);
    expect(markedProcesses([mark]).some((m) => m.pid === other.pid)).toBe(false);
  });

  test("a process caught mid-exec (its environment read empty) is read again and found; kernel threads and zombies are never waited on", () => {
    const { view, reads, sleeps } = fakeProc({
      "9001": { environ: ["", "", "PATH=/bin\0LOOP_SESSION_MARK=m\0"] },
      "9002": { environ: ["LOOP_SESSION_MARK=m\0"] },
      "9003": { environ: [""], flags: 0x00208040 }, // a kernel thread
      "9004": { environ: [""], state: "Z" },
      "9005": { environ: ["LOOP_SESSION_MARK=other\0"] },
      "9006": { environ: ["LOOP_SESSION_MARK=m\0"], uid: 12345 }, // another user's
    });
    expect(markedProcesses(["m"], view)).toEqual([
      { pid: 9002, started: "t9002", mark: "m" },
      { pid: 9001, started: "t9001", mark: "m" },
    ]);
    expect(sleeps).toHaveLength(2);
    expect([reads["9003"], reads["9004"], reads["9005"]]).toEqual([1, 1, 1]);
  });

  test("processes with no environment at all cost a few short waits per scan, not per process, and are not found", () => {
    const procs = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [String(9100 + i), { environ: [""] }]));
    const { view, sleeps } = fakeProc({ ...procs, "9200": { environ: ["LOOP_SESSION_MARK=m\0"] } });
    expect(markedProcesses(["m"], view).map((p) => p.pid)).toEqual([9200]);
    expect(sleeps.length).toBe(3);
    expect(sleeps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(50);
  });

  test("endMarked ends them (SIGKILL for one that ignores SIGTERM) and leaves the others alone", async () => {
    const mark = `test-${crypto.randomUUID()}`;
    const polite = sleeper({ LOOP_SESSION_MARK: mark });
    const stubborn = sleeper({ LOOP_SESSION_MARK: mark }, "trap '' TERM; echo ready; while :; do sleep 0.05; done");
    const bystander = sleeper({ LOOP_SESSION_MARK: `other-${crypto.randomUUID()}` });
    await Promise.all([polite, stubborn, bystander].map(ready));
    const r = await endMarked([mark], 200);
    expect(r.left).toEqual([]);
    expect(r.ended.map((m) => m.pid)).toEqual(expect.arrayContaining([polite.pid, stubborn.pid]));
    await Promise.all([polite.exited, stubborn.exited]);
    expect(polite.signalCode).toBe("SIGTERM");
    expect(stubborn.signalCode).toBe("SIGKILL");
    expect(bystander.killed).toBe(false);
    expect(markedProcesses([mark])).toEqual([]);
  });
});

describe("processStartTime", () => {
  test("this process's start time is the one another process reads for it (its main thread's stat, which an emulator leaves to the kernel)", () => {
    const own = processStartTime(process.pid);
    expect(own).toMatch(/^\d+$/);
    const seen = Bun.spawnSync(["sh", "-c", `cut -d' ' -f22 /proc/${process.pid}/stat`])
      .stdout.toString()
      .trim();
    expect(own).toBe(seen);
    // Another process's, through its own stat file.
    const child = Bun.spawn(["sleep", "5"]);
    try {
      const field = readFileSync(`/proc/${child.pid}/stat`, "utf8");
      expect(processStartTime(child.pid)).toBe(field.slice(field.lastIndexOf(")") + 2).split(" ")[19]!);
    } finally {
      child.kill();
    }
  });
});
