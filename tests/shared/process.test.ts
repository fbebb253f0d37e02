// Session marks (lib/shared/process.ts): finding the processes that carry a session's mark in their
// environment, and ending them. Real processes, started with and without the mark.
import { afterEach, describe, expect, test } from "bun:test";
import { endMarked, markedProcesses, marksIn } from "../../lib/shared/process.ts";

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
    await Promise.all([a, b, other].map(ready));
    expect(markedProcesses([mark]).map((m) => m.pid).sort()).toEqual([a.pid, b.pid].sort());
    expect(markedProcesses([]).length).toBe(0);
    expect(markedProcesses([mark]).every((m) => m.pid !== process.pid && m.mark === mark)).toBe(true);
    expect(markedProcesses([mark]).some((m) => m.pid === other.pid)).toBe(false);
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
