// The real Claude Code CLI as loop's agent, through `loop run`, against the fake Anthropic API on
// 127.0.0.1 (tests/helpers/fake-anthropic.ts): an item passes; what loop records is what the fake
// served (tokens and dollars, first attempt and resumed); ask → `loop ctl reply` → resume reaches
// the model; a token and a dollar budget stop the session. Skipped, said once, without the CLIs
// (`npm run agents:install`).
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type AnthropicUsage, ask, bash, claudeEnv, endless, type FakeAnthropic, say, startFakeAnthropic, steps } from "../helpers/fake-anthropic.ts";
import { demoDefinition, pollUntil, Project, scenario } from "../helpers/project.ts";
import { type AgentName, agentBin, agentPath } from "./agents.ts";

const SLOW = 240_000;
const MODEL = "claude-sonnet-4-5";

/** Claude Code's own price of claude-sonnet-4-5 (per million: $3 in, $15 out, $3.75 cache write, $0.30 cache read), in millionths of a dollar. */
export function sonnetMicroUsd(u: AnthropicUsage): number {
  return Math.round(u.input_tokens * 3 + u.output_tokens * 15 + u.cache_creation_input_tokens * 3.75 + u.cache_read_input_tokens * 0.3);
}

function tokensOf(u: AnthropicUsage) {
  return { input: u.input_tokens, output: u.output_tokens, cacheRead: u.cache_read_input_tokens, cacheWrite: u.cache_creation_input_tokens };
}

/** What the fake served from request `from` on (one process's requests), summed. */
function servedSince(fake: FakeAnthropic, from: number): AnthropicUsage {
  const t = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  for (const turn of fake.turns.slice(from)) for (const k of Object.keys(t) as (keyof AnthropicUsage)[]) t[k] += turn.usage[k];
  return t;
}

/** The project's agent environment: the CLI first on PATH, a fresh $HOME, pointed at the fake. */
function agentEnv(p: Project, fake: FakeAnthropic, name: AgentName): Record<string, string> {
  const home = join(p.aux, "home");
  mkdirSync(home, { recursive: true });
  return { PATH: `${agentPath(p.aux, name, "claude")}:${process.env.PATH}`, HOME: home, IS_SANDBOX: "1", ...claudeEnv(fake) };
}

for (const name of ["claude", "claude-2.1.197"] as const) {
  const bin = agentBin(name);
  describe.skipIf(bin === null)(`${name} as loop's agent`, () => {
    test(
      "an item passes: the agent's tool call writes the file its verify checks, and the attempt's tokens and dollars are what the fake served",
      async () => {
        const fake = await startFakeAnthropic(steps(bash("printf 'hello\\n' > DONE.md"), say("Done.")));
        try {
          await scenario(
            demoDefinition([{ id: "a", prompt: "Write DONE.md.", verify: "test -s DONE.md" }], { defaults: { runner: "claude", model: MODEL } }),
            {},
            async (p) => {
              Object.assign(p.env, agentEnv(p, fake, name));
              expect((await p.run()).action).toBe("launched");
              await p.runToDrain();
              const it = p.projection().items.a!;
              expect(it.status).toBe("passed");
              const agentTurns = fake.turns;
              expect(agentTurns.map((t) => t.tool)).toEqual(["Bash", null]);
              const usage = it.attempts[0]!.usage!;
              expect(usage.tokens).toEqual(tokensOf(servedSince(fake, 0)));
              expect(usage.microUsd).toBe(sonnetMicroUsd(servedSince(fake, 0)));
              expect(usage.usdFrom).toBe("agent");
            },
          );
        } finally {
          await fake.stop();
        }
      },
      SLOW,
    );

    test(
      "ask → loop ctl reply → resume: the reply reaches the model in the same conversation, and the resumed attempt records what its own process was served (tokens and dollars)",
      async () => {
        // By what the conversation holds, not its step: loop may end the asking process before its next turn.
        const fake = await startFakeAnthropic((t) => {
          if (t.lastUser.includes("reply.md")) return bash("printf '%s\\n' blue > COLOUR.md");
          if (t.step === 0) return ask("Which colour?");
          return say(t.userText.includes("reply.md") ? "Done." : "Asked.");
        });
        try {
          await scenario(
            demoDefinition([{ id: "a", prompt: "Pick a colour.", verify: "test -s COLOUR.md" }], { defaults: { runner: "claude", model: MODEL } }),
            {},
            async (p) => {
              Object.assign(p.env, agentEnv(p, fake, name));
              expect((await p.run()).action).toBe("launched");
              const asked = await p.runUntil((r) => r.attention.some((a) => a.kind === "question"), { what: "the question" });
              expect(asked.attention.map((a) => a.kind)).toEqual(["question"]);
              const first = fake.turns.length;
              const before = p.projection().items.a!.attempts[0]!.usage!;
              expect(before.tokens).toEqual(tokensOf(servedSince(fake, 0)));
              expect(before.microUsd).toBe(sonnetMicroUsd(servedSince(fake, 0)));
              expect((await p.ctl(["reply", "--work-item", "a", "blue, please"])).code).toBe(0);
              expect((await p.ctl(["resume"])).code).toBe(0);
              await p.runToDrain();
              const it = p.projection().items.a!;
              expect(it.status).toBe("passed");
              // The same conversation: the resumed request carries the first process's turns, and the reply's file.
              const resumed = fake.requests.filter((r) => r.agent).at(-1)!;
              expect(JSON.stringify(resumed.body)).toContain("Which colour?");
              expect(fake.turns[first]!.step).toBeGreaterThanOrEqual(1);
              const second = it.attempts[1]!.usage!;
              expect(second.tokens).toEqual(tokensOf(servedSince(fake, first)));
              expect(second.microUsd).toBe(sonnetMicroUsd(servedSince(fake, first)));
            },
          );
        } finally {
          await fake.stop();
        }
      },
      SLOW,
    );

    test(
      "a session ended mid-message (loop ctl stop): its gateway charges the cut message its worst case (docs/spend.md#the-gateway), so the tokens are never less than what the fake served, by at most the output its request allowed, and the dollars are at the operator's prices",
      async () => {
        const fake = await startFakeAnthropic((t) => (t.step < 3 ? bash(`echo step ${t.step}`, { output_tokens: 828 }) : { hangAfterStart: true }));
        try {
          const prices = { [MODEL]: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } };
          await scenario(
            demoDefinition([{ id: "a", prompt: "Work.", verify: "false" }], { defaults: { runner: "claude", model: MODEL }, prices }),
            {},
            async (p) => {
              // Its side requests on the same model, so that every answer has a price.
              Object.assign(p.env, agentEnv(p, fake, name), { ANTHROPIC_SMALL_FAST_MODEL: MODEL, ANTHROPIC_DEFAULT_HAIKU_MODEL: MODEL });
              expect((await p.run()).action).toBe("launched");
              await pollUntil(() => fake.turns.length === 4, "the fourth message hangs");
              expect((await p.ctl(["stop", "--work-item", "a", "--yes"])).code).toBe(0);
              await p.run([0, 1]);
              const usage = p.projection().items.a!.attempts[0]!.usage!;
              const served = tokensOf(fake.served.total);
              const total = (t: typeof served) => t.input + t.output + t.cacheRead + t.cacheWrite;
              // The cut request's limit: what its body asked for at most (claude asks 32,000 with a model named).
              const cut = fake.requests.filter((r) => r.method === "POST" && r.agent).at(-1)!.body as { max_tokens: number };
              expect(usage.tokens!.input).toBeGreaterThanOrEqual(served.input);
              expect(usage.tokens!.output).toBeGreaterThanOrEqual(served.output);
              expect(total(usage.tokens!) - total(served)).toBeLessThanOrEqual(cut.max_tokens);
              expect(usage.usdFrom).toBe("prices");
              expect(usage.microUsd!).toBeGreaterThanOrEqual(sonnetMicroUsd(fake.served.total) * 0.97);
            },
          );
        } finally {
          await fake.stop();
        }
      },
      SLOW,
    );

    test(
      "in the sandbox on a fresh $HOME (no ~/.claude): an item that asks is resumed after the reply in the conversation the CLI saved",
      async () => {
        // By what the conversation holds, not its step: loop may end the asking process before its next turn.
        const fake = await startFakeAnthropic((t) => {
          if (t.lastUser.includes("reply.md")) return bash("printf '%s\\n' blue > COLOUR.md");
          if (t.step === 0) return ask("Which colour?");
          return say(t.userText.includes("reply.md") ? "Done." : "Asked.");
        });
        try {
          await scenario(
            demoDefinition([{ id: "a", prompt: "Pick a colour.", verify: "test -s COLOUR.md", maxAttempts: 3 }], {
              defaults: { runner: "claude", model: MODEL, sandbox: "bwrap" },
            }),
            {},
            async (p) => {
              Object.assign(p.env, agentEnv(p, fake, name));
              expect((await p.run()).action).toBe("launched");
              await p.runUntil((r) => r.attention.some((a) => a.kind === "question"), { what: "the question" });
              expect((await p.ctl(["reply", "--work-item", "a", "blue, please"])).code).toBe(0);
              expect((await p.ctl(["resume"])).code).toBe(0);
              await p.runToDrain();
              const it = p.projection().items.a!;
              expect(it.status).toBe("passed");
              // Resumed, not started afresh: the second process's request carried the first one's turns.
              expect(it.attempts.length).toBe(2);
              const resumed = fake.requests.filter((r) => r.agent).at(-1)!;
              expect(JSON.stringify(resumed.body)).toContain("Which colour?");
            },
          );
        } finally {
          await fake.stop();
        }
      },
      SLOW,
    );

    test.skipIf(process.getuid?.() !== 0)(
      "as root without IS_SANDBOX: the documented environment fault before launch, no attempt spent, and the real CLI indeed refuses",
      async () => {
        const fake = await startFakeAnthropic(steps(say("Done.")));
        try {
          // No session is ever started, so not `scenario` (whose end checks the sessions' groups).
          const p = new Project(demoDefinition([{ id: "a", prompt: "Work.", verify: "true" }], { defaults: { runner: "claude", model: MODEL } }));
          try {
            const { IS_SANDBOX: _, ...env } = agentEnv(p, fake, name);
            Object.assign(p.env, env);
            const r = await p.run([1]);
            expect(r.attention.map((a) => a.kind)).toContain("environment");
            expect(p.eventsOf("environment_fault").map((e) => e.payload.kind)).toEqual(["claude_as_root"]);
            expect(p.eventsOf("launch_reserved")).toEqual([]);
            expect(fake.turns).toEqual([]);
            // What the fault stands in for: the CLI itself refuses, at once.
            const cli = Bun.spawnSync([bin!, "-p", "--dangerously-skip-permissions", "--", "hi"], { env: { ...env, PATH: process.env.PATH! }, cwd: p.root });
            expect(cli.exitCode).not.toBe(0);
            expect(cli.stderr.toString()).toContain("root");
          } finally {
            p.dispose();
          }
        } finally {
          await fake.stop();
        }
      },
      SLOW,
    );

    test(
      "a token budget stops an endless session: budget_exhausted, and no process is left",
      async () => {
        const fake = await startFakeAnthropic(endless(2_000));
        try {
          await scenario(
            demoDefinition([{ id: "a", prompt: "Loop.", verify: "false", budget: { tokens: 60_000 } }], { defaults: { runner: "claude", model: MODEL } }),
            {},
            async (p) => {
              Object.assign(p.env, agentEnv(p, fake, name));
              expect((await p.run()).action).toBe("launched");
              await p.runUntil((r) => r.transitions.some((t) => t.type === "budget_stopped"), { what: "the budget stop", maxPolls: 400 });
              const it = p.projection().items.a!;
              expect(it.settleCode).toBe("budget_exhausted");
            },
          );
        } finally {
          await fake.stop();
        }
      },
      SLOW,
    );

    test(
      "the CLI's own cap (--max-budget-usd) ends the session: its result line leaves out the last message, the recorded tokens do not",
      async () => {
        const fake = await startFakeAnthropic(endless(900));
        try {
          await scenario(
            demoDefinition([{ id: "a", prompt: "Loop.", verify: "false", budget: { usd: 0.2 } }], {
              defaults: { runner: "claude", model: MODEL, maxAttempts: 1 },
            }),
            {},
            async (p) => {
              Object.assign(p.env, agentEnv(p, fake, name));
              expect((await p.run()).action).toBe("launched");
              // No step in between: the CLI stops itself at the cap loop gave it.
              await pollUntil(() => existsSync(join(p.sessionDir("a", 1), "exit.json")), "the CLI stopped at its own cap", 2400);
              await p.run([0, 1]);
              const log = readFileSync(join(p.sessionDir("a", 1), "output.log"), "utf8");
              const result = log
                .split("\n")
                .filter((l) => l.includes('"type":"result"'))
                .map((l) => JSON.parse(l))
                .at(-1);
              const served = servedSince(fake, 0);
              // What the CLI's last line says is short of what it was served (the message that crossed its cap).
              expect(result.usage.output_tokens).toBeLessThan(served.output_tokens);
              const usage = p.projection().items.a!.attempts[0]!.usage!;
              expect(usage.tokens).toEqual(tokensOf(served));
              expect(usage.microUsd).toBe(sonnetMicroUsd(served));
            },
          );
        } finally {
          await fake.stop();
        }
      },
      SLOW,
    );

    test(
      "a dollar budget stops an endless session mid-session",
      async () => {
        const fake = await startFakeAnthropic(endless(2_000));
        try {
          await scenario(
            demoDefinition([{ id: "a", prompt: "Loop.", verify: "false", budget: { usd: 0.5 } }], { defaults: { runner: "claude", model: MODEL } }),
            {},
            async (p) => {
              Object.assign(p.env, agentEnv(p, fake, name));
              expect((await p.run()).action).toBe("launched");
              await p.runUntil((r) => r.transitions.some((t) => t.type === "budget_stopped" || t.type === "item_settled"), {
                what: "the budget stop",
                maxPolls: 400,
              });
              const it = p.projection().items.a!;
              expect(it.settleCode).toBe("budget_exhausted");
              // What loop recorded is within a few percent of what was served.
              const recorded = it.attempts[0]!.usage!;
              const served = sonnetMicroUsd(servedSince(fake, 0));
              expect(recorded.microUsd).not.toBeNull();
              expect(Math.abs(recorded.microUsd! - served) / served).toBeLessThan(0.05);
            },
          );
        } finally {
          await fake.stop();
        }
      },
      SLOW,
    );
  });
}
