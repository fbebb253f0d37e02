// What a session sees and leaves, through `loop run` (lib/supervisor/sessions.ts, session-wrapper.ts):
// the ask file is read only as the file the agent wrote (never through a link in its place), the
// agent's environment carries no LOOP_FAILPOINT, and a failed item's reason counts failed attempts,
// not attempts (a question spends none).
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, scenario } from "../helpers/project.ts";
import { sessionAlive } from "../../lib/supervisor/liveness.ts";
import { processStartTime } from "../../lib/shared/process.ts";

const T = 120_000;

describe("the ask file", () => {
  test.concurrent(
    "a symbolic or hard link in its place is not read and is no question: the session's end says it was ignored, the linked file's content is recorded nowhere",
    () =>
      scenario(
        (p) => {
          writeFileSync(join(p.aux, "secret"), "root:x:0:0:TOP-SECRET\n");
          writeFileSync(join(p.aux, "secret2"), "root:x:0:0:TOP-SECRET-2\n");
          return demoDefinition(
            [
              { id: "soft", prompt: "x", runner: "soft" },
              { id: "hard", prompt: "x", runner: "hard" },
            ],
            {
              runners: {
                soft: { command: ["sh", "-c", `ln -s ${join(p.aux, "secret")} "$LOOP_ASK_FILE"`] },
                hard: { command: ["sh", "-c", `ln ${join(p.aux, "secret2")} "$LOOP_ASK_FILE"`] },
              },
            },
          );
        },
        {},
        async (p) => {
          const last = await p.runToDrain();
          expect(last.reason).toBe("Succeeded");
          expect(p.eventsOf("needs_input")).toEqual([]);
          const ends = Object.fromEntries(p.eventsOf("session_ended").map((e) => [e.item, e.payload.reason]));
          expect(ends).toEqual({
            soft: `agent exited with code 0; its ask file ${join(p.sessionDir("soft", 1), "ask.txt")} was not read: it is a symbolic link`,
            hard: `agent exited with code 0; its ask file ${join(p.sessionDir("hard", 1), "ask.txt")} was not read: it has 2 links (a hard link to another file)`,
          });
          const everything = [
            readFileSync(join(p.stateRoot, "state.json"), "utf8"),
            readFileSync(join(p.stateRoot, "RUNLOG.md"), "utf8"),
            JSON.stringify(p.events()),
          ].join("\n");
          expect(everything).not.toContain("TOP-SECRET");
        },
      ),
    T,
  );
});

describe("the agent's environment and attempt counting", () => {
  test.concurrent(
    "LOOP_FAILPOINT never reaches the agent (not even empty); an item that asked once and then failed twice settles with 'failed attempt 2 of 2; attempt 3 in all'",
    () =>
      scenario(
        (p) =>
          demoDefinition([{ id: "ask-then-fail", prompt: "x", runner: "envdump", verify: "echo nope; exit 1" }], {
            // The agent changes nothing: without this its verdicts would be named no_progress (docs/spend.md#guards).
            guards: { noProgress: false },
            runners: {
              envdump: {
                command: ["sh", "-c", `env > ${join(p.aux, "env")}-$LOOP_ATTEMPT; if [ "$LOOP_ATTEMPT" = 1 ]; then echo 'Which one?' > "$LOOP_ASK_FILE"; fi`],
              },
            },
          }),
        // Armed with a point no step reaches: every command of the scenario runs with it set.
        { env: { LOOP_FAILPOINT: "no.such:point" } },
        async (p) => {
          await p.runUntil((r) => r.action === "paused", { what: "asked" });
          expect((await p.ctl(["reply", "--work-item", "ask-then-fail", "the first"])).code).toBe(0);
          expect((await p.ctl(["resume"])).code).toBe(0);
          const last = await p.runToDrain();
          expect(last.reason).toBe("Failed");
          const it = p.projection().items["ask-then-fail"]!;
          expect([it.attempts.length, it.failures]).toEqual([3, 2]);
          expect(it.reason).toBe("verify failed: exit 1 (failed attempt 2 of 2; attempt 3 in all)");
          for (const n of [1, 2, 3]) {
            const env = readFileSync(join(p.aux, `env-${n}`), "utf8");
            expect(env).toContain(`LOOP_ATTEMPT=${n}\n`);
            expect(env.split("\n").filter((l) => l.startsWith("LOOP_FAILPOINT"))).toEqual([]);
          }
        },
      ),
    T,
  );
});

describe("a session's liveness", () => {
  test("a group whose leader has another start time than the recorded wrapper's is another group (a new pod's pids start from 1 again)", async () => {
    const child = Bun.spawn(["sleep", "60"], { detached: true, stdio: ["ignore", "ignore", "ignore"] });
    try {
      const start = processStartTime(child.pid);
      expect(start).not.toBeNull();
      const s = { pid: child.pid, tmux: null };
      expect(sessionAlive(s, process.env, start)).toBe(true);
      // Without a recorded start (an older wrapper's started.json): any live member counts.
      expect(sessionAlive(s, process.env, null)).toBe(true);
      // The recorded wrapper started at another time: the group alive now is not the session's.
      expect(sessionAlive(s, process.env, String(Number(start) + 1))).toBe(false);
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
    expect(sessionAlive({ pid: child.pid, tmux: null }, process.env, null)).toBe(false);
  });
});
