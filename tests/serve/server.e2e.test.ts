// `loop serve` over a real loop driven to its end by the demo agent (real git, real processes, real
// SQLite): the JSON APIs against `loop status` and the log, the pages, the security headers and access
// rules, the live updates, the caps, and the state root left byte-identical after serving under load.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { cpSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServe } from "../../lib/serve/serve.ts";
import { CSP, startServer } from "../../lib/serve/server.ts";
import { LoopSource } from "../../lib/serve/source.ts";
import { tokenCookie } from "../../lib/serve/access.ts";
import { Project } from "../helpers/project.ts";
import { snapshotTree } from "../helpers/fs.ts";
import { testEnv } from "../helpers/env.ts";
import { REPO } from "../helpers/cli.ts";
import { EXPECTED, HOSTILE, servedDefinition, sseReader } from "./fixture.ts";

let p: Project;
let served: ReturnType<typeof startServe>;
let base: string;

beforeAll(async () => {
  p = new Project(servedDefinition());
  await p.runToDrain();
  served = startServe({ loops: [{ root: p.root, stateRoot: p.stateRoot }], listen: "127.0.0.1:0", token: undefined, env: testEnv(), pollMs: 100 });
  base = served.url;
}, 120_000);

afterAll(async () => {
  await served?.stop();
  p?.dispose();
});

const get = (path: string, init?: RequestInit) => fetch(new URL(path, base), init);
const json = async (path: string) => (await get(path)).json() as Promise<any>;

describe("the JSON APIs", () => {
  test("GET /api/loops/<name>/status is exactly the document `loop status --json` prints", async () => {
    const cli = await p.loop(["status", "--json"]);
    expect(cli.code).toBe(0);
    const res = await get("/api/loops/t/status");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await res.text()).toBe(cli.stdout);
  });

  test("GET /api/loops lists the loop, where its page and APIs are, and its state", async () => {
    const doc = await json("/api/loops");
    expect(doc).toEqual({
      schema: "loop/serve-loops@1",
      loops: [
        {
          name: "t",
          root: p.root,
          stateRoot: p.stateRoot,
          page: "/loops/t/",
          status: "/api/loops/t/status",
          events: "/api/loops/t/events",
          state: "drained",
          healthy: true,
          logSeq: p.head(),
          counts: { passed: 3, failed: 1, blocked: 1 },
          error: null,
        },
      ],
    });
  });

  test("GET /api/loops/<name>/events pages through the whole log, every column, payloads as JSON", async () => {
    const head = p.head();
    const seen: any[] = [];
    let after = 0;
    for (let pages = 0; pages < 100; pages++) {
      const doc = await json(`/api/loops/t/events?after=${after}&limit=7`);
      expect(doc).toMatchObject({ schema: "loop/events@1", loop: "t", after, head });
      expect(doc.events.length).toBeLessThanOrEqual(7);
      seen.push(...doc.events);
      if (doc.next === null) break;
      expect(doc.next).toBe(doc.events.at(-1).seq);
      after = doc.next;
    }
    const db = new Database(join(p.stateRoot, "loop.db"), { readonly: true });
    const rows = db.query("SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events ORDER BY seq").all() as any[];
    db.close();
    expect(seen).toEqual(rows.map((r) => ({ ...r, payload: JSON.parse(r.payload) })));
    expect(seen.length).toBe(head);
    expect((await json(`/api/loops/t/events?after=${head}`)).events).toEqual([]);
  });

  const bad: [string, number, string][] = [
    ["/api/loops/t/events?after=-1", 400, "bad_request"],
    ["/api/loops/t/events?after=x", 400, "bad_request"],
    ["/api/loops/t/events?limit=0", 400, "bad_request"],
    ["/api/loops/t/events?limit=1001", 400, "bad_request"],
    ["/api/loops/nope/status", 404, "not_found"],
    ["/api/nothing", 404, "not_found"],
  ];
  for (const [path, status, code] of bad)
    test(`GET ${path} → ${status} ${code}`, async () => {
      const res = await get(path);
      expect(res.status).toBe(status);
      const doc = (await res.json()) as any;
      expect(doc.error.code).toBe(code);
      expect(doc.error.message.length).toBeGreaterThan(10);
    });

  test("GET /metrics: items by status, attempts, attention for the Failed drain", async () => {
    const res = await get("/metrics");
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await res.text();
    for (const line of [
      'loop_items{loop="t",status="passed"} 3',
      'loop_items{loop="t",status="blocked"} 1',
      'loop_attempts_total{loop="t"} 5',
      'loop_attention{loop="t",kind="failed"} 1',
      'loop_state{loop="t",state="drained"} 1',
    ])
      expect(text).toContain(line + "\n");
  });

  test("the history folded from the log counts the attempts status reports, item by item", async () => {
    const status = await json("/api/loops/t/status");
    const h = served.sources[0]!.history;
    expect(status.items.map((it: any) => [it.id, h.items.get(it.id)!.attempts.filter((a) => a.epoch === it.epoch).length])).toEqual(
      status.items.map((it: any) => [it.id, it.attempts]),
    );
    expect(h.seq).toBe(status.loop.logSeq);
  });
});

describe("the pages", () => {
  test("the loop's page: every item a timeline row with its status, the Failed drain's banner and its fix", async () => {
    const res = await get("/loops/t/");
    expect(res.status).toBe(200);
    const page = await res.text();
    for (const [id, status] of Object.entries(EXPECTED)) expect(page).toContain(`<g class="row" data-item="${id}" data-status="${status}">`);
    expect(page).toContain(`<div class="attention" role="alert" data-kind="failed">`);
    expect(page).toContain("<code>loop ctl retry --all-failed</code>");
    // Two bars for the item that passed on its retry, the first marked failed.
    const retryRow = page.slice(page.indexOf(`data-item="retry"`), page.indexOf(`data-item="bad"`));
    expect([...retryRow.matchAll(/<rect class="end end-(\w+)"/g)].map((m) => m[1])).toEqual(["failed", "passed"]);
    expect(res.headers.get("x-loop-seq")).toBe(String(p.head()));
    // The items table says attempts in words (never `2/2`) and each item's spend, as status has them.
    const status = await json("/api/loops/t/status");
    for (const it of status.items) {
      const row = page.slice(page.indexOf(`<tr data-item="${it.id}">`)).split("</tr>")[0]!;
      expect([it.id, row.match(/<td class="attempts">([^<]*)</)![1]]).toEqual([it.id, `${it.attempts} made, ${it.failures} of ${it.maxAttempts} failed`]);
      expect(row).toContain(`<td class="spend">${it.usage ? "" : "—"}`);
    }
    expect(status.items.find((it: any) => it.id === "retry").attempts).toBe(2);
  });

  test("the index names a paused loop's reason, escaped", async () => {
    const paused = new Project(servedDefinition());
    await paused.run();
    expect((await paused.ctl(["pause", "--reason", "deploy <freeze> until Monday"])).code).toBe(0);
    const s = startServe({ loops: [{ root: paused.root, stateRoot: paused.stateRoot }], listen: "127.0.0.1:0", token: undefined, env: testEnv() });
    try {
      const page = await (await fetch(s.url)).text();
      expect(page).toContain(`<span class="state state-paused">paused</span> <span class="reason">deploy &lt;freeze&gt; until Monday</span>`);
    } finally {
      await s.stop();
      paused.dispose();
    }
  });

  test("the fragment is the page's main, for the script to swap in; drawn once per state of the log", async () => {
    const [page, fragment] = await Promise.all([get("/loops/t/").then((r) => r.text()), get("/loops/t/?fragment=1").then((r) => r.text())]);
    expect(fragment.startsWith("<header")).toBe(true);
    expect(page).toContain(`<main id="live">${fragment}</main>`);
    // The loop is drained: nothing grows with the clock, so the same log is the same drawing.
    expect((await get("/loops/t/?fragment=1")).headers.get("x-loop-render")).toBe("cached");
  });

  test("an item's page: every attempt with its verdict, verify and output; the handoff", async () => {
    const page = await (await get("/loops/t/items/retry")).text();
    expect([...page.matchAll(/<section class="attempt" id="attempt-(e\d+-\d+)"/g)].map((m) => m[1])).toEqual(["e0-2", "e0-1"]);
    expect(page).toContain("verify failed: exit 1");
    expect(page).toContain("<summary>handoff</summary>");
    expect(page).toContain("<code>test -f retry.txt</code>");
  });

  test("text from the prompt, the agent's output and the verify output is escaped everywhere", async () => {
    const page = await (await get("/loops/t/items/xss")).text();
    const escaped = "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;";
    expect(page.split(escaped).length - 1).toBeGreaterThanOrEqual(3); // prompt, output tail, handoff (and the verify log)
    expect(page).not.toContain(HOSTILE);
    expect(page).not.toContain("<img");
    expect([...page.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual([`<script src="/assets/serve.js" defer>`]);
  });

  test("an unknown item or loop: 404 pages", async () => {
    for (const path of ["/loops/t/items/nope", "/loops/nope/", "/loops/t/items/%E0%A4%A"]) {
      const res = await get(path, { headers: { accept: "text/html" } });
      expect([path, res.status]).toEqual([path, 404]);
    }
  });
});

describe("safe by construction", () => {
  const paths = [
    "/",
    "/loops/t/",
    "/loops/t/items/ok",
    "/api/loops",
    "/api/loops/t/status",
    "/api/loops/t/events",
    "/metrics",
    "/assets/serve.js",
    "/assets/serve.css",
    "/nothing",
  ];

  test("every response carries the strict Content-Security-Policy and the other headers", async () => {
    for (const path of paths) {
      const res = await get(path);
      expect([path, res.headers.get("content-security-policy")]).toEqual([path, CSP]);
      expect([path, res.headers.get("x-content-type-options"), res.headers.get("x-frame-options"), res.headers.get("referrer-policy")]).toEqual([
        path,
        "nosniff",
        "DENY",
        "no-referrer",
      ]);
    }
    expect(CSP).toContain("script-src 'self'");
    expect(CSP).not.toContain("unsafe");
  });

  test("nothing changes state: every method but GET and HEAD is refused with 405", async () => {
    for (const method of ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
      for (const path of ["/api/loops/t/status", "/loops/t/", "/metrics"]) {
        const res = await get(path, { method, body: method === "OPTIONS" ? undefined : "{}" });
        expect([method, path, res.status, res.headers.get("allow")]).toEqual([method, path, 405, "GET, HEAD"]);
      }
  });

  test("a GET or HEAD that carries a body is refused, not read (docs/cli/loop-serve.md#security-model)", async () => {
    const { connect } = await import("node:net");
    const { port } = new URL(served.url);
    for (const head of ["Content-Length: 2", "Transfer-Encoding: chunked"]) {
      const answer = await new Promise<string>((resolve, reject) => {
        const sock = connect(Number(port), "127.0.0.1");
        let got = "";
        sock.on("data", (d) => (got += d.toString()));
        sock.on("end", () => resolve(got));
        sock.on("error", reject);
        sock.write(
          `GET /api/loops/t/status HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${head}\r\n\r\n${head.startsWith("Content") ? "{}" : "2\r\n{}\r\n0\r\n\r\n"}`,
        );
      });
      expect([head, answer.split("\r\n")[0]]).toEqual([head, "HTTP/1.1 400 Bad Request"]);
      expect(answer).toContain("carries no body");
    }
    expect((await get("/api/loops/t/status")).status).toBe(200);
  });

  test("HEAD: the headers without the body; a stream asked with HEAD takes no client's place", async () => {
    const res = await get("/loops/t/", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    const before = served.hub.size;
    const stream = await get("/loops/t/stream", { method: "HEAD" });
    expect([stream.status, stream.headers.get("content-type")]).toEqual([200, "text/event-stream; charset=utf-8"]);
    expect(served.hub.size).toBe(before);
  });

  test("a request addressed to a name that is not loopback (DNS rebinding) is refused", async () => {
    const res = await get("/api/loops/t/status", { headers: { host: "evil.example" } });
    expect(res.status).toBe(421);
    expect(((await res.json()) as any).error.code).toBe("misdirected_request");
  });

  test("with a token, every request must carry it: header, cookie, or once in the address", async () => {
    const token = "tok-0123456789abcdef";
    const s = startServe({ loops: [{ root: p.root, stateRoot: p.stateRoot }], listen: "127.0.0.1:0", token, env: testEnv() });
    try {
      const at = (path: string, init?: RequestInit) => fetch(new URL(path, s.url), { redirect: "manual", ...init });
      const none = await at("/api/loops/t/status");
      expect([none.status, none.headers.get("www-authenticate")]).toEqual([401, 'Bearer realm="loop serve"']);
      expect((await at("/metrics", { headers: { authorization: "Bearer wrong-wrong-wrong" } })).status).toBe(401);
      expect((await at("/api/loops/t/status", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      const viaQuery = await at(`/loops/t/?fragment=1&token=${token}`);
      expect(viaQuery.status).toBe(303);
      expect(viaQuery.headers.get("location")).toBe("/loops/t/?fragment=1");
      // The cookie is this port's, and holds a value derived from the token, never the token.
      const cookie = tokenCookie(token, s.port);
      expect(viaQuery.headers.get("set-cookie")).toBe(`loop_serve_token_${s.port}=${cookie.value}; HttpOnly; SameSite=Strict; Path=/`);
      expect(viaQuery.headers.get("set-cookie")).not.toContain(token);
      expect((await at("/loops/t/", { headers: { cookie: `loop_serve_token_${s.port}=${cookie.value}` } })).status).toBe(200);
      expect((await at("/loops/t/", { headers: { cookie: `loop_serve_token=${token}` } })).status).toBe(401);
      // The scheme's name is case-insensitive.
      for (const scheme of ["bearer", "BEARER", "bEaReR"])
        expect([scheme, (await at("/api/loops/t/status", { headers: { authorization: `${scheme} ${token}` } })).status]).toEqual([scheme, 200]);
      expect((await at("/api/loops/t/status", { headers: { authorization: `Basic ${token}` } })).status).toBe(401);
      // The redirect that drops the token stays on this server: `//evil.com/` would be another host to a browser.
      for (const [path, location] of [
        ["//evil.com/", "/evil.com/"],
        ["///evil.com/x?y=1", "/evil.com/x?y=1"],
        ["/%2F%2Fevil.com/", "/%2F%2Fevil.com/"],
      ] as const) {
        const res = await fetch(`${s.url.replace(/\/$/, "")}${path}${path.includes("?") ? "&" : "?"}token=${token}`, { redirect: "manual" });
        expect([path, res.status, res.headers.get("location")]).toEqual([path, 303, location]);
      }
    } finally {
      await s.stop();
    }
  });

  test("at most `maxClients` live pages; one more is refused until one leaves", async () => {
    const src = new LoopSource({ root: p.root, stateRoot: p.stateRoot, env: testEnv() });
    src.open();
    const s = startServer({ sources: [src], listen: { host: "127.0.0.1", port: 0 }, token: null, maxClients: 2 });
    try {
      const open = () => fetch(new URL("/loops/t/stream", s.url));
      const [a, b] = await Promise.all([open(), open()]);
      expect([a.status, b.status]).toEqual([200, 200]);
      const third = await open();
      expect(third.status).toBe(503);
      expect(((await third.json()) as any).error.code).toBe("too_many_clients");
      const ra = sseReader(a);
      expect(await ra.next("head")).toEqual({ seq: p.head() });
      await ra.close();
      await b.body!.cancel();
      for (let i = 0; i < 100 && s.hub.size > 0; i++) await Bun.sleep(20);
      expect(s.hub.size).toBe(0);
      const again = await open();
      expect(again.status).toBe(200);
      await again.body!.cancel();
    } finally {
      await s.stop();
    }
  });

  test("loop serve never writes: the state root is byte-identical after serving under load, with and without a -wal", async () => {
    const urls = [
      "/",
      "/loops/t/",
      "/loops/t/?fragment=1",
      "/loops/t/items/retry",
      "/loops/t/items/xss",
      "/api/loops",
      "/api/loops/t/status",
      "/api/loops/t/events?after=0&limit=1000",
      "/metrics",
    ];
    async function load(rounds: number): Promise<number> {
      const streams = await Promise.all(Array.from({ length: 5 }, () => get("/loops/t/stream?item=ok")));
      let n = 0;
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          for (let i = 0; i < rounds; i++) {
            const res = await get(urls[(i + w) % urls.length]!);
            expect(res.status).toBe(200);
            await res.arrayBuffer();
            n++;
          }
        }),
      );
      served.poll();
      for (const s of streams) await s.body!.cancel();
      return n;
    }
    const before = snapshotTree(p.stateRoot);
    expect(await load(40)).toBe(320);
    expect(snapshotTree(p.stateRoot)).toEqual(before);

    // A writer killed before it closed leaves a -wal: the server reads a private copy, never the file.
    const script = join(p.aux, "killed-writer.ts");
    writeFileSync(
      script,
      `import { Store } from ${JSON.stringify(join(REPO, "lib", "log", "store.ts"))};
const s = Store.open(process.argv[2]);
s.append([{ type: "control_recorded", item: "ok", actor: "killed", payload: { verb: "reply", text: "last words" } }]);
process.kill(process.pid, "SIGKILL");
`,
    );
    const child = Bun.spawnSync([process.execPath, script, p.stateRoot], { env: testEnv(), stderr: "pipe" });
    expect(child.signalCode).toBe("SIGKILL");
    const withWal = snapshotTree(p.stateRoot);
    expect(Object.keys(withWal).some((k) => k.endsWith("loop.db-wal"))).toBe(true);
    expect(await load(20)).toBe(160);
    expect(snapshotTree(p.stateRoot)).toEqual(withWal);
    // And it saw the event the killed writer committed.
    expect(served.sources[0]!.history.items.get("ok")!.controls.at(-1)).toMatchObject({ actor: "killed", verb: "reply" });
  }, 60_000);
});

describe("a store that cannot be read while serving", () => {
  test("its pages and APIs say so (503 with the store's error), stderr says it once, and it comes back", async () => {
    const copy = join(p.aux, "state-copy");
    cpSync(p.stateRoot, copy, { recursive: true });
    const said: string[] = [];
    const s = startServe({
      loops: [{ root: p.root, stateRoot: copy }],
      listen: "127.0.0.1:0",
      token: undefined,
      env: testEnv(),
      log: (m) => said.push(m),
      pollMs: 60_000,
    });
    try {
      renameSync(join(copy, "loop.db"), join(copy, "loop.db.away"));
      s.poll();
      s.poll();
      const api = await fetch(new URL("/api/loops/t/status", s.url));
      expect(api.status).toBe(503);
      expect(((await api.json()) as any).error.code).toBe("store_missing");
      const page = await fetch(new URL("/loops/t/", s.url), { headers: { accept: "text/html" } });
      expect(page.status).toBe(503);
      expect(await page.text()).toContain("store_missing");
      expect(await (await fetch(new URL("/metrics", s.url))).text()).toContain('loop_up{loop="t"} 0');
      renameSync(join(copy, "loop.db.away"), join(copy, "loop.db"));
      s.poll();
      expect((await fetch(new URL("/api/loops/t/status", s.url))).status).toBe(200);
      expect(said).toEqual([
        expect.stringMatching(/^loop t: cannot read its store \(store_missing: .* is missing, but .*\); its pages say so until it can$/),
        "loop t: its store can be read again",
      ]);
    } finally {
      await s.stop();
    }
  });
});

describe("live updates", () => {
  test("a page's stream is told the new head when an event is appended (here: `loop ctl pause`)", async () => {
    const res = await get("/loops/t/stream");
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const r = sseReader(res);
    try {
      const first = await r.next("head");
      expect(first).toEqual({ seq: served.sources[0]!.history.seq });
      const ctl = await p.ctl(["pause", "--reason", `paused <b>by</b> the test`]);
      expect(ctl.code).toBe(0);
      const moved = await r.next("head");
      expect(moved).toEqual({ seq: p.head() });
      const res = await get("/loops/t/?fragment=1");
      expect(res.headers.get("x-loop-render")).toBe("rendered");
      const page = await res.text();
      expect(page).toContain(`<p class="reason">paused &lt;b&gt;by&lt;/b&gt; the test</p>`);
    } finally {
      await r.close();
    }
  });
});
