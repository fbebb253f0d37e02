// Spend end to end (docs/spend.md): real loops stepped by the real entry point, with script agents
// that print each CLI's format (a `claude`, `codex` and `aider` of their own on PATH), the demo agent
// and a command runner reporting through LOOP_USAGE_FILE. An item that crosses its budget mid-session
// is ended within one tick and settles budget_exhausted with no process left; a loop budget pauses
// the loop before the next launch and `resume` after raising it goes on; unknown usage is shown as
// unknown; the no-progress and identical-failure guards fire and can be turned off.
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, pollUntil, type Project, scenario } from "../helpers/project.ts";

const SLOW = 180_000;

/** A program named `name` on a PATH of the project's own: a shell script. */
function fakeCli(p: Project, name: string, body: string): Record<string, string> {
  const bin = join(p.aux, "bin");
  Bun.spawnSync(["mkdir", "-p", bin]);
  writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
  chmodSync(join(bin, name), 0o755);
  // Claude Code refuses to run as root without IS_SANDBOX=1 (lib/decisions/faults.ts): these tests may run as root.
  return { PATH: `${bin}:${process.env.PATH}`, IS_SANDBOX: "1" };
}

const claudeMsg = (id: string) =>
  `{"type":"assistant","message":{"id":"${id}","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"working"}],"usage":{"input_tokens":1000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":500}},"parent_tool_use_id":null,"session_id":"s"}`;

describe("an item's budget", () => {
  test(
    "a claude session printing without end crosses its item's budget: the tick that records the crossing ends it through the close path, the item settles budget_exhausted, its dependent is blocked, the loop goes on, the operator hears once",
    async () => {
      await scenario(
        (p) =>
          demoDefinition(
            [
              { id: "runaway", prompt: "Spend without end.", runner: "claude", budget: { tokens: 5000, usd: 2 } },
              { id: "after-runaway", prompt: "Needs the runaway.", dependsOn: ["runaway"] },
              { id: "cheap", prompt: "A small job." },
            ],
            { notify: { command: ["sh", "-c", `cat >> ${join(p.aux, "notify.jsonl")}`] } },
          ),
        {},
        async (p) => {
          const env = fakeCli(
            p,
            "claude",
            [
              // Written aside and renamed: the test polls for the file, and must never read it half-written.
              `printf '%s\\n' "$@" > ${join(p.aux, "argv.tmp")} && mv ${join(p.aux, "argv.tmp")} ${join(p.aux, "argv.txt")}`,
              `echo '{"type":"system","subtype":"init","session_id":"s","model":"claude-test","tools":[]}'`,
              "i=0",
              // A message every 0.2 s, 1,500 tokens each, until it is ended; stderr in between.
              `while true; do i=$((i+1)); printf '%s\\n' '${claudeMsg("m")}' | sed "s/\\"id\\":\\"m\\"/\\"id\\":\\"m$i\\"/"; echo "stderr noise $i" >&2; sleep 0.2; done`,
            ].join("\n"),
          );
          Object.assign(p.env, env);
          const launched = await p.run();
          expect(launched.action).toBe("launched");
          // Its own cap: what is left of the item's dollars, as claude's --max-budget-usd.
          await pollUntil(() => existsSync(join(p.aux, "argv.txt")), "the agent started");
          const argv = readFileSync(join(p.aux, "argv.txt"), "utf8").split("\n");
          expect(argv[argv.indexOf("--max-budget-usd") + 1]).toBe("2");
          // Without `codes`, every step is held to exit 1 exactly while the loop needs a person.
          const stopped = await p.runUntil((r) => r.transitions.some((t) => t.type === "budget_stopped"), { what: "the budget stop" });
          // Ended within the tick that first recorded a figure at or over the budget.
          const crossing = p.eventsOf("usage_recorded", "runaway").find((e) => e.payload.tokens && e.payload.tokens.input + e.payload.tokens.output >= 5000)!;
          expect(stopped.transitions.map((t) => t.seq)).toContain(crossing.seq);
          expect(stopped.transitions.map((t) => t.type)).toEqual(
            expect.arrayContaining(["usage_recorded", "session_ended", "session_closed", "budget_stopped", "item_settled"]),
          );
          expect(stopped.attention).toEqual([expect.objectContaining({ kind: "budget", item: "runaway" })]);
          const it = p.projection().items.runaway!;
          expect(it).toMatchObject({ status: "failed", settleCode: "budget_exhausted" });
          // Its reason names the figures, for people.
          expect(it.reason).toContain("runaway spent");
          expect(it.reason).toContain("of its budget of 5,000 tokens");
          expect(it.attempts[0]!.usage!.final).toBe(true);
          await p.runToDrain();
          const q = p.projection();
          expect(q.items["after-runaway"]!.status).toBe("blocked");
          expect(q.items.cheap!.status).toBe("passed");
          // Heard once, whatever the number of ticks since.
          const notes = readFileSync(join(p.aux, "notify.jsonl"), "utf8")
            .split("\n")
            .filter(Boolean)
            .map((l) => JSON.parse(l));
          expect(notes.filter((n) => n.kind === "budget").map((n) => n.key)).toEqual(["budget:runaway:e0:a1"]);
          // Status: the item's figure and the loop's total.
          const status = JSON.parse((await p.loop(["status", "--json"])).stdout);
          const runaway = status.items.find((i: { id: string }) => i.id === "runaway");
          expect(runaway.usage.tokens).toBeGreaterThanOrEqual(5000);
          expect(runaway.usage.usd).toBeNull();
          expect(runaway.budget).toMatchObject({ tokens: 5000, usd: 2, stopped: { unit: "tokens", limit: 5000 } });
          expect(status.loop.usage.tokens).toBe(runaway.usage.tokens + status.items.find((i: { id: string }) => i.id === "cheap").usage.tokens);
        },
      );
    },
    SLOW,
  );
});

describe("the loop's budget", () => {
  test(
    "crossed: no new attempt starts, the loop pauses naming the figures and how to raise it; `loop ctl resume` after raising it goes on",
    async () => {
      const def = (tokens: number) =>
        demoDefinition(
          [
            { id: "big", prompt: "Big.\n@demo usage 3000 0" },
            { id: "next", prompt: "Next." },
          ],
          { budget: { tokens } },
        );
      await scenario(def(2000), {}, async (p) => {
        const paused = await p.runUntil((r) => r.action === "paused", { what: "the budget pause" });
        expect(paused.reason).toMatch(
          /^budget: the loop spent 3,\d{3} tokens of its budget of 2,000 tokens \(budget.tokens in loop.json\); no attempt starts until it is raised: raise it, then `loop ctl resume`$/,
        );
        expect(paused.attention).toEqual([expect.objectContaining({ kind: "budget", item: null })]);
        expect(p.projection().items.big!.status).toBe("passed");
        expect(p.eventsOf("launch_reserved", "next")).toEqual([]);
        // Resumed without raising it: paused again before any launch.
        await p.ctl(["resume"]);
        expect((await p.run([1])).action).toBe("paused");
        expect(p.eventsOf("launch_reserved", "next")).toEqual([]);
        p.writeDefinition(def(100_000));
        await p.ctl(["resume"]);
        await p.runToDrain();
        expect(p.projection().items.next!.status).toBe("passed");
        const text = (await p.loop(["status", "--text"])).stdout;
        expect(text).toMatch(/^spend: [\d,]+ tokens, \$[\d.]+ over 2 attempt\(s\); last 24 hours: /m);
        expect(text).toContain("budget: 100,000 tokens");
      });
    },
    SLOW,
  );
});

describe("usage from each source", () => {
  test(
    "codex's turn.completed and aider's printed lines become the items' figures; the operator's prices give codex its dollars; a command runner that reports nothing is unknown, never zero",
    async () => {
      await scenario(
        demoDefinition(
          [
            { id: "by-codex", prompt: "Codex.", runner: "codex", model: "gpt-test" },
            { id: "by-aider", prompt: "Aider.", runner: "aider", model: "gpt-test" },
            { id: "silent", prompt: "Says nothing.", runner: "quiet" },
          ],
          { runners: { quiet: { command: ["sh", "-c", "echo done"] } }, prices: { "gpt-test": { input: 1, output: 10, cacheRead: 0.1 } } },
        ),
        {},
        async (p) => {
          Object.assign(
            p.env,
            fakeCli(
              p,
              "codex",
              [
                `echo '{"type":"thread.started","thread_id":"t-1"}'`,
                "echo 'not json: a warning' >&2",
                `echo '{"type":"turn.completed","usage":{"input_tokens":30000,"cached_input_tokens":20000,"output_tokens":1000}}'`,
              ].join("\n"),
            ),
          );
          Object.assign(
            p.env,
            fakeCli(
              p,
              "aider",
              [
                "echo 'Main model: gpt-test with diff edit format'",
                "echo 'Tokens: 2.6k sent, 112 received. Cost: $0.0096 message, $0.0096 session.'",
                "echo 'Tokens: 4.1k sent, 95 received. Cost: $0.01 message, $0.0196 session.'",
              ].join("\n"),
            ),
          );
          await p.runToDrain();
          const status = JSON.parse((await p.loop(["status", "--json"])).stdout);
          const by = (id: string) => status.items.find((i: { id: string }) => i.id === id);
          expect(by("by-codex").usage).toMatchObject({
            tokens: 31000,
            input: 10000,
            cacheRead: 20000,
            output: 1000,
            cacheWrite: 0,
            usd: 0.022,
            attempt: { source: "codex", usdFrom: "prices", final: true },
          });
          expect(by("by-aider").usage).toMatchObject({
            tokens: 6700 + 207,
            input: 6700,
            output: 207,
            usd: 0.0196,
            attempt: { source: "aider", usdFrom: "agent" },
          });
          expect(by("silent").usage).toMatchObject({ tokens: null, usd: null, unknown: { tokens: 1, usd: 1 } });
          expect(status.loop.usage).toMatchObject({ tokens: 31000 + 6907, usd: 0.0416, attempts: 3, unknown: { tokens: 1, usd: 1 } });
          const text = (await p.loop(["status", "--text"])).stdout;
          // Unknown once, with how to report it, not on every row (docs/cli/loop-status.md#text).
          expect(text).toMatch(/^silent +passed +1 +0 \(gives up at 2\) +\? +quiet +/m);
          expect(text).not.toMatch(/unknown\s{2}/);
          // A passed item's session is closed: no pid that names nothing any more.
          expect(text).not.toMatch(/^silent .* pid \d+/m);
          expect(text.match(/usage unknown/g)).toEqual(["usage unknown"]);
          expect(text).toContain(
            "usage unknown: 1 of 3 attempt(s) reported no tokens, 1 no dollars; shown as ? for silent (runner quiet); a command runner reports its usage by appending JSON lines to $LOOP_USAGE_FILE (docs/runners.md#reporting-usage)",
          );
          // export carries the same figures.
          const exported = JSON.parse((await p.loop(["export", "--json"])).stdout);
          expect(exported.items.find((i: { id: string }) => i.id === "by-codex").usage.tokens).toBe(31000);
          expect(exported.usage.tokens).toBe(status.loop.usage.tokens);
        },
      );
    },
    SLOW,
  );
});

describe("a session ended by the operator", () => {
  test(
    "`loop ctl stop` and `loop reset` record the session's final figure priced as a step prices it: a codex session's dollars come from loop.json's prices, never unknown",
    async () => {
      await scenario(
        demoDefinition([{ id: "long", prompt: "Works for a while.", runner: "codex", model: "gpt-test" }], {
          prices: { "gpt-test": { input: 1, output: 10, cacheRead: 0.1 } },
        }),
        {},
        async (p) => {
          const turn = `{"type":"turn.completed","usage":{"input_tokens":30000,"cached_input_tokens":20000,"output_tokens":1000}}`;
          Object.assign(p.env, fakeCli(p, "codex", [`echo '{"type":"thread.started","thread_id":"t-1"}'`, `echo '${turn}'`, "exec sleep 600"].join("\n")));
          const finalFigure = () =>
            p
              .eventsOf("usage_recorded", "long")
              .filter((e) => e.payload.final)
              .at(-1)?.payload;
          for (const [end, args] of [
            ["ctl stop", ["stop", "--yes"]],
            ["reset", null],
          ] as const) {
            expect((await p.run()).action).toBe("launched");
            const log = p.projection().items.long!.session!.log!;
            await pollUntil(() => existsSync(log) && readFileSync(log, "utf8").includes("turn.completed"), "the agent's turn");
            // No tick has recorded it yet: the close path reads it first, and must price it.
            if (args) expect((await p.ctl([...args])).code).toBe(0);
            else expect((await p.loop(["reset", "--work-item", "long", "--yes"])).code).toBe(0);
            expect({ end, figure: finalFigure() }).toMatchObject({ end, figure: { microUsd: 22000, usdFrom: "prices" } });
            if (args) await p.ctl(["start"]);
          }
        },
      );
    },
    SLOW,
  );
});

describe("the guards", () => {
  const failing = (guards?: Record<string, boolean>) =>
    demoDefinition(
      [{ id: "stuck", prompt: "Cannot be done.\n@demo print thinking", verify: "echo 'expected 3, got 2'; exit 1", maxAttempts: 3 }],
      guards ? { guards } : {},
    );

  test(
    "on by default: an attempt that changed nothing is named no_progress in its verdict and its next handoff; two identical failures stop the retries (identical_failure)",
    async () => {
      await scenario(failing(), {}, async (p) => {
        await p.runToDrain({ codes: [0, 1] });
        const it = p.projection().items.stuck!;
        expect(it.status).toBe("failed");
        expect(it.attempts.length).toBe(2);
        expect(it.attempts[0]!.verify).toMatchObject({ code: "exit_nonzero", noProgress: true });
        // The next attempt is told, in the verdict's words.
        expect(p.handoff("stuck", 2)).toContain("no_progress: this attempt changed nothing");
        expect(it.settleCode).toBe("identical_failure");
        expect(it.reason).toContain("attempts 1 and 2 failed the same way (exit 1, verify output sha256 ");
      });
    },
    SLOW,
  );

  test(
    "turned off: no name, and every attempt of maxAttempts is made",
    async () => {
      await scenario(failing({ noProgress: false, identicalFailure: false }), {}, async (p) => {
        await p.runToDrain({ codes: [0, 1] });
        const it = p.projection().items.stuck!;
        expect(it.attempts.length).toBe(3);
        expect(it.attempts.map((a) => a.verify!.reason)).toEqual(["exit 1", "exit 1", "exit 1"]);
        expect(it.attempts.map((a) => a.verify!.noProgress)).toEqual([false, false, false]);
        expect(it.settleCode).toBe("verify_failed");
      });
    },
    SLOW,
  );
});

describe("the demo agent", () => {
  test(
    "reports its usage through LOOP_USAGE_FILE, so the demo's status shows a figure per item and a total",
    async () => {
      await scenario(
        demoDefinition([
          { id: "a", prompt: "A.\n@demo write A.md a" },
          { id: "b", prompt: "B." },
        ]),
        {},
        async (p) => {
          await p.runToDrain();
          expect(existsSync(join(p.sessionDir("a", 1), "usage.jsonl"))).toBe(true);
          const status = JSON.parse((await p.loop(["status", "--json"])).stdout);
          const [a, b] = status.items.map((i: { usage: { tokens: number } }) => i.usage.tokens);
          expect(status.loop.usage.tokens).toBe(a + b);
          for (const it of status.items) {
            expect(typeof it.usage.tokens === "number" && typeof it.usage.usd === "number").toBe(true);
            expect(it.usage.attempt).toMatchObject({ source: "usage_file", usdFrom: "agent" });
          }
        },
      );
    },
    SLOW,
  );
});

describe("a running figure", () => {
  test("usage_recorded: an observing tick records nothing when the running figure did not change (docs/events.md#usage_recorded)", async () => {
    const def = demoDefinition([{ id: "slow", prompt: "Slow\n@demo usage 100 10\n@demo sleep 4\n@demo write a.txt a\n@demo commit a" }]);
    await scenario(def, {}, async (p) => {
      await p.run(); // launches
      // Ticks while the agent sleeps: its usage file stays the same.
      for (let i = 0; i < 4; i++) {
        await Bun.sleep(300);
        await p.run();
      }
      const running = p.eventsOf("usage_recorded", "slow").filter((e) => !e.payload.final);
      const distinct = new Set(running.map((e) => JSON.stringify(e.payload)));
      // "recorded by an observing tick only when it changed": one event per distinct figure.
      expect(running.length).toBe(distinct.size);
      await p.runToDrain();
    });
  }, 60_000);
});
