// Sessions behind their gateway through `loop run` (docs/threat-model.md#the-gateway): an item with
// a `network` setting runs its agent behind a per-session gateway. The agent, a command runner that
// calls the model API the ordinary way (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY), talks to a
// plain-HTTP model API on 127.0.0.1 through it: its environment holds only the stand-in, loop records
// what the API's answers said (to the token, whatever the agent prints), the item's budget refuses
// the model request after the one that reached it, and a host off the list is refused and recorded.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, scenario } from "../helpers/project.ts";
import { BUN } from "../helpers/cli.ts";
import { startFakeAnthropic } from "../helpers/fake-anthropic.ts";

const REAL_KEY = "sk-ant-api03-loop-run-real-key";
const stops: (() => void)[] = [];
afterAll(() => {
  for (const s of stops) s();
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

describe("loop run with a network setting", () => {
  test("the agent holds the stand-in only; the usage recorded is the model API's, exact; the budget refuses the next request; the refused host is in the session folder", async () => {
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
    await scenario(
      (p) => {
        const agent = join(p.aux, "agent.ts");
        writeFileSync(
          agent,
          `
const { readFileSync, writeFileSync } = require("node:fs");
const report = { key: process.env.ANTHROPIC_API_KEY, environHasKey: readFileSync("/proc/self/environ", "latin1").includes(${JSON.stringify(REAL_KEY)}), statuses: [] };
for (let i = 0; i < 4; i++) {
  const r = await fetch(process.env.ANTHROPIC_BASE_URL + "/v1/messages", { method: "POST", headers: { "x-api-key": process.env.ANTHROPIC_API_KEY }, body: "{}" });
  await r.text();
  report.statuses.push(r.status);
}
try { report.offList = (await fetch("http://elsewhere.invalid:8080/")).status; } catch (e) { report.offList = String(e); }
// What an agent prints about its spend counts for nothing here.
writeFileSync(process.env.LOOP_USAGE_FILE, JSON.stringify({ tokens: { input: 1, output: 1 } }) + "\\n");
writeFileSync(${JSON.stringify(join(p.aux, "report.json"))}, JSON.stringify(report));
writeFileSync("done.txt", "done\\n");
`,
        );
        return demoDefinition([{ id: "x", prompt: "Call the model.", runner: "caller", budget: { tokens: 15000 } }], {
          defaults: { network: ["127.0.0.1:1"] },
          runners: { caller: { command: [BUN, agent] } },
        });
      },
      {},
      async (p) => {
        Object.assign(p.env, { ANTHROPIC_API_KEY: REAL_KEY, ANTHROPIC_BASE_URL: `http://127.0.0.1:${api.port}` });
        await p.runToDrain({ codes: [0, 1] });
        const report = JSON.parse(readFileSync(join(p.aux, "report.json"), "utf8"));
        expect(report.key).toStartWith("loop-stand-in-");
        expect(report.environHasKey).toBe(false);
        // 9501 tokens a request: the second starts under 15000 and goes; the third is refused before the API.
        expect(report.statuses).toEqual([200, 200, 403, 403]);
        expect(keys).toEqual([REAL_KEY, REAL_KEY]);
        expect(report.offList).toBe(403);
        const figures = p.eventsOf("usage_recorded", "x");
        expect(figures.filter((e) => e.payload.final)).toHaveLength(1);
        const final = figures.at(-1)!.payload;
        expect(final.tokens).toEqual({ input: 2468, output: 642, cacheRead: 15780, cacheWrite: 112 });
        const session = p.eventsOf("session_started", "x")[0]!.payload;
        const dir = join(session.log, "..");
        const refused = readFileSync(join(dir, "gateway-refused.jsonl"), "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        expect(refused.map((r) => [r.kind, r.host ?? null])).toEqual([
          ["budget", null],
          ["budget", null],
          ["network", "elsewhere.invalid"],
        ]);
        // loop logs --network shows them, escaped; --json as its document.
        const shown = await p.loop(["logs", "x", "--network"]);
        expect(shown.code).toBe(0);
        expect(shown.stdout).toMatch(
          /^\S+ refused a model request: the session's budget is spent \(19002 of 15000 tokens\) \(budget_exhausted\)\n\S+ refused a model request: .*\n\S+ refused elsewhere\.invalid:8080 \(not on the network list\)\n$/,
        );
        const doc = JSON.parse((await p.loop(["logs", "x", "--network", "--json"])).stdout);
        expect(doc).toMatchObject({ schema: "loop/network@1", item: "x", attempt: 1, attempts: 1, unreadable: 0 });
        expect(doc.refused.at(-1)).toMatchObject({ kind: "network", host: "elsewhere.invalid", port: 8080 });
        expect((await p.loop(["logs", "x", "--network", "--verify"])).code).toBe(2);
        const status = JSON.parse((await p.loop(["status", "--json"])).stdout);
        expect(status.items[0].network).toMatchObject({ refused: 1, budgetRefused: 2, modelRefused: 0, lastHost: { host: "elsewhere.invalid", port: 8080 } });
        expect((await p.loop(["status", "--text"])).stdout).toContain("x: its gateway refused 1 connection(s), the last to elsewhere.invalid:8080 at");
        // Refused at the source, the session is stopped as a running one over its budget would be.
        expect(p.projection().items.x!.status).toBe("failed");
        expect(p.projection().items.x!).toMatchObject({ settleCode: "budget_exhausted", reason: expect.stringContaining("x spent") });
        expect(p.eventsOf("budget_stopped", "x")).toHaveLength(1);
      },
    );
  }, 180_000);
});

describe("loop run with a network setting: answers cut off", () => {
  test("an agent that reads each answer's text and hangs up before its usage: each charged its worst case (never less than served), the third stops its model requests, the item settles answers_cut_off", async () => {
    // Each answer costs 6,000 tokens (the fake bills it whole); the agent hangs up before message_delta says so.
    const fake = await startFakeAnthropic(() => ({
      text: "The whole answer.",
      hangBeforeDelta: true,
      usage: { input_tokens: 1000, output_tokens: 5000, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    }));
    stops.push(() => void fake.stop());
    await scenario(
      (p) => {
        const agent = join(p.aux, "agent.ts");
        writeFileSync(
          agent,
          `
const { writeFileSync } = require("node:fs");
const statuses = [];
const body = JSON.stringify({ model: "claude-sonnet-4-5", stream: true, max_tokens: 8000, tools: [{ name: "Bash", input_schema: { type: "object" } }], messages: [{ role: "user", content: "go" }] });
for (let i = 0; i < 9; i++) {
  const ac = new AbortController();
  const r = await fetch(process.env.ANTHROPIC_BASE_URL + "/v1/messages", { method: "POST", headers: { "x-api-key": process.env.ANTHROPIC_API_KEY }, body, signal: ac.signal });
  statuses.push(r.status);
  // Written after every answer: the step ends the session once it reads the gateway's stop, which
  // on a loaded machine can come before the ninth request.
  writeFileSync(${JSON.stringify(join(p.aux, "report.json"))}, JSON.stringify({ statuses }));
  if (r.status !== 200) { await r.text(); continue; }
  const reader = r.body.getReader();
  let got = "";
  while (!got.includes("content_block_stop")) got += new TextDecoder().decode((await reader.read()).value);
  ac.abort();
  await Bun.sleep(50);
}
`,
        );
        return demoDefinition([{ id: "x", prompt: "Call the model.", runner: "caller", budget: { tokens: 20_000 } }], {
          defaults: { network: "none" },
          runners: { caller: { command: [BUN, agent] } },
        });
      },
      {},
      async (p) => {
        Object.assign(p.env, { ANTHROPIC_API_KEY: REAL_KEY, ANTHROPIC_BASE_URL: fake.url });
        await p.runToDrain({ codes: [0, 1] });
        const it = p.projection().items.x!;
        expect({ status: it.status, reason: it.reason }).toEqual({
          status: "failed",
          reason: expect.stringMatching(/^answers_cut_off: the session hung up on 3 model answers/),
        });
        // The upstream served three; the recorded figure is at least what they cost.
        const served = fake.requests.filter((r) => r.method === "POST").length;
        expect(served).toBe(3);
        const t = fake.served.total;
        const recorded = it.attempts[0]!.usage!;
        expect(recorded.source).toBe("gateway");
        expect(recorded.tokens).toEqual({ input: 3000, output: 24_000, cacheRead: 0, cacheWrite: 0 });
        expect(recorded.tokens!.input + recorded.tokens!.output).toBeGreaterThanOrEqual(t.input_tokens + t.output_tokens);
        // Three answers, then refusals until the agent's ninth request or the step ending the session.
        const statuses: number[] = JSON.parse(readFileSync(join(p.aux, "report.json"), "utf8")).statuses;
        expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
        expect(statuses.slice(3).every((s) => s === 403)).toBe(true);
        const seen = statuses.length - 3;
        const shown = await p.loop(["logs", "x", "--network"]);
        const lines = shown.stdout.trim() ? shown.stdout.trim().split("\n") : [];
        // A refusal is recorded before its answer reaches the agent, which can be ended before it hears it.
        expect(lines.length).toBeGreaterThanOrEqual(seen);
        expect(lines.length).toBeLessThanOrEqual(seen + 1);
        for (const line of lines)
          expect(line).toContain(
            "refused a model request: the session hung up on 3 model answers before they said what they used (each charged its worst case) (answers_cut_off)",
          );
        const status = JSON.parse((await p.loop(["status", "--json"])).stdout);
        expect(status.items[0].network).toMatchObject({ refused: 0, budgetRefused: 0, modelRefused: lines.length });
        expect((await p.loop(["status", "--text"])).stdout).toContain(
          `x: its gateway refused ${lines.length} model request(s) it does not forward or after answers were cut off (loop logs x --network)`,
        );
      },
    );
  }, 180_000);
});

/** An HTTP server on 127.0.0.1 answering `hello <port>`. */
function hello(): { port: number } {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(`hello`) });
  stops.push(() => s.stop(true));
  return { port: s.port! };
}

describe("loop run with a network setting, in the sandbox", () => {
  test.skipIf(!Bun.which("bwrap"))(
    "the network is unshared: a loopback server is out of reach directly, reached the ordinary way when listed (curl and fetch as they come, through the proxy), the other refused and recorded, no name resolves, and the model API works through the bridge",
    async () => {
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
      const on = hello();
      const off = hello();
      const code = `
const report = {};
// Every client as it comes, with the environment the session was given (NO_PROXY as loop set it).
const attempt = async (what, f) => { try { report[what] = await f(); } catch (e) { report[what] = "error"; } };
// curl -i: the status line, then the body (the proxy's own 403, or the server's answer); nothing when it cannot connect.
const curl = (url) => { const out = require("node:child_process").spawnSync("curl", ["-s", "-i", "-m", "20", url], { encoding: "utf8" }).stdout; return out ? out.split(" ")[1] + " " + out.trim().split(String.fromCharCode(10)).pop().trim() : "error"; };
await attempt("direct", () => new Promise((ok, fail) => { const c = require("node:net").connect(${on.port}, "127.0.0.1"); c.on("connect", () => { c.destroy(); ok("connected"); }); c.on("error", fail); }));
await attempt("curl", () => curl("http://127.0.0.1:${on.port}/"));
await attempt("listed", async () => { const r = await fetch("http://127.0.0.1:${on.port}/"); return r.status + " " + (await r.text()); });
await attempt("unlisted", async () => (await fetch("http://127.0.0.1:${off.port}/")).status);
await attempt("curlUnlisted", () => curl("http://127.0.0.1:${off.port}/").slice(0, 3));
await attempt("dns", async () => (await require("node:dns").promises.lookup("registry.npmjs.org")).address);
await attempt("model", async () => { const r = await fetch(process.env.ANTHROPIC_BASE_URL + "/v1/messages", { method: "POST", headers: { "x-api-key": process.env.ANTHROPIC_API_KEY }, body: "{}" }); await r.text(); return r.status; });
report.noProxy = process.env.NO_PROXY;
console.log("REPORT " + JSON.stringify(report));
`;
      await scenario(
        () =>
          demoDefinition([{ id: "x", prompt: "Reach out.", runner: "caller" }], {
            defaults: { sandbox: "bwrap", network: [`127.0.0.1:${on.port}`] },
            runners: { caller: { command: [BUN, "-e", code] } },
          }),
        {},
        async (p) => {
          Object.assign(p.env, { ANTHROPIC_API_KEY: REAL_KEY, ANTHROPIC_BASE_URL: `http://127.0.0.1:${api.port}` });
          await p.runToDrain({ codes: [0, 1] });
          const session = p.eventsOf("session_started", "x")[0]!.payload;
          const log = readFileSync(session.log, "utf8");
          const report = JSON.parse(/REPORT (.*)/.exec(log)?.[1] ?? "null");
          expect({ report, log: report ? "" : log }).toEqual({
            report: {
              direct: "error",
              curl: "200 hello",
              listed: "200 hello",
              unlisted: 403,
              curlUnlisted: "403",
              dns: "error",
              model: 200,
              noProxy: "127.0.0.2",
            },
            log: "",
          });
          expect(keys).toEqual([REAL_KEY]);
          const dir = join(session.log, "..");
          const refused = readFileSync(join(dir, "gateway-refused.jsonl"), "utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l));
          expect(refused.map((r) => [r.kind, r.host, r.port])).toEqual([
            ["network", "127.0.0.1", off.port],
            ["network", "127.0.0.1", off.port],
          ]);
          expect(p.eventsOf("usage_recorded", "x").at(-1)!.payload.tokens).toEqual({ input: 1234, output: 321, cacheRead: 7890, cacheWrite: 56 });
        },
      );
    },
    180_000,
  );
});

describe("a verify's network in the sandbox", () => {
  test.skipIf(!Bun.which("bwrap"))(
    "a verifyNetwork list: the listed host through the proxy, nothing directly, the unlisted one refused and said in the verify's log; no model key or API",
    async () => {
      const on = hello();
      const off = hello();
      const code = `
const report = { env: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"].filter((k) => process.env[k]) };
// As it comes: NO_PROXY names the address of the gateway alone.
const attempt = async (what, f) => { try { report[what] = await f(); } catch (e) { report[what] = "error"; } };
await attempt("direct", () => new Promise((ok, fail) => { const c = require("node:net").connect(${on.port}, "127.0.0.1"); c.on("connect", () => { c.destroy(); ok("connected"); }); c.on("error", fail); }));
await attempt("listed", async () => { const r = await fetch("http://127.0.0.1:${on.port}/"); return r.status + " " + (await r.text()); });
await attempt("unlisted", async () => (await fetch("http://127.0.0.1:${off.port}/")).status);
await attempt("model", async () => (await fetch("http://127.0.0.2:41001/anthropic/v1/messages", { method: "POST", body: "{}" })).status);
console.log("REPORT " + JSON.stringify(report));
`;
      await scenario(
        () =>
          demoDefinition([{ id: "v", prompt: "Nothing.", verify: `${BUN} -e '${code}'` }], {
            defaults: { sandbox: "bwrap", network: "none", verifyNetwork: [`127.0.0.1:${on.port}`] },
          }),
        {},
        async (p) => {
          Object.assign(p.env, { ANTHROPIC_API_KEY: REAL_KEY });
          await p.runToDrain({ codes: [0, 1] });
          const log = readFileSync(join(p.sessionDir("v", 1), "verify.log"), "utf8");
          const report = JSON.parse(/REPORT (.*)/.exec(log)?.[1] ?? "null");
          expect({ report, log: report ? "" : log }).toEqual({ report: { env: [], direct: "error", listed: "200 hello", unlisted: 403, model: 403 }, log: "" });
          expect(log).toContain(`loop: the verify's network refused 127.0.0.1:${off.port} (not in verifyNetwork)`);
          expect(log).not.toContain(REAL_KEY);
          // The verify's refusals are its own: the agent's list of refusals holds none of them.
          expect(existsSync(join(p.sessionDir("v", 1), "gateway-refused.jsonl"))).toBe(false);
        },
      );
    },
    180_000,
  );

  test.skipIf(!Bun.which("bwrap"))(
    'verifyNetwork is "none" by default there: the verify reaches no loopback server; "open" gives it the network back',
    async () => {
      const srv = hello();
      // bash's /dev/tcp, not bun: a checkout under /tmp (hidden in the sandbox) has its bun there too.
      const probe = `bash -c 'if exec 3<>/dev/tcp/127.0.0.1/${srv.port}; then echo "NET reached"; else echo "NET refused"; fi' 2>/dev/null`;
      for (const [verifyNetwork, expected] of [
        [undefined, "NET refused"],
        ["open", "NET reached"],
      ] as const) {
        await scenario(
          () =>
            demoDefinition([{ id: "v", prompt: "Nothing.", verify: probe }], { defaults: { sandbox: "bwrap", ...(verifyNetwork ? { verifyNetwork } : {}) } }),
          {},
          async (p) => {
            await p.runToDrain({ codes: [0, 1] });
            const log = readFileSync(join(p.sessionDir("v", 1), "verify.log"), "utf8");
            expect({ verifyNetwork: verifyNetwork ?? "default", said: /NET \w+/.exec(log)?.[0] ?? log }).toEqual({
              verifyNetwork: verifyNetwork ?? "default",
              said: expected,
            });
          },
        );
      }
    },
    180_000,
  );
});

describe("setup's network in the sandbox (docs/loop-json.md#workspace)", () => {
  test.skipIf(!Bun.which("bwrap"))(
    'workspace.setupNetwork: a list reaches its hosts through the proxy and nothing else (the refusal said in setup.log); unset, the registries only; "open" the network as it is; "none" nothing',
    async () => {
      const on = hello();
      const off = hello();
      // bash's /dev/tcp and curl, not bun: a checkout under /tmp (hidden in the sandbox) has its bun there too.
      const get = (port: number) => `$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 http://127.0.0.1:${port}/; true)`;
      const setup = `echo "DIRECT $(bash -c 'exec 3<>/dev/tcp/127.0.0.1/${on.port} && echo reached' 2>/dev/null || echo refused)"; echo "ON ${get(on.port)}"; echo "OFF ${get(off.port)}"`;
      const cases = [
        [[`127.0.0.1:${on.port}`], { direct: "refused", on: "200", off: "403" }, off.port],
        [undefined, { direct: "refused", on: "403", off: "403" }, on.port],
        ["open", { direct: "reached", on: "200", off: "200" }, null],
        ["none", { direct: "refused", on: "000", off: "000" }, null],
      ] as const;
      for (const [setupNetwork, expected, refused] of cases) {
        await scenario(
          () =>
            demoDefinition([{ id: "s", prompt: "Nothing." }], {
              defaults: { sandbox: "bwrap" },
              workspace: { setup, ...(setupNetwork ? { setupNetwork } : {}) },
            }),
          {},
          async (p) => {
            await p.runToDrain({ codes: [0, 1] });
            const log = readFileSync(join(p.sessionDir("s", 1), "setup.log"), "utf8");
            const said = { direct: /DIRECT (\w+)/.exec(log)?.[1], on: /ON (\d+)/.exec(log)?.[1], off: /OFF (\d+)/.exec(log)?.[1] };
            expect({ setupNetwork: setupNetwork ?? "unset", said, log: said.off ? "" : log }).toEqual({
              setupNetwork: setupNetwork ?? "unset",
              said: expected,
              log: "",
            });
            if (refused !== null) expect(log).toContain(`loop: setup's network refused 127.0.0.1:${refused} (not in workspace.setupNetwork)`);
            expect(p.eventsOf("item_settled", "s").at(-1)?.payload.outcome).toBe("passed");
          },
        );
      }
    },
    300_000,
  );
});
