// The fake model APIs answer in the real APIs' shapes (the event order each documents), log what
// reached them and sum what they served; the CLIs themselves are run against them in tests/agents/.
import { expect, test } from "bun:test";
import { bash, startFakeAnthropic, steps, say } from "./fake-anthropic.ts";
import { codexSteps, reply, shell, startFakeOpenAI } from "./fake-openai.ts";
import { chatSay, chatShell, chatSteps, startFakeOpenAIChat } from "./fake-openai-chat.ts";

function events(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .split("\n\n")
    .filter((b) => b.trim() !== "")
    .map((b) => {
      const [ev, data] = b.split("\n");
      return { event: ev!.slice("event: ".length), data: JSON.parse(data!.slice("data: ".length)) as Record<string, unknown> };
    });
}

test("the fake Anthropic API streams a message as the Messages API does and counts what it served", async () => {
  const fake = await startFakeAnthropic(steps(bash("echo hi", { output_tokens: 828 }), say("Done.")));
  try {
    const head = await fetch(fake.url, { method: "HEAD" });
    expect(head.status).toBe(200);
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-sonnet-4-5", stream: true, tools: [{ name: "Bash" }], messages: [{ role: "user", content: "go" }] }),
    });
    expect(res.headers.get("connection")).toBe("close");
    const ev = events(await res.text());
    expect(ev.map((e) => e.event)).toEqual([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect((ev[0]!.data.message as { usage: { output_tokens: number } }).usage.output_tokens).toBe(1);
    expect((ev[5]!.data.usage as { output_tokens: number }).output_tokens).toBe(828);
    expect((ev[5]!.data.delta as { stop_reason: string }).stop_reason).toBe("tool_use");
    expect(fake.served.total.output_tokens).toBe(828);
    expect(fake.requests.map((r) => [r.method, r.path, r.agent])).toEqual([
      ["HEAD", "/", false],
      ["POST", "/v1/messages", true],
    ]);
  } finally {
    await fake.stop();
  }
});

test("the fake OpenAI API streams a response as the Responses API does, calling the shell tool offered", async () => {
  const fake = await startFakeOpenAI(codexSteps(shell("echo hi"), reply("Done.")));
  try {
    const res = await fetch(`${fake.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-5",
        stream: true,
        tools: [{ type: "function", name: "exec_command" }],
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "go" }] }],
      }),
    });
    const ev = events(await res.text());
    expect(ev.map((e) => e.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const item = ev[5]!.data.item as { name: string; arguments: string };
    expect(item.name).toBe("exec_command");
    expect(JSON.parse(item.arguments)).toEqual({ cmd: "echo hi" });
    const usage = (ev[6]!.data.response as { usage: { input_tokens: number; input_tokens_details: { cached_tokens: number } } }).usage;
    expect(usage.input_tokens).toBe(fake.served.total.input_tokens);
    expect(ev.map((e) => e.data.sequence_number)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  } finally {
    await fake.stop();
  }
});

test("the fake Chat Completions API streams chunks as OpenAI's does: a tool call's name, then its arguments; the usage chunk only when asked for; [DONE] last", async () => {
  const fake = await startFakeOpenAIChat(chatSteps(chatShell("echo hi", { completion_tokens: 77 }), chatSay("Done.")));
  try {
    const ask = (streamOptions: Record<string, unknown> | undefined) =>
      fetch(`${fake.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "qwen3-coder-plus",
          stream: true,
          ...(streamOptions ? { stream_options: streamOptions } : {}),
          tools: [{ type: "function", function: { name: "run_shell_command", parameters: {} } }],
          messages: [{ role: "user", content: "go" }],
        }),
      }).then((r) => r.text());
    const datas = (text: string) =>
      text
        .split("\n\n")
        .filter((b) => b.trim() !== "")
        .map((b) => {
          expect(b.startsWith("data: ")).toBe(true);
          return b.slice("data: ".length);
        });
    const asked = datas(await ask({ include_usage: true }));
    expect(asked.at(-1)).toBe("[DONE]");
    const chunks = asked.slice(0, -1).map((d) => JSON.parse(d) as Record<string, unknown>);
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    type Choice = {
      delta: { role?: string; tool_calls?: { index: number; id?: string; function: { name?: string; arguments: string } }[] };
      finish_reason: string | null;
    };
    const choices = chunks.slice(0, -1).map((c) => (c.choices as Choice[])[0]!);
    expect(choices[0]!.delta.role).toBe("assistant");
    const calls = choices.flatMap((c) => c.delta.tool_calls ?? []);
    expect(calls[0]!.function.name).toBe("run_shell_command");
    expect(calls[0]!.id).toBeDefined();
    expect(JSON.parse(calls.map((c) => c.function.arguments).join(""))).toMatchObject({ command: "echo hi" });
    expect(choices.at(-1)!.finish_reason).toBe("tool_calls");
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect((last.usage as { completion_tokens: number }).completion_tokens).toBe(77);
    // Not asked for its usage: no usage chunk, and no `usage` field, yet served (and billed) all the same.
    const unasked = datas(await ask(undefined));
    expect(unasked.at(-1)).toBe("[DONE]");
    expect(unasked.slice(0, -1).some((d) => "usage" in (JSON.parse(d) as Record<string, unknown>))).toBe(false);
    expect(fake.served.completions).toBe(2);
    expect(fake.turns.map((t) => t.usageSent)).toEqual([true, false]);
  } finally {
    await fake.stop();
  }
});
