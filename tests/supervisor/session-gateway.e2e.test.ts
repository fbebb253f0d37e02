// The session wrapper with a gateway (lib/supervisor/session-gateway.ts): `loop __session` run for
// real, its agent a Bun script that calls the model API the ordinary way (ANTHROPIC_BASE_URL,
// ANTHROPIC_API_KEY) and tries a host off its list, against a plain-HTTP model API on 127.0.0.1.
// The agent's environment holds the stand-in, never loop's key (not in /proc/self/environ, not
// readable from the wrapper's); every model call's usage is in the session folder, exact; the
// budget refuses the request after the one that reached it; the refused host is recorded.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, LOOP } from "../helpers/cli.ts";
import { testEnv } from "../helpers/env.ts";
import { GATEWAY_FILES } from "../../lib/supervisor/gateway-files.ts";

const REAL_KEY = "sk-ant-api03-real-key-only-loop-holds";
const STAND_IN = "loop-session-stand-in-4f1c";
const dirs: string[] = [];
const stops: (() => void)[] = [];
afterAll(() => {
  for (const s of stops) s();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const STREAM = [
  [
    "message_start",
    {
      type: "message_start",
      message: { id: "m", type: "message", usage: { input_tokens: 1234, cache_creation_input_tokens: 56, cache_read_input_tokens: 7890, output_tokens: 1 } },
    },
  ],
  ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 321 } }],
  ["message_stop", { type: "message_stop" }],
]
  .map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`)
  .join("");

describe("a session behind its gateway", () => {
  test("the agent holds only the stand-in; usage is recorded per call, exact; the budget refuses the next call; a host off the list is refused and recorded", async () => {
    const keys: (string | null)[] = [];
    const api = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        keys.push(req.headers.get("x-api-key"));
        await req.arrayBuffer();
        return new Response(STREAM, { headers: { "content-type": "text/event-stream" } });
      },
    });
    stops.push(() => api.stop(true));
    const dir = mkdtempSync(join(tmpdir(), "loop-session-gateway-"));
    dirs.push(dir);
    const agent = join(dir, "agent.ts");
    writeFileSync(
      agent,
      `
const { readFileSync, writeFileSync } = require("node:fs");
const report = { baseUrl: process.env.ANTHROPIC_BASE_URL, key: process.env.ANTHROPIC_API_KEY, proxy: process.env.HTTPS_PROXY, statuses: [] };
report.ownEnvironHasKey = readFileSync("/proc/self/environ", "latin1").includes(${JSON.stringify(REAL_KEY)});
try { report.parentEnviron = readFileSync("/proc/" + process.ppid + "/environ", "latin1").includes(${JSON.stringify(REAL_KEY)}) ? "has the key" : "readable, no key"; } catch (e) { report.parentEnviron = "unreadable"; }
for (let i = 0; i < 3; i++) {
  const r = await fetch(process.env.ANTHROPIC_BASE_URL + "/v1/messages", { method: "POST", headers: { "x-api-key": process.env.ANTHROPIC_API_KEY, "content-type": "application/json" }, body: "{}" });
  const text = await r.text();
  report.statuses.push(r.status);
  if (r.status !== 200) report.refusal = JSON.parse(text).error.message;
}
try { const r = await fetch("http://not-on-the-list.invalid:81/"); report.offList = r.status; } catch (e) { report.offList = "error " + e.message; }
writeFileSync(${JSON.stringify(join(dir, "report.json"))}, JSON.stringify(report));
`,
    );
    writeFileSync(
      join(dir, "launch.json"),
      JSON.stringify({ argv: [BUN, agent], cwd: dir, env: {}, tee: false, gateway: { standIn: STAND_IN, allow: ["127.0.0.1:1"], maxTokens: 10_000 } }),
    );
    const proc = Bun.spawn([BUN, LOOP, "__session", dir], {
      env: testEnv({ ANTHROPIC_API_KEY: REAL_KEY, ANTHROPIC_BASE_URL: `http://127.0.0.1:${api.port}` }),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await proc.exited).toBe(0);
    expect(existsSync(join(dir, "exit.json"))).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, "exit.json"), "utf8")).code).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, "report.json"), "utf8"));
    expect(report.key).toBe(STAND_IN);
    expect(report.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/anthropic$/);
    expect(report.proxy).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(report.ownEnvironHasKey).toBe(false);
    // The wrapper (holding loop's key) is undumpable: its environment is closed to the agent, unless both run as root, whom nothing holds back.
    if (process.getuid?.() !== 0) expect(report.parentEnviron).toBe("unreadable");
    // 9501 tokens a call: the second starts under 10000 and goes; the third is refused before the upstream.
    expect(report.statuses).toEqual([200, 200, 403]);
    expect(report.refusal).toContain("budget_exhausted");
    expect(keys).toEqual([REAL_KEY, REAL_KEY]);
    expect(report.offList).toBe(403);
    const usage = readFileSync(join(dir, GATEWAY_FILES.usage), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(usage.map((u) => u.usage)).toEqual([
      { input: 1234, output: 321, cacheRead: 7890, cacheWrite: 56 },
      { input: 1234, output: 321, cacheRead: 7890, cacheWrite: 56 },
    ]);
    const refused = readFileSync(join(dir, GATEWAY_FILES.refused), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(refused.map((r) => [r.kind, r.host ?? null, r.port ?? null])).toEqual([
      ["budget", null, null],
      ["network", "not-on-the-list.invalid", 81],
    ]);
    // No file the agent could read in its folder holds the key.
    for (const f of ["launch.json", "started.json", "exit.json", "output.log", GATEWAY_FILES.usage, GATEWAY_FILES.refused])
      if (existsSync(join(dir, f))) expect(readFileSync(join(dir, f), "utf8")).not.toContain(REAL_KEY);
  });
});
