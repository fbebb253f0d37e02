#!/usr/bin/env bun
// bench/gateway.ts: what a session's gateway (lib/gateway/gateway.ts) adds to a model request
// (docs/threat-model.md#the-gateway): time to the first streamed byte through the gateway against
// straight to the upstream, round-robin so noise hits both alike (with an empty request, and with a
// 128 KiB one as Claude Code sends: the gateway reads a billed request's limits from it); the
// throughput of a long streamed
// answer each way; and the session start-up cost (startGateway, then stop). The upstream is a
// plain-HTTP model API in a process of its own that streams Anthropic events; client and gateway
// share this process, as the agent and the wrapper do not, so the figure is if anything too high.
// Target: ≤ 5 ms added to the first byte (median).
//   bun bench/gateway.ts [--runs 201] [--mib 64]
import { parseArgs } from "node:util";
import { join } from "node:path";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { startGateway } from "../lib/gateway/gateway.ts";

const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: "string" }, mib: { type: "string" } }, strict: true });
const RUNS = Number(values.runs ?? 201);
const MIB = Number(values.mib ?? 64);

const dir = mkdtempSync(join(tmpdir(), "loop-bench-gateway-"));
const script = join(dir, "upstream.ts");
writeFileSync(
  script,
  `
const start = 'event: message_start\\ndata: {"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}\\n\\n';
const delta = new TextEncoder().encode('event: content_block_delta\\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"' + "x".repeat(4000) + '"}}\\n\\n');
const end = 'event: message_delta\\ndata: {"type":"message_delta","usage":{"output_tokens":999}}\\n\\nevent: message_stop\\ndata: {"type":"message_stop"}\\n\\n';
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, async fetch(req) {
  await req.arrayBuffer();
  const big = new URL(req.url).searchParams.get("bytes");
  if (!big) return new Response(start + end, { headers: { "content-type": "text/event-stream" } });
  let left = Number(big);
  return new Response(new ReadableStream({ type: "direct", async pull(c) { c.write(start); while (left > 0) { c.write(delta); left -= delta.length; await c.flush(); } c.write(end); c.close(); } }), { headers: { "content-type": "text/event-stream" } });
} });
console.log(server.port);
`,
);
const up = Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "inherit" });
const reader = up.stdout.getReader();
let text = "";
while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
const upstream = `http://127.0.0.1:${Number(text.trim())}`;

const tokens = { n: 0 };
const g = await startGateway({
  upstreams: { anthropic: upstream, openai: upstream, gemini: upstream },
  keys: { anthropic: "real" },
  standIn: "stand-in",
  allow: undefined,
  onModelCall: (c) => (tokens.n += c.usage.output),
});

// A request the size of a Claude Code turn's (88 KB in the runs of lib/gateway/endpoints.ts, a long conversation more).
const BIG = JSON.stringify({ model: "claude-x", max_tokens: 32000, stream: true, messages: [{ role: "user", content: "x".repeat(128 * 1024) }] });

async function firstByte(url: string, body = "{}"): Promise<number> {
  const t0 = Bun.nanoseconds();
  const r = await fetch(url, { method: "POST", headers: { "x-api-key": "stand-in" }, body });
  const rd = r.body!.getReader();
  await rd.read();
  const t = (Bun.nanoseconds() - t0) / 1e6;
  while (!(await rd.read()).done);
  return t;
}

async function throughput(url: string): Promise<number> {
  const t0 = Bun.nanoseconds();
  const r = await fetch(`${url}?bytes=${MIB * 2 ** 20}`, { method: "POST", headers: { "x-api-key": "stand-in" }, body: "{}" });
  let n = 0;
  for await (const c of r.body!) n += c.length;
  return n / 2 ** 20 / ((Bun.nanoseconds() - t0) / 1e9);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const direct: number[] = [];
const via: number[] = [];
const directBig: number[] = [];
const viaBig: number[] = [];
for (let i = 0; i < 10; i++) await firstByte(`${upstream}/v1/messages`), await firstByte(`${g.modelUrl.anthropic}/v1/messages`);
for (let i = 0; i < RUNS; i++) {
  direct.push(await firstByte(`${upstream}/v1/messages`));
  via.push(await firstByte(`${g.modelUrl.anthropic}/v1/messages`));
  directBig.push(await firstByte(`${upstream}/v1/messages`, BIG));
  viaBig.push(await firstByte(`${g.modelUrl.anthropic}/v1/messages`, BIG));
}
const tpDirect = median([
  await throughput(`${upstream}/v1/messages`),
  await throughput(`${upstream}/v1/messages`),
  await throughput(`${upstream}/v1/messages`),
]);
const tpVia = median([
  await throughput(`${g.modelUrl.anthropic}/v1/messages`),
  await throughput(`${g.modelUrl.anthropic}/v1/messages`),
  await throughput(`${g.modelUrl.anthropic}/v1/messages`),
]);
await g.stop();
const starts: number[] = [];
for (let i = 0; i < 31; i++) {
  const t0 = Bun.nanoseconds();
  const h = await startGateway({ upstreams: { anthropic: upstream, openai: upstream, gemini: upstream }, keys: {}, standIn: "s", allow: "none" });
  await h.stop();
  starts.push((Bun.nanoseconds() - t0) / 1e6);
}
up.kill();
rmSync(dir, { recursive: true, force: true });
const added = median(via) - median(direct);
const addedBig = median(viaBig) - median(directBig);
console.log(`| figure | direct | through the gateway | added |\n|---|---|---|---|`);
console.log(`| first streamed byte, median of ${RUNS} (ms) | ${median(direct).toFixed(2)} | ${median(via).toFixed(2)} | ${added.toFixed(2)} (target ≤ 5) |`);
console.log(
  `| first streamed byte of a 128 KiB request, median of ${RUNS} (ms) | ${median(directBig).toFixed(2)} | ${median(viaBig).toFixed(2)} | ${addedBig.toFixed(2)} (target ≤ 5) |`,
);
console.log(`| throughput of a ${MIB} MiB streamed answer (MiB/s, median of 3) | ${tpDirect.toFixed(0)} | ${tpVia.toFixed(0)} | |`);
console.log(`| session start-up: startGateway + stop, median of 31 (ms) | | ${median(starts).toFixed(2)} | |`);
console.error(`load ${(await Bun.file("/proc/loadavg").text()).split(" ")[0]}; metered output tokens ${tokens.n}`);
process.exit(added <= 5 && addedBig <= 5 ? 0 : 1);
