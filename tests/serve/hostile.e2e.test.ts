// What `loop serve` opens and answers when the requests or the state root are hostile (docs/cli/loop-serve.md#security-model):
// a malformed Host header gets loop's own answer, never Bun's development page; a refusal closes its
// connection; a FIFO in place of loop.db blocks nothing (nor `loop status`); a session folder an
// agent replaced by a link is not followed. Real processes, real sockets, a real loop's state root.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServe } from "../../lib/serve/serve.ts";
import { CSP, startServer } from "../../lib/serve/server.ts";
import { LoopSource } from "../../lib/serve/source.ts";
import { BUN, demoDefinition, LOOP, pollUntil, Project } from "../helpers/project.ts";
import { testEnv } from "../helpers/env.ts";

const TOKEN = "hostile-test-token-0123456789";
let p: Project;

beforeAll(async () => {
  p = new Project(demoDefinition([{ id: "a", prompt: "Say a.\n@demo write a.txt a", verify: "test -f a.txt" }], { name: "h" }));
  await p.runToDrain();
}, 120_000);

afterAll(() => p?.dispose());

/** One connection, spoken to byte by byte: what came back, and whether the server closed it. */
async function connection(port: number) {
  let text = "";
  let closed = false;
  const dec = new TextDecoder();
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data: (_s, d) => void (text += dec.decode(d, { stream: true })),
      end: () => void (closed = true),
      close: () => void (closed = true),
    },
  });
  /** The n-th complete response on the connection (its head and body, by Content-Length). */
  const response = (n: number) => {
    let at = 0;
    for (let i = 0; ; i++) {
      const end = text.indexOf("\r\n\r\n", at);
      if (end < 0) return null;
      const head = text.slice(at, end);
      const length = Number(/^content-length: *(\d+)/im.exec(head)?.[1] ?? 0);
      if (text.length < end + 4 + length) return null;
      if (i === n) return { head, status: Number(head.split(" ")[1]), body: text.slice(end + 4, end + 4 + length) };
      at = end + 4 + length;
    }
  };
  return {
    send: (request: string) => void socket.write(request),
    async response(n = 0) {
      await pollUntil(() => response(n) !== null || closed, `response ${n} on the connection`);
      return response(n);
    },
    closed: () => closed,
    text: () => text,
    end: () => socket.end(),
  };
}

const header = (head: string, name: string) => new RegExp(`^${name}: *(.*)$`, "im").exec(head)?.[1]?.trim() ?? null;

/** `loop serve` as a process, over `stateRoot`, with the token in its environment; stop() gives back its stderr. */
async function serveProcess(stateRoot: string) {
  const proc = Bun.spawn([BUN, LOOP, "serve", "--listen", "127.0.0.1:0", "--json", "--root", p.root, "--state-root", stateRoot], {
    cwd: p.root,
    env: { ...testEnv(), LOOP_SERVE_TOKEN: TOKEN },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`loop serve ended before it served: ${await new Response(proc.stderr).text()}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const url = new URL(JSON.parse(out.split("\n")[0]!).url as string);
  return {
    url,
    port: Number(url.port),
    /** A request with the token, bounded: a server stuck in a system call must fail the test, not hang it. */
    get: (path: string) => fetch(new URL(path, url), { headers: { authorization: `Bearer ${TOKEN}` }, signal: AbortSignal.timeout(30_000) }),
    async stop() {
      proc.kill("SIGKILL");
      await proc.exited;
      return new Response(proc.stderr).text();
    },
  };
}

describe("a malformed Host header (docs/cli/loop-serve.md#security-model)", () => {
  test("gets loop's own 400, with its headers and its connection closed, before authentication; nothing on stderr", async () => {
    const copy = join(p.aux, "state-host");
    cpSync(p.stateRoot, copy, { recursive: true });
    const s = await serveProcess(copy);
    try {
      for (const host of ["127.0.0.1 evil", "::ffff:127.0.0.1", "127.0.0.1:80@x", "127.0.0.1:99999", "a/b"]) {
        const c = await connection(s.port);
        // A token is configured and none is sent.
        c.send(`GET /api/loops HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
        const r = (await c.response())!;
        expect([host, r.status]).toEqual([host, 400]);
        expect(JSON.parse(r.body)).toEqual({
          error: { code: "bad_request", message: `the Host header ${JSON.stringify(host)} is not a host name or address with an optional port` },
        });
        expect([host, header(r.head, "content-security-policy"), header(r.head, "x-content-type-options"), header(r.head, "connection")]).toEqual([
          host,
          CSP,
          "nosniff",
          "close",
        ]);
        await pollUntil(c.closed, `the server to close the connection after refusing Host ${host}`);
      }
      // HTTP/1.0 without a Host: the token decides (401), and the answer is loop's own.
      const c = await connection(s.port);
      c.send("GET /metrics HTTP/1.0\r\n\r\n");
      const r = (await c.response())!;
      expect(r.status).toBe(401);
      expect(JSON.parse(r.body).error.code).toBe("unauthorized");
      // A good request still gets its answer.
      expect((await s.get("/api/loops")).status).toBe(200);
    } finally {
      const stderr = await s.stop();
      expect(stderr.trim().split("\n")).toEqual([
        expect.stringMatching(/^loop serve: 1 loop on http:\/\/127\.0\.0\.1:\d+\/ \(token required\), actions on; Ctrl-C stops$/),
      ]);
    }
  });
});

describe("a FIFO in place of loop.db (docs/cli/loop-serve.md#security-model)", () => {
  test("`loop serve` goes on answering (503 corrupt_store, loop_up 0) and reads the store again once it is back", async () => {
    const copy = join(p.aux, "state-fifo");
    cpSync(p.stateRoot, copy, { recursive: true });
    const s = await serveProcess(copy);
    const db = join(copy, "loop.db");
    try {
      expect((await s.get("/api/loops/h/status")).status).toBe(200);
      renameSync(db, `${db}.away`);
      expect(Bun.spawnSync(["mkfifo", db]).exitCode).toBe(0);
      // Each answer reads the store afresh: it meets the FIFO, says so, and waits on nothing.
      const status = await s.get("/api/loops/h/status");
      expect(status.status).toBe(503);
      const doc = (await status.json()) as { error: { code: string; message: string } };
      expect(doc.error.code).toBe("corrupt_store");
      expect(doc.error.message).toContain(`${db} is a FIFO, not a regular file, and was not opened`);
      expect(await (await s.get("/metrics")).text()).toContain('loop_up{loop="h"} 0');
      expect((await s.get("/loops/h/")).status).toBe(503);
      expect((await s.get("/api/loops")).status).toBe(200);
      rmSync(db);
      renameSync(`${db}.away`, db);
      expect((await s.get("/api/loops/h/status")).status).toBe(200);
    } finally {
      await s.stop();
    }
  });

  test("`loop status` refuses it at once (exit 2, corrupt_store), never waiting in the open", async () => {
    const copy = join(p.aux, "state-fifo-status");
    cpSync(p.stateRoot, copy, { recursive: true });
    const db = join(copy, "loop.db");
    rmSync(db);
    expect(Bun.spawnSync(["mkfifo", db]).exitCode).toBe(0);
    // Bounded, so that a status stuck in the open fails the test instead of hanging it.
    const r = Bun.spawnSync([BUN, LOOP, "status", "--json", "--root", p.root, "--state-root", copy], {
      cwd: p.root,
      env: testEnv(),
      timeout: 60_000,
      killSignal: "SIGKILL",
    });
    expect(r.signalCode ?? null).toBeNull();
    expect(r.exitCode).toBe(2);
    expect(JSON.parse(r.stderr.toString()).error).toEqual({
      code: "corrupt_store",
      message: `store under ${copy} is not a loop store: ${db} is a FIFO, not a regular file, and was not opened`,
    });
  });
});

describe("the server's own loop (in process)", () => {
  let served: ReturnType<typeof startServe>;
  beforeAll(() => {
    served = startServe({ loops: [{ root: p.root, stateRoot: p.stateRoot }], listen: "127.0.0.1:0", token: undefined, env: testEnv(), pollMs: 60_000 });
  });
  afterAll(async () => served?.stop());

  test("a session folder replaced by a link to another folder is not followed: the item page shows none of its files (docs/cli/loop-serve.md#security-model)", async () => {
    const session = p.sessionDir("a", 1);
    const before = await (await fetch(new URL("/loops/h/items/a", served.url))).text();
    expect(before).toContain("<summary>handoff</summary>");
    const elsewhere = join(p.aux, "elsewhere");
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, "output.log"), "SECRET-OUTPUT-of-another-folder\n");
    writeFileSync(join(elsewhere, "handoff.md"), "SECRET-HANDOFF-of-another-folder\n");
    writeFileSync(join(elsewhere, "verify.log"), "SECRET-VERIFY-of-another-folder\n");
    renameSync(session, `${session}.away`);
    symlinkSync(elsewhere, session);
    try {
      const page = await (await fetch(new URL("/loops/h/items/a", served.url))).text();
      expect(page).not.toContain("SECRET");
      expect(page).toContain("sessions/a/1 is a symbolic link (not followed)");
    } finally {
      rmSync(session);
      renameSync(`${session}.away`, session);
    }
  });

  test("a refused request's connection is closed: a client retrying a refused live update holds no socket open", async () => {
    const src = new LoopSource({ root: p.root, stateRoot: p.stateRoot, env: testEnv() });
    src.open();
    const s = startServer({ sources: [src], listen: { host: "127.0.0.1", port: 0 }, token: null, maxClients: 1 });
    try {
      const first = await fetch(new URL("/loops/h/stream", s.url));
      expect(first.status).toBe(200);
      const cases: [string, number][] = [
        ["GET /loops/h/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n", 503],
        ["GET /api/loops HTTP/1.1\r\nHost: evil.example\r\nConnection: keep-alive\r\n\r\n", 421],
        ["POST /api/loops HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n", 405],
      ];
      for (const [request, status] of cases) {
        const c = await connection(s.port);
        c.send(request);
        const r = (await c.response())!;
        expect([r.status, header(r.head, "connection")]).toEqual([status, "close"]);
        // A second request on the same connection is not answered: the server closed it.
        c.send("GET /api/loops HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        await pollUntil(() => c.closed() || c.text().split("HTTP/1.1 ").length > 2, "the connection to close, or a second answer");
        expect([status, c.closed(), c.text().split("HTTP/1.1 ").length - 1]).toEqual([status, true, 1]);
      }
      await first.body!.cancel();
    } finally {
      await s.stop();
    }
  });
});
