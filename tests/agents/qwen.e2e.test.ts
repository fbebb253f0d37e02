// The real Qwen Code (@qwen-code/qwen-code 0.24.4) as loop's agent, through `loop run`, as the command
// runner docs/runners.md gives for it ("pi and Qwen Code as command runners"), its runner and its
// `$HOME/.qwen/settings.json` read from the doc itself so the two cannot drift apart, against a fake
// of OpenAI's Chat Completions on 127.0.0.1 (tests/helpers/fake-openai-chat.ts) that is loop's
// OPENAI_BASE_URL. Qwen Code honours OPENAI_BASE_URL and OPENAI_API_KEY: the session's gateway holds
// loop's key (Qwen Code has the stand-in) and meters every answer's usage chunk: an item passes with
// the tokens the fake served. Skipped, said once, without the CLI (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chatSay, chatShell, chatTokens, startFakeOpenAIChat } from "../helpers/fake-openai-chat.ts";
import { demoDefinition, scenario } from "../helpers/project.ts";
import { agentBin, agentPath, runnersDocJson } from "./agents.ts";

const SLOW = 240_000;
const LOOPS_KEY = "sk-loops-own-openai-key";
const MODEL = "qwen3-coder-plus";

/** What docs/runners.md gives for Qwen Code, as written there: its runner and its settings file. */
function qwenRecipe(): { runner: { command: string[]; sandbox?: string }; settings: Record<string, unknown> } {
  const blocks = runnersDocJson("pi and Qwen Code as command runners") as Record<string, unknown>[];
  const runner = blocks.map((b) => (b.runners as { qwen?: { command: string[]; sandbox?: string } } | undefined)?.qwen).find((r) => r !== undefined);
  const settings = blocks.find((b) => (b.security as { auth?: { selectedType?: unknown } } | undefined)?.auth?.selectedType === "openai");
  if (!runner || !settings) throw new Error('docs/runners.md gives no `runners.qwen` and settings under "pi and Qwen Code as command runners"');
  return { runner, settings };
}

const bin = agentBin("qwen");

describe.skipIf(bin === null)("Qwen Code as loop's agent (the command runner docs/runners.md gives)", () => {
  test(
    "an item passes: its shell call writes the file its verify checks; its requests reach the fake through the gateway with loop's key; the tokens are what the fake served",
    async () => {
      const { runner, settings } = qwenRecipe();
      // Outside the sandbox, as the doc says: $HOME/.qwen must be writable.
      expect(runner.sandbox).toBe("none");
      const fake = await startFakeOpenAIChat((t) => (t.step === 0 ? chatShell("printf 'hello\\n' > DONE.md") : chatSay("Done.")));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], {
            defaults: { runner: "qwen", model: MODEL },
            runners: { qwen: runner },
          }),
          {},
          async (p) => {
            const home = join(p.aux, "home");
            mkdirSync(join(home, ".qwen"), { recursive: true });
            writeFileSync(join(home, ".qwen", "settings.json"), JSON.stringify(settings));
            Object.assign(p.env, {
              PATH: `${agentPath(p.aux, "qwen", "qwen")}:${process.env.PATH}`,
              HOME: home,
              OPENAI_BASE_URL: `${fake.url}/v1`,
              OPENAI_API_KEY: LOOPS_KEY,
            });
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            const session = p.sessionDir("a", 1);
            // The doc's command, its placeholders filled: the item's model, the handoff as the prompt.
            const launch = JSON.parse(readFileSync(join(session, "launch.json"), "utf8")) as { argv: string[] };
            const handoff = readFileSync(join(session, "handoff.md"), "utf8");
            expect(launch.argv).toEqual(runner.command.map((a) => (a === "{model}" ? MODEL : a === "{prompt}" ? handoff : a)));
            // Its two turns, streamed, their usage asked for; each request sent loop's key by the gateway.
            const posts = fake.requests.filter((r) => r.method === "POST");
            expect(posts.every((r) => r.path === "/v1/chat/completions")).toBe(true);
            expect(fake.turns.map((t) => [t.step, t.shell !== null, t.usageSent])).toEqual([
              [0, true, true],
              [1, false, true],
            ]);
            expect(posts.filter((r) => r.agent).every((r) => r.body?.model === MODEL && r.body?.stream === true)).toBe(true);
            expect(new Set(posts.map((r) => r.headers.authorization))).toEqual(new Set([`Bearer ${LOOPS_KEY}`]));
            expect(it.attempts[0]!.usage).toMatchObject({ source: "gateway", tokens: chatTokens(fake.served.total) });
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});
