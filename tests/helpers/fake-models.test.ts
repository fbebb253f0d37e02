// The fake model APIs answer in the real APIs' shapes (the event order each documents), log what
// reached them and sum what they served; the CLIs themselves are run against them in tests/agents/.
import { expect, test } from "bun:test";
import { bash, startFakeAnthropic, steps, say } from "./fake-anthropic.ts";
import { codexSteps, reply, shell, startFakeOpenAI } from "./fake-openai.ts";

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
