// The real Codex CLI (0.171.0) as loop's agent, through `loop run`, against the fake OpenAI Responses
// API on 127.0.0.1 (tests/helpers/fake-openai.ts), behind its session's gateway as every codex with
// loop's OPENAI_API_KEY is (the fake is loop's OPENAI_BASE_URL; codex is given loop's model provider
// on its command line, and a private CODEX_HOME: the operator's config.toml, here pointing at the
// fake directly, is not read): an item passes with the tokens the fake served; ask → `loop ctl reply`
// → resume reaches the model in the same thread, the resumed attempt counting only its own turn.
// Skipped, said once, without the CLI (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { askCodex, codexEndless, codexHome, codexSteps, type FakeOpenAI, type OpenAIUsage, reply, shell, startFakeOpenAI } from "../helpers/fake-openai.ts";
import { demoDefinition, type Project, scenario } from "../helpers/project.ts";
import { agentBin, agentPath } from "./agents.ts";

const SLOW = 240_000;
/** The model the fake's tool calls fit (codex offers another shell tool to other models); given in loop.json, as an operator would: the operator's config.toml is not read. */
const CODEX_MODEL = "gpt-5.1-codex";

function servedSince(fake: FakeOpenAI, from: number) {
  const t: OpenAIUsage = { input_tokens: 0, cached_tokens: 0, output_tokens: 0, reasoning_tokens: 0 };
  for (const turn of fake.turns.slice(from)) for (const k of Object.keys(t) as (keyof OpenAIUsage)[]) t[k] += turn.usage[k];
  // As loop counts: cached input apart from the rest; reasoning is part of the output.
  return { input: t.input_tokens - t.cached_tokens, output: t.output_tokens, cacheRead: t.cached_tokens, cacheWrite: 0 };
}

function agentEnv(p: Project, fake: FakeOpenAI): Record<string, string> {
  const home = join(p.aux, "home");
  mkdirSync(home, { recursive: true });
  // Not under /tmp's top: codex refuses to make its helper links there (it says so and goes on).
  return {
    PATH: `${agentPath(p.aux, "codex", "codex")}:${process.env.PATH}`,
    HOME: home,
    ...codexHome(fake, join(home, ".codex")),
    OPENAI_BASE_URL: `${fake.url}/v1`,
    OPENAI_API_KEY: "sk-loops-own-openai-key",
  };
}

const bin = agentBin("codex");

/** The codex packages as an npm install under the project's aux folder (in /tmp, which the sandbox hides), hard-linked, not copied: its node_modules. */
function hiddenInstall(p: Project): string {
  const modules = join(p.aux, "npm", "node_modules");
  mkdirSync(join(modules, "@openai"), { recursive: true });
  const from = dirname(dirname(dirname(bin!)));
  expect(Bun.spawnSync(["cp", "-al", join(from, "codex"), join(from, "codex-linux-x64"), join(modules, "@openai")]).exitCode).toBe(0);
  return modules;
}
describe.skipIf(bin === null)("codex as loop's agent", () => {
  test(
    "an item passes: the agent's shell call writes the file its verify checks, and the attempt's tokens are what the fake served",
    async () => {
      const fake = await startFakeOpenAI(codexSteps(shell("printf 'hello\\n' > DONE.md"), reply("Done.")));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], {
            defaults: { runner: "codex", model: CODEX_MODEL },
            environment: { pass: ["FAKE_OPENAI_API_KEY"] },
          }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            expect((await p.run()).action).toBe("launched");
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            expect(fake.turns.map((t) => t.shell !== null)).toEqual([true, false]);
            expect(it.attempts[0]!.usage!.tokens).toEqual(servedSince(fake, 0));
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "ask → loop ctl reply → resume: the reply reaches the model in the same thread; the resumed attempt records its own turn only",
    async () => {
      // By what the thread holds, not its step: loop may end the asking process before its next turn.
      const fake = await startFakeOpenAI((t) => {
        const replied = t.userText.includes("reply.md");
        if (replied && !fake.turns.some((x) => x.shell?.includes("COLOUR.md"))) return shell("printf '%s\\n' blue > COLOUR.md");
        if (t.step === 0) return askCodex("Which colour?");
        return reply(replied ? "Done." : "Asked.");
      });
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Pick a colour.", verify: "test -s COLOUR.md" }], {
            defaults: { runner: "codex", model: CODEX_MODEL },
            environment: { pass: ["FAKE_OPENAI_API_KEY"] },
          }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            expect((await p.run()).action).toBe("launched");
            await p.runUntil((r) => r.attention.some((a) => a.kind === "question"), { what: "the question" });
            const first = fake.turns.length;
            expect(p.projection().items.a!.attempts[0]!.usage!.tokens).toEqual(servedSince(fake, 0));
            expect((await p.ctl(["reply", "--work-item", "a", "blue, please"])).code).toBe(0);
            expect((await p.ctl(["resume"])).code).toBe(0);
            await p.runToDrain();
            const it = p.projection().items.a!;
            expect(it.status).toBe("passed");
            const resumed = fake.requests.filter((r) => r.path.endsWith("/responses")).at(-2)!;
            expect(JSON.stringify(resumed.body)).toContain("Which colour?");
            expect(it.attempts[1]!.usage!.tokens).toEqual(servedSince(fake, first));
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "inside one endless turn, where codex itself reports nothing (docs/runners.md#codex-behind-the-gateway), its gateway's figure grows request by request: loop status shows the tokens served so far, and loop ctl stop ends it",
    async () => {
      const fake = await startFakeOpenAI(codexEndless(900));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Loop.", verify: "false" }], {
            defaults: { runner: "codex", model: CODEX_MODEL, maxAttempts: 1 },
            environment: { pass: ["FAKE_OPENAI_API_KEY"] },
          }),
          {},
          async (p) => {
            Object.assign(p.env, agentEnv(p, fake));
            expect((await p.run()).action).toBe("launched");
            // Some model answers served, the turn still running: the figure recorded is what the gateway metered.
            await p.runUntil((_r, q) => fake.served.responses >= 3 && (q.projection().items.a!.attempts[0]?.usage?.tokens?.output ?? 0) >= 3 * 900, {
              what: "a figure while the turn runs",
              maxPolls: 400,
            });
            const it = p.projection().items.a!;
            expect(it.status).toBe("running");
            const json = JSON.parse((await p.loop(["status", "--json", "--root", p.root])).stdout);
            expect(json.items[0].usage.output).toBeGreaterThanOrEqual(3 * 900);
            expect(existsSync(join(p.sessionDir("a", 1), "gateway-usage.jsonl"))).toBe(true);
            // Held: its session ended, the item back to pending (not counted as failed); the figure stays.
            expect((await p.ctl(["stop", "--work-item", "a", "--yes"])).code).toBe(0);
            await p.runUntil((_r, q) => q.projection().items.a!.status === "pending", { what: "the session ended", maxPolls: 200 });
            expect(p.projection().items.a!.attempts[0]!.usage!.tokens).toEqual(servedSince(fake, 0));
            expect((await p.ctl(["cancel", "--work-item", "a", "--yes"])).code).toBe(0);
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "in the sandbox, a wrapper script that runs codex from a hidden path: an environment fault before the launch (program_fails_in_sandbox), no attempt spent; it runs outside the sandbox",
    async () => {
      const fake = await startFakeOpenAI(codexSteps(shell("printf 'hello\\n' > DONE.md"), reply("Done.")));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], {
            defaults: { runner: "codex", model: CODEX_MODEL, sandbox: "bwrap" },
            environment: { pass: ["FAKE_OPENAI_API_KEY"] },
          }),
          {},
          async (p) => {
            // A copy of the package under /tmp (hidden in the sandbox), and a wrapper script elsewhere on PATH that runs it.
            const modules = hiddenInstall(p);
            const wrappers = join(p.aux, "wrappers");
            mkdirSync(wrappers);
            writeFileSync(join(wrappers, "codex"), `#!/bin/sh\nexec ${join(modules, "@openai", "codex", "bin", "codex.js")} "$@"\n`, { mode: 0o755 });
            const env = agentEnv(p, fake);
            Object.assign(p.env, { ...env, PATH: `${wrappers}:${process.env.PATH}` });
            expect(Bun.spawnSync([join(wrappers, "codex"), "--version"], { env: { ...process.env, ...p.env } }).exitCode).toBe(0);
            const r = await p.run([1]);
            expect(r.action).toBe("paused");
            const fault = p.eventsOf("environment_fault")[0]!.payload;
            expect(fault).toMatchObject({ kind: "program_fails_in_sandbox", attempt: null });
            expect(fault.reason).toContain(join(wrappers, "codex"));
            expect(p.projection().items.a!.attempts).toEqual([]);
            expect(fake.requests.length).toBe(0);
            // Put right (the CLI where the sandbox sees it) and resumed: the first attempt runs and passes.
            Object.assign(p.env, env);
            expect((await p.ctl(["resume"])).code).toBe(0);
            await p.runToDrain();
            expect({ status: p.projection().items.a!.status, attempts: p.projection().items.a!.attempts.length }).toEqual({ status: "passed", attempts: 1 });
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );

  test(
    "in the sandbox, installed by npm under a hidden path (/tmp): the launcher finds its native package, and the item passes",
    async () => {
      const fake = await startFakeOpenAI(codexSteps(shell("printf 'hello\\n' > DONE.md"), reply("Done.")));
      try {
        await scenario(
          demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], {
            defaults: { runner: "codex", model: CODEX_MODEL, sandbox: "bwrap" },
            environment: { pass: ["FAKE_OPENAI_API_KEY"] },
          }),
          {},
          async (p) => {
            // An npm install under /tmp (which the sandbox hides), with its .bin link.
            const modules = hiddenInstall(p);
            mkdirSync(join(modules, ".bin"));
            symlinkSync("../@openai/codex/bin/codex.js", join(modules, ".bin", "codex"));
            const env = agentEnv(p, fake);
            Object.assign(p.env, { ...env, PATH: `${join(modules, ".bin")}:${process.env.PATH}` });
            const first = await p.run([0, 1]);
            expect({ action: first.action, reason: first.action === "launched" ? null : first.reason }).toEqual({ action: "launched", reason: null });
            await p.runToDrain();
            expect(p.projection().items.a!.status).toBe("passed");
          },
        );
      } finally {
        await fake.stop();
      }
    },
    SLOW,
  );
});
