// The real Gemini CLI (0.61.0) as loop's agent, through `loop run`, as the `command` runner
// docs/runners.md gives (there is no `gemini` preset yet), against a fake of Gemini's API on
// 127.0.0.1 (tests/helpers/fake-gemini.ts) that is loop's GOOGLE_GEMINI_BASE_URL: every session goes
// through its gateway, which meters Gemini's usageMetadata. An item passes with the tokens the fake
// served (its router's side request included), a token budget stops it at the gateway, and an agent
// that gives up ends `gave_up`. Skipped,
// said once, without the CLI (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeGemini, GEMINI_SETTINGS, geminiServed, startFakeGemini } from "../helpers/fake-gemini.ts";
import { demoDefinition, type Project, scenario } from "../helpers/project.ts";
import { agentBin, agentPath } from "./agents.ts";

const SLOW = 240_000;

/** The command runner docs/runners.md gives for Gemini CLI. */
const GEMINI_RUNNER = { command: ["gemini", "-p", "{prompt}", "--yolo", "--skip-trust", "--output-format", "stream-json", "--session-id", "{session_id}"] };

/** Its home with the settings it needs, the CLI first on PATH, and the fake as loop's Gemini upstream. */
function agentEnv(p: Project, fake: FakeGemini): Record<string, string> {
  const home = join(p.aux, "home");
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify(GEMINI_SETTINGS));
  return {
    PATH: `${agentPath(p.aux, "gemini", "gemini")}:${process.env.PATH}`,
    HOME: home,
    GOOGLE_GEMINI_BASE_URL: fake.url,
    GEMINI_API_KEY: "gemini-key-of-the-test",
  };
}

const bin = agentBin("gemini");

describe.skipIf(bin === null)("gemini as loop's agent (a command runner)", () => {
  test(
    "an item passes: the agent's shell call writes the file its verify checks; the tokens are what the fake served, metered by the gateway",
    async () => {
      const fake = await startFakeGemini((t) => (t.replied ? { text: "Done." } : { shell: "printf 'hello\\n' > DONE.md" }));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], { defaults: { runner: "gem" }, runners: { gem: GEMINI_RUNNER } }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            // The router's request, the shell call, the answer after it.
            expect(fake.turns.map((t) => [t.path.split(":")[1], t.replied])).toEqual([
              ["generateContent", false],
              ["streamGenerateContent", false],
              ["streamGenerateContent", true],
            ]);
            expect(it.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: geminiServed(fake.turns) });
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "an agent that gives up: its reason recorded, no verify, nothing landed, not retried",
    async () => {
      const fake = await startFakeGemini((t) =>
        t.replied ? { text: "I gave up." } : { shell: `printf 'The spec and the test disagree.\\n' > "$LOOP_GIVE_UP_FILE"` },
      );
      try {
        await scenario(
          (p) =>
            demoDefinition([{ id: "a", prompt: "Make the test pass.", verify: `touch ${join(p.aux, "verified")}`, maxAttempts: 3 }], {
              defaults: { runner: "gem" },
              runners: { gem: GEMINI_RUNNER },
            }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            await p.runToDrain({ codes: [0, 1] });
            const it = p.projection().items.a!;
            expect(it).toMatchObject({ status: "failed", settleCode: "gave_up" });
            expect(it.attempts).toHaveLength(1);
            expect(it.attempts[0]!.verify!.reason).toBe("gave_up: the agent gave up: The spec and the test disagree.");
            expect(existsSync(join(p.aux, "verified"))).toBe(false);
            expect(it.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: geminiServed(fake.turns) });
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "a token budget stops an endless session at the gateway: the request after the one that reached it is refused, the item settles budget_exhausted, the figure the fake's to the token",
    async () => {
      const LIMIT = 6_000;
      const fake = await startFakeGemini(() => ({ shell: "echo again" }));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Loop.", verify: "false", budget: { tokens: LIMIT }, maxAttempts: 1 }], {
            defaults: { runner: "gem" },
            runners: { gem: GEMINI_RUNNER },
          }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            await p.runUntil((_r, q) => q.projection().items.a!.status === "failed", { what: "the item failed", maxPolls: 400, codes: [0, 1] });
            const it = p.projection().items.a!;
            expect(it.settleCode).toBe("budget_exhausted");
            const recorded = it.attempts[0]!.usage!.tokens!;
            expect(recorded).toEqual(geminiServed(fake.turns));
            const sum = (t: typeof recorded) => t.input + t.output + t.cacheRead + t.cacheWrite;
            // Within one model request of the limit: the last answer served crossed it, and nothing after it was.
            expect(sum(recorded)).toBeGreaterThanOrEqual(LIMIT);
            expect(sum(recorded) - sum(geminiServed(fake.turns.slice(-1)))).toBeLessThan(LIMIT);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});
