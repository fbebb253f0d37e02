// Notification channels through `loop run` (docs/operations.md#notification-channels): a generic
// webhook (loop's JSON, signed), a Slack incoming webhook (Block Kit) and an ntfy topic, each a local
// HTTP server that keeps what it was sent; each channel's event filter; one message per condition
// however often a paused loop ticks; a dead or failing endpoint recorded, waited out and never
// failing a step. No assertion measures time.
import { afterAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { demoDefinition, Project } from "../helpers/project.ts";

const T = 180_000;

interface Received {
  path: string;
  headers: Record<string, string>;
  body: any;
  raw: string;
}

/** A local HTTP server that keeps every POST; `answer` decides the reply (or never replies). */
function receiver(answer: "ok" | "fail" | "never" = "ok") {
  const got: Received[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const raw = await req.text();
      got.push({ path: new URL(req.url).pathname, headers: Object.fromEntries(req.headers), body: raw ? JSON.parse(raw) : null, raw });
      if (answer === "never") return new Promise<Response>(() => {});
      return new Response(answer === "ok" ? "ok" : "no", { status: answer === "ok" ? 200 : 500 });
    },
  });
  return { got, url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

/**
 * Block Kit as Slack publishes it for the blocks loop sends: a header (plain_text, at most 150
 * characters), sections (text objects of at most 3000), a context (at most 10 elements), actions
 * (buttons: plain_text of at most 75, a url of at most 3000); at most 50 blocks, and a `text` fallback.
 */
function blockKitProblems(body: any): string[] {
  const out: string[] = [];
  const textObject = (t: any, max: number, where: string) => {
    if (!t || (t.type !== "plain_text" && t.type !== "mrkdwn")) out.push(`${where}: not a text object`);
    else if (typeof t.text !== "string" || t.text.length < 1 || t.text.length > max) out.push(`${where}: text of ${t.text?.length} characters (1 to ${max})`);
    if (t && t.type === "mrkdwn" && "emoji" in t) out.push(`${where}: emoji is for plain_text only`);
  };
  if (typeof body.text !== "string" || !body.text) out.push("no text fallback");
  if (!Array.isArray(body.blocks) || body.blocks.length < 1 || body.blocks.length > 50) out.push("blocks: 1 to 50");
  for (const [i, b] of (body.blocks ?? []).entries()) {
    const allowed: Record<string, string[]> = {
      header: ["type", "text", "block_id"],
      section: ["type", "text", "block_id", "fields", "accessory"],
      context: ["type", "elements", "block_id"],
      actions: ["type", "elements", "block_id"],
    };
    if (!allowed[b.type]) out.push(`blocks[${i}]: type ${b.type}`);
    else for (const k of Object.keys(b)) if (!allowed[b.type]!.includes(k)) out.push(`blocks[${i}]: key ${k}`);
    if (b.type === "header") {
      if (b.text?.type !== "plain_text") out.push(`blocks[${i}]: a header's text must be plain_text`);
      textObject(b.text, 150, `blocks[${i}].text`);
    }
    if (b.type === "section") textObject(b.text, 3000, `blocks[${i}].text`);
    if (b.type === "context") {
      if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 10) out.push(`blocks[${i}]: 1 to 10 elements`);
      for (const [j, e] of (b.elements ?? []).entries()) textObject(e, 3000, `blocks[${i}].elements[${j}]`);
    }
    if (b.type === "actions")
      for (const [j, e] of (b.elements ?? []).entries()) {
        if (e.type !== "button") out.push(`blocks[${i}].elements[${j}]: type ${e.type}`);
        if (e.text?.type !== "plain_text") out.push(`blocks[${i}].elements[${j}]: a button's text must be plain_text`);
        textObject(e.text, 75, `blocks[${i}].elements[${j}].text`);
        if (typeof e.url !== "string" || e.url.length > 3000) out.push(`blocks[${i}].elements[${j}]: url`);
      }
  }
  return out;
}

const servers: { stop: () => void }[] = [];
afterAll(() => {
  for (const s of servers) s.stop();
});
function serve(answer?: "ok" | "fail" | "never") {
  const r = receiver(answer);
  servers.push(r);
  return r;
}

describe("notification channels", () => {
  test(
    "each channel is told what it asked for: the webhook all (signed), Slack the failure and the Failed drain, ntfy the pass; then nothing twice",
    async () => {
      const hook = serve();
      const slack = serve();
      const ntfy = serve();
      const p = new Project(
        demoDefinition(
          [
            { id: "ok", prompt: "ok\n@demo write ok.txt a" },
            { id: "bad", prompt: "bad <script>", verify: "false", maxAttempts: 1 },
          ],
          {
            defaults: { landing: "merge" },
            notify: {
              channels: [
                { kind: "webhook", url: `${hook.url}/loop`, secretFrom: "HOOK_KEY" },
                { kind: "slack", urlFrom: "SLACK_URL", events: ["failed", "attention"] },
                { kind: "ntfy", url: `${ntfy.url}/loop-topic`, events: ["passed"] },
              ],
              pageUrl: "https://loop.example.com/loops/t/",
            },
          },
        ),
        { env: { HOOK_KEY: "k-0123456789", SLACK_URL: `${slack.url}/services/T0/B0/x` } },
      );
      try {
        await p.runToDrain({ codes: [0, 1] });
        const kinds = (r: { got: Received[] }) => r.got.map((g) => `${g.body.kind ?? g.body.title}:${g.body.item ?? ""}`);

        // The webhook: every event, loop's document, signed over the exact body.
        expect(hook.got.map((g) => [g.body.event, g.body.kind, g.body.item])).toEqual([
          ["landed", "landed", "ok"],
          ["passed", "passed", "ok"],
          ["failed", "failed", "bad"],
          ["attention", "failed", null],
        ]);
        for (const g of hook.got) {
          expect(g.path).toBe("/loop");
          expect(g.headers["x-loop-signature-256"]).toBe(`sha256=${createHmac("sha256", "k-0123456789").update(g.raw).digest("hex")}`);
          expect(g.headers["x-loop-event"]).toBe(g.body.event);
          expect(g.headers["x-loop-delivery"]).toBe(g.body.id);
          expect(g.body).toMatchObject({ schema: "loop/notification@1", loop: { name: "t" }, page: "https://loop.example.com/loops/t/" });
        }
        const drained = hook.got[3]!.body;
        expect(drained.subject).toBe("loop t: drained Failed");
        expect(drained.fix).toEqual(["loop ctl retry --all-failed"]);
        expect(hook.got[2]!.body.code).toBe("verify_failed");

        // Slack: the failure and the drain only, as Block Kit, outside words as plain text.
        expect(slack.got.map((g) => g.path)).toEqual(["/services/T0/B0/x", "/services/T0/B0/x"]);
        expect(slack.got.map((g) => g.body.text)).toEqual(["loop t: an item failed (bad)", "loop t: drained Failed"]);
        for (const g of slack.got) {
          expect(blockKitProblems(g.body)).toEqual([]);
          expect(g.headers["x-loop-signature-256"]).toBeUndefined();
          expect(g.raw).not.toContain('"mrkdwn"');
          expect(g.body.blocks.at(-1)).toEqual({
            type: "actions",
            elements: [{ type: "button", text: { type: "plain_text", text: "Open the loop's page", emoji: false }, url: "https://loop.example.com/loops/t/" }],
          });
        }

        // ntfy: the pass, published as JSON to the server's root with the topic in the body.
        expect(ntfy.got.map((g) => [g.path, g.body.topic, g.body.title, g.body.click])).toEqual([
          ["/", "loop-topic", "loop t: an item passed (ok)", "https://loop.example.com/loops/t/"],
        ]);
        expect(kinds(ntfy)).toEqual(["loop t: an item passed (ok):"]);

        // Steps after the drain send nothing again.
        for (let i = 0; i < 3; i++) await p.run([0, 1]);
        expect([hook.got.length, slack.got.length, ntfy.got.length]).toEqual([4, 2, 1]);
        const replay = await p.loop(["replay", "--root", p.root]);
        expect(replay.code).toBe(0);
      } finally {
        p.dispose();
      }
    },
    T,
  );

  test(
    "a loop paused by a fault and ticking 30 times is told once; a channel added later is not sent the loop's history",
    async () => {
      const hook = serve();
      const late = serve();
      const def = (channels: unknown[]) =>
        demoDefinition([{ id: "a", prompt: "a\n@demo write a.txt a" }], { workspace: { base: "nope" }, notify: { channels } });
      const p = new Project(def([{ kind: "webhook", url: hook.url }]));
      try {
        for (let i = 0; i < 30; i++) await p.run([1]);
        expect(hook.got.map((g) => [g.body.event, g.body.kind])).toEqual([["attention", "environment"]]);
        const notified = p.events().filter((e) => e.type === "notified");
        // The channel's start, and the one message: a tick that sends nothing records nothing.
        expect(notified.map((e) => (e.payload as any).kind)).toEqual(["environment", "start"]);
        // Fixed, resumed and drained; then a second channel joins: it hears only what is open now (nothing).
        p.writeDefinition({ ...def([{ kind: "webhook", url: hook.url }]), workspace: {} });
        expect((await p.ctl(["resume", "--yes"])).code).toBe(0);
        await p.runToDrain();
        expect(hook.got.map((g) => g.body.event)).toEqual(["attention", "passed"]);
        p.writeDefinition({
          ...def([
            { kind: "webhook", url: hook.url },
            { kind: "webhook", url: late.url },
          ]),
          workspace: {},
        });
        for (let i = 0; i < 3; i++) await p.run();
        expect(late.got).toEqual([]);
        expect(hook.got.length).toBe(2);
      } finally {
        p.dispose();
      }
    },
    T,
  );

  test(
    "a dead endpoint and a failing one: the step ends at the channel's deadline, says why, and waits before trying again; the others are told",
    async () => {
      const dead = serve("never");
      const failing = serve("fail");
      const good = serve();
      const p = new Project(
        demoDefinition([{ id: "a", prompt: "a", verify: "false", maxAttempts: 1 }], {
          notify: {
            channels: [
              { kind: "webhook", url: dead.url, timeout: "1s" },
              { kind: "ntfy", url: `${failing.url}/t` },
              { kind: "webhook", urlFrom: "NOT_SET_ANYWHERE" },
              { kind: "webhook", url: good.url },
            ],
          },
        }),
      );
      try {
        const last = await p.runToDrain({ codes: [0, 1] });
        const failed = p.runs.flatMap((r) => r.notifications).filter((n) => !n.ok);
        expect(failed.map((n) => [n.channel, n.reason])).toEqual([
          ["webhook-1", "no answer within 1s"],
          ["ntfy-2", "answered HTTP 500"],
          ["webhook-3", "NOT_SET_ANYWHERE is not set in loop run's environment"],
        ]);
        expect(last.errors).toEqual([]);
        expect(good.got.map((g) => g.body.event)).toEqual(["failed", "attention"]);
        // Each failing channel was tried once: the next steps wait out its backoff.
        const tries = [dead.got.length, failing.got.length];
        for (let i = 0; i < 3; i++) await p.run([1]);
        expect([dead.got.length, failing.got.length]).toEqual(tries);
        const channels = p.projection().loop.channels!;
        expect(channels["webhook-1"]).toMatchObject({ failures: 1, lastError: "no answer within 1s" });
        expect(Date.parse(channels["ntfy-2"]!.retryAt!)).toBeGreaterThan(Date.now());
        expect(channels["webhook-4"]).toMatchObject({ failures: 0, retryAt: null });
        // Status says which channel fails and why, until it answers again.
        const st = JSON.parse((await p.loop(["status", "--json", "--root", p.root])).stdout);
        expect(st.loop.channels.map((c: any) => [c.id, c.failures, c.lastError])).toEqual([
          ["ntfy-2", 1, "answered HTTP 500"],
          ["webhook-1", 1, "no answer within 1s"],
          ["webhook-3", 1, "NOT_SET_ANYWHERE is not set in loop run's environment"],
          ["webhook-4", 0, null],
        ]);
        const text = (await p.loop(["status", "--text", "--root", p.root])).stdout;
        expect(text).toContain("notify channel webhook-1: 1 failed send in a row (no answer within 1s); tried again after ");
        expect(text).not.toContain("notify channel webhook-4");
      } finally {
        p.dispose();
      }
    },
    T,
  );
});
