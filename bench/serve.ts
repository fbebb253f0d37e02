#!/usr/bin/env bun
// bench/serve.ts — `loop serve`'s figures (bench/README.md, "loop serve"):
//
//   bun bench/serve.ts [--items 500] [--events 50000] [--runs 40] [--clients 50] [--soak-seconds 120] [--bin PATH]
//
// On a generated loop (bench/generate.ts) of --items items, served by `loop serve` as its own process
// (the compiled dist/loop, built when missing, or --bin): the server time of the loop's page (the
// Server-Timing header), of an item's page and of /api/…/status, against a `loop status --json`
// process; the time from an event's commit to a connected page hearing of it (events appended by a
// writer in this process, as `loop run` would, and materialized); and the server's memory while
// --clients pages stay connected for --soak-seconds with an event every 2 s and a page load every
// second (the slope extrapolated to 10 minutes when shorter).
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { generate } from "./generate.ts";
import { Store } from "../lib/log/store.ts";
import { materialize } from "../lib/log/materialize.ts";

const ROOT = resolve(import.meta.dir, "..");
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    items: { type: "string", default: "500" },
    events: { type: "string", default: "50000" },
    runs: { type: "string", default: "40" },
    clients: { type: "string", default: "50" },
    "soak-seconds": { type: "string", default: "120" },
    bin: { type: "string" },
  },
  strict: true,
});
const ITEMS = Number(values.items);
const EVENTS = Number(values.events);
const RUNS = Number(values.runs);
const CLIENTS = Number(values.clients);
const SOAK_S = Number(values["soak-seconds"]);
const TARGETS = { pageMs: 50, eventMs: 1000 };

const say = (s: string) => process.stderr.write(`${s}\n`);

function bin(): string[] {
  if (values.bin) return [resolve(values.bin)];
  const dist = join(ROOT, "dist", "loop");
  if (!existsSync(dist)) {
    say("building dist/loop");
    const b = Bun.spawnSync([process.execPath, join(ROOT, "scripts", "build.ts")], { stdout: "inherit", stderr: "inherit" });
    if (b.exitCode !== 0) throw new Error("the build failed");
  }
  return [dist];
}

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (f: number) => s[Math.min(s.length - 1, Math.floor(f * s.length))]!;
  return { median: q(0.5), p95: q(0.95), min: s[0]!, max: s.at(-1)! };
}
const f1 = (n: number) => n.toFixed(1);

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m![1]) / 1024;
}

const dir = mkdtempSync(join(tmpdir(), "loop-bench-serve-"));
const loop = bin();
let server: Bun.Subprocess<"ignore", "pipe", "inherit"> | null = null;
try {
  say(`generating ${EVENTS} events over ${ITEMS} items`);
  const g = generate({ events: EVENTS, items: ITEMS, out: join(dir, "root") });
  server = Bun.spawn([...loop, "serve", "--root", g.root, "--listen", "127.0.0.1:0", "--json"], { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  const reader = server.stdout.getReader();
  let first = "";
  while (!first.includes("\n")) first += new TextDecoder().decode((await reader.read()).value);
  reader.releaseLock();
  const doc = JSON.parse(first.split("\n")[0]!);
  const base: string = doc.url;
  const name: string = doc.loops[0].name;
  const pid = server.pid;

  // A writer in this process, as a `loop run` step writes: open, append (an event on one item),
  // materialize, close (the last connection's close leaves no -wal, so readers read in place).
  let target = "";
  const append = () => {
    const store = Store.open(g.stateRoot);
    try {
      const { events } = store.append([{ type: "control_recorded", item: target, actor: "bench", payload: { verb: "reply", text: "bench" } }]);
      materialize(g.stateRoot, store);
      return events.at(-1)!.seq;
    } finally {
      store.close();
    }
  };

  /** `cold`: an event is appended before each request, so the page is drawn anew (not from the server's cache). */
  async function timed(path: string, runs: number, o: { cold?: boolean } = {}) {
    const server: number[] = [];
    const wall: number[] = [];
    let bytes = 0;
    for (let i = 0; i < runs + 3; i++) {
      if (o.cold) {
        append();
        // Past the server's next look (250 ms), so the drawing is of the new log.
        await Bun.sleep(300);
      }
      const t0 = performance.now();
      const res = await fetch(new URL(path, base));
      const body = await res.arrayBuffer();
      const t1 = performance.now();
      if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
      if (o.cold && res.headers.get("x-loop-render") === "cached") throw new Error(`${path}: a cold request was answered from the cache`);
      if (i < 3) continue; // warm-up
      server.push(Number(/dur=([\d.]+)/.exec(res.headers.get("server-timing") ?? "")?.[1]));
      wall.push(t1 - t0);
      bytes = body.byteLength;
    }
    return { server: stats(server), wall: stats(wall), bytes };
  }

  const status = (await (await fetch(new URL(`/api/loops/${name}/status`, base))).json()) as any;
  const someItem = status.items.find((it: any) => it.attempts > 1)?.id ?? status.items[0].id;
  target = someItem;
  const page = await timed(`/loops/${name}/`, RUNS, { cold: true });
  const cached = await timed(`/loops/${name}/`, RUNS);
  const fragment = await timed(`/loops/${name}/?fragment=1`, RUNS, { cold: true });
  const item = await timed(`/loops/${name}/items/${someItem}`, RUNS);
  const api = await timed(`/api/loops/${name}/status`, RUNS);
  const cli: number[] = [];
  for (let i = 0; i < Math.min(RUNS, 20) + 2; i++) {
    const t0 = performance.now();
    const r = Bun.spawnSync([...loop, "status", "--json", "--root", g.root], { stdout: "pipe", stderr: "pipe" });
    const t1 = performance.now();
    if (r.exitCode !== 0 && r.exitCode !== 1) throw new Error(`loop status exited ${r.exitCode}`);
    if (i >= 2) cli.push(t1 - t0);
  }
  const cliStats = stats(cli);

  // An event's way to a connected page: commit → the server's next look → the `head` event.
  async function sseClient() {
    const res = await fetch(new URL(`/loops/${name}/stream`, base));
    if (res.status !== 200) throw new Error(`stream: ${res.status}`);
    const rd = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = "";
    const c = { seq: 0, heads: 0, waiters: [] as { seq: number; resolve: (t: number) => void }[], close: () => rd.cancel().catch(() => {}) };
    (async () => {
      for (;;) {
        const { value, done } = await rd.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        buf += dec.decode(value, { stream: true });
        for (let i; (i = buf.indexOf("\n\n")) >= 0; ) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const m = /^event: head\ndata: \{"seq":(\d+)\}/m.exec(block);
          if (!m) continue;
          c.seq = Number(m[1]);
          c.heads++;
          const now = performance.now();
          c.waiters = c.waiters.filter((w) => (w.seq <= c.seq ? (w.resolve(now), false) : true));
        }
      }
    })();
    return { c, until: (seq: number) => new Promise<number>((resolve) => (c.seq >= seq ? resolve(performance.now()) : c.waiters.push({ seq, resolve }))) };
  }
  const one = await sseClient();
  const latency: number[] = [];
  for (let i = 0; i < 20; i++) {
    await Bun.sleep(137 * (1 + (i % 3))); // not in step with the server's 250 ms look
    const seq = append();
    const t0 = performance.now();
    latency.push((await one.until(seq)) - t0);
  }
  one.c.close();
  const lat = stats(latency);

  // Memory with CLIENTS pages connected for SOAK_S seconds.
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => sseClient()));
  const samples: { t: number; rss: number }[] = [];
  const t0 = performance.now();
  let appended = 0;
  let lastSeq = 0;
  for (let s = 0; (performance.now() - t0) / 1000 < SOAK_S; s++) {
    if (s % 2 === 0) {
      lastSeq = append();
      appended++;
    }
    await (await fetch(new URL(`/loops/${name}/?fragment=1`, base))).arrayBuffer();
    if (s % 5 === 0) samples.push({ t: (performance.now() - t0) / 1000, rss: rssMiB(pid) });
    await Bun.sleep(1000);
  }
  await Promise.all(clients.map((c) => c.until(lastSeq)));
  const heard = clients.map((c) => c.c.heads);
  for (const c of clients) c.c.close();
  const warm = samples.filter((x) => x.t >= 10);
  const firstRss = warm[0]?.rss ?? samples[0]!.rss;
  const lastRss = samples.at(-1)!.rss;
  const maxRss = Math.max(...samples.map((x) => x.rss));
  // Least-squares slope of RSS over time after the warm-up, in MiB per minute.
  const xs = warm.map((x) => x.t / 60);
  const ys = warm.map((x) => x.rss);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const slope = xs.length > 1 ? xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0) / xs.reduce((a, x) => a + (x - mx) ** 2, 0) : 0;

  const row = (what: string, s: ReturnType<typeof stats>, target: string, ok: boolean | null, extra = "") =>
    `| ${what} | ${f1(s.median)} | ${f1(s.p95)} | ${f1(s.min)}–${f1(s.max)} | ${extra} | ${target} | ${ok === null ? "" : ok ? "ok" : "miss"} |`;
  const lines = [
    `loop serve over ${ITEMS} items, ${EVENTS} events (${loop.join(" ")}); ${RUNS} runs each after 3 warm-up`,
    "",
    "| measure | median ms | p95 ms | min–max ms | | target | verdict |",
    "|---|---|---|---|---|---|---|",
    row(
      "loop page drawn anew, server time",
      page.server,
      `≤ ${TARGETS.pageMs} ms`,
      page.server.median <= TARGETS.pageMs,
      `${(page.bytes / 1024).toFixed(0)} KiB`,
    ),
    row("loop page drawn anew, wall (fetch)", page.wall, "", null),
    row("loop page from the cache, server time", cached.server, "", null),
    row("loop page fragment drawn anew, server time", fragment.server, "", null),
    row("item page, server time", item.server, "", null, someItem),
    row("/api/…/status, server time", api.server, "≤ `loop status`", api.server.median <= cliStats.median, `${(api.bytes / 1024).toFixed(0)} KiB`),
    row("/api/…/status, wall (fetch)", api.wall, "≤ `loop status`", api.wall.median <= cliStats.median),
    row("`loop status --json`, process", cliStats, "", null),
    row("event commit → page's `head`", lat, `≤ ${TARGETS.eventMs} ms`, lat.max <= TARGETS.eventMs, "20 events"),
    "",
    `${CLIENTS} SSE clients for ${SOAK_S} s (an event every 2 s, a page every 1 s): server RSS ${f1(firstRss)} MiB after warm-up, ${f1(lastRss)} MiB at the end, max ${f1(maxRss)} MiB; slope ${slope.toFixed(2)} MiB/min (${(slope * 10).toFixed(1)} MiB over 10 min); ${appended} events, every client heard ${Math.min(...heard)}–${Math.max(...heard)} heads`,
    `samples (s: MiB): ${samples.map((x) => `${x.t.toFixed(0)}: ${f1(x.rss)}`).join(", ")}`,
  ];
  process.stdout.write(lines.join("\n") + "\n");
} finally {
  if (server) {
    server.kill("SIGTERM");
    await server.exited;
  }
  rmSync(dir, { recursive: true, force: true });
}
