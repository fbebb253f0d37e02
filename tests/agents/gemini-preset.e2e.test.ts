// The real Gemini CLI (0.61.0) as loop's `gemini` preset, through `loop run`, against the fake of
// Gemini's API on 127.0.0.1 (tests/helpers/fake-gemini.ts) that is loop's GOOGLE_GEMINI_BASE_URL,
// on a fresh $HOME (no ~/.gemini: the preset's settings are in the session's own config home, named
// by GEMINI_CLI_HOME). Every session goes through its gateway, which holds loop's GEMINI_API_KEY
// (the agent has a stand-in) and meters Gemini's usageMetadata: an item passes with the tokens the
// fake served, its router's side requests included; ask → `loop ctl reply` → resume continues the
// same conversation (`--resume <id>`, from the chat file the CLI saved), the resumed attempt counting
// only its own requests; in the sandbox with no network it needs no host. Skipped, said once,
// without the CLI (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { feedLines, figureOf, initialState } from "../../lib/definition/usage-parsers.ts";
import { type FakeGemini, GEMINI_SETTINGS, geminiServed, startFakeGemini } from "../helpers/fake-gemini.ts";
import { demoDefinition, Project, scenario } from "../helpers/project.ts";
import { agentBin, agentPath } from "./agents.ts";

const SLOW = 240_000;
const LOOPS_KEY = "gemini-key-of-loop";

/** A fresh, empty $HOME, the CLI first on PATH, the fake as loop's Gemini upstream and loop's key. */
function agentEnv(p: Project, fake: FakeGemini): Record<string, string> {
  const home = join(p.aux, "home");
  mkdirSync(home, { recursive: true });
  return { PATH: `${agentPath(p.aux, "gemini", "gemini")}:${process.env.PATH}`, HOME: home, GOOGLE_GEMINI_BASE_URL: fake.url, GEMINI_API_KEY: LOOPS_KEY };
}

const bin = agentBin("gemini");

describe.skipIf(bin === null)("gemini as loop's preset", () => {
  test(
    "an item passes on a fresh $HOME: the shell call writes the file its verify checks; the fake sees loop's key, never the stand-in; the tokens are what it served",
    async () => {
      const fake = await startFakeGemini((t) => (t.replied ? { text: "Done." } : { shell: "printf 'hello\\n' > DONE.md" }));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], { defaults: { runner: "gemini" } }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            expect((await p.run()).action).toBe("launched");
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            expect(fake.turns.map((t) => [t.path.split(":")[1], t.replied])).toEqual([
              ["generateContent", false],
              ["streamGenerateContent", false],
              ["streamGenerateContent", true],
            ]);
            expect(new Set(fake.turns.map((t) => t.key))).toEqual(new Set([LOOPS_KEY]));
            expect(it.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: geminiServed(fake.turns) });
            // Its own result line says the same but for its thinking, which the gateway counts as output.
            const own = figureOf(feedLines(initialState("gemini"), readFileSync(join(p.sessionDir("a", 1), "output.log"), "utf8"))).tokens!;
            const thinking = fake.turns.reduce((n, t) => n + t.usage.thoughtsTokenCount, 0);
            expect(own).toEqual({ ...geminiServed(fake.turns), output: geminiServed(fake.turns).output - thinking });
            // The preset's argv, as recorded: headless, approvals off, trust skipped, the conversation named.
            const launch = JSON.parse(readFileSync(join(p.sessionDir("a", 1), "launch.json"), "utf8")) as { argv: string[] };
            expect(launch.argv).toEqual([
              "gemini",
              "--session-id",
              expect.stringMatching(/^[0-9a-f-]{36}$/),
              "--yolo",
              "--skip-trust",
              "--output-format",
              "stream-json",
              expect.stringMatching(/^--prompt=/),
            ]);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "ask → loop ctl reply → resume: the reply reaches the model in the same conversation; the resumed attempt records its own requests only",
    async () => {
      // By what the conversation holds, not its step: loop may end the asking process before its next request.
      const fake = await startFakeGemini((t) => {
        if (t.text.includes("Your question was answered")) return t.text.includes("echo blue-ok") ? { text: "Done." } : { shell: "echo blue-ok > COLOUR.md" };
        return t.replied ? { text: "Asked." } : { shell: `printf 'Which colour?\\n' > "$LOOP_ASK_FILE"` };
      });
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Pick a colour.", verify: "test -s COLOUR.md" }], { defaults: { runner: "gemini" } }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            expect((await p.run()).action).toBe("launched");
            await p.runUntil((r) => r.attention.some((a) => a.kind === "question"), { what: "the question" });
            const first = fake.turns.length;
            expect(p.projection().items.a!.attempts[0]!.usage!.tokens).toEqual(geminiServed(fake.turns));
            expect((await p.ctl(["reply", "--work-item", "a", "blue, please"])).code).toBe(0);
            expect((await p.ctl(["resume"])).code).toBe(0);
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            expect(it.attempts).toHaveLength(2);
            // Resumed, not started afresh: the second process's requests carry the first one's turns.
            const argvOf = (n: number) => (JSON.parse(readFileSync(join(p.sessionDir("a", n), "launch.json"), "utf8")) as { argv: string[] }).argv;
            expect(argvOf(2).slice(0, 3)).toEqual(["gemini", "--resume", argvOf(1)[2]!]);
            const resumed = fake.turns.slice(first).filter((t) => t.path.endsWith(":streamGenerateContent"));
            expect(resumed.length).toBeGreaterThan(0);
            for (const t of resumed) expect(t.text).toContain("Which colour?");
            expect(it.attempts[1]!.usage!.tokens).toEqual(geminiServed(fake.turns.slice(first)));
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "in the sandbox with no network, on a fresh $HOME: its config home is the session's own, it reaches its model through the bridge and no other host, and the item passes",
    async () => {
      const fake = await startFakeGemini((t) => (t.replied ? { text: "Done." } : { shell: "printf 'hello\\n' > DONE.md" }));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], {
            defaults: { runner: "gemini", sandbox: "bwrap", network: "none" },
          }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            expect(it.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: geminiServed(fake.turns) });
            // Its own result line says the same but for its thinking, which the gateway counts as output.
            const own = figureOf(feedLines(initialState("gemini"), readFileSync(join(p.sessionDir("a", 1), "output.log"), "utf8"))).tokens!;
            const thinking = fake.turns.reduce((n, t) => n + t.usage.thoughtsTokenCount, 0);
            expect(own).toEqual({ ...geminiServed(fake.turns), output: geminiServed(fake.turns).output - thinking });
            expect(() => readFileSync(join(p.sessionDir("a", 1), "gateway-refused.jsonl"), "utf8")).toThrow();
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "without GEMINI_API_KEY in loop's environment: the named environment fault before launch, no attempt spent; the real CLI, keyless, indeed fails",
    async () => {
      const fake = await startFakeGemini(() => ({ text: "Done." }));
      try {
        // No session is ever started, so not `scenario` (whose end checks the sessions' groups).
        const p = new Project(demoDefinition([{ id: "a", prompt: "Work.", verify: "true" }], { defaults: { runner: "gemini" } }));
        try {
          const { GEMINI_API_KEY: _, ...env } = agentEnv(p, fake);
          Object.assign(p.env, env);
          delete p.env.GEMINI_API_KEY;
          const r = await p.run([1]);
          expect(r.attention.map((a) => a.kind)).toContain("environment");
          expect(p.eventsOf("environment_fault").map((e) => e.payload.kind)).toEqual(["gemini_no_key"]);
          expect(p.eventsOf("launch_reserved")).toEqual([]);
          expect(fake.turns).toEqual([]);
          // What the fault stands in for: the CLI with the preset's settings and no key fails, asking no model.
          const home = join(p.aux, "cli-home");
          mkdirSync(join(home, ".gemini"), { recursive: true });
          writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify(GEMINI_SETTINGS));
          const cli = Bun.spawn([bin!, "--skip-trust", "--output-format", "stream-json", "--prompt=hi"], {
            env: { ...env, PATH: process.env.PATH!, GEMINI_CLI_HOME: home },
            cwd: p.root,
            stdout: "pipe",
            stderr: "pipe",
          });
          expect(await cli.exited).not.toBe(0);
          expect(fake.turns).toEqual([]);
        } finally {
          p.dispose();
        }
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});
