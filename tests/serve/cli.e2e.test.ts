// `loop serve` as a command: what it prints first, how it stops, and what it refuses before serving
// (each refusal exits with its documented code, says why, and prints nothing on stdout).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { demoDefinition, Project } from "../helpers/project.ts";
import { runInProcess } from "../helpers/cli.ts";

let p: Project;
let q: Project;
const empties: string[] = [];
/** A fresh directory with nothing in it (removed after the tests). */
const empty = () => {
  const d = mkdtempSync(join(tmpdir(), "loop-serve-empty-"));
  empties.push(d);
  return d;
};

beforeAll(async () => {
  p = new Project(demoDefinition([{ id: "a", prompt: "hi" }], { name: "one" }));
  await p.runToDrain();
  // A second project whose loop has the same name.
  q = new Project(demoDefinition([{ id: "b", prompt: "hi" }], { name: "one" }));
  await q.run();
}, 120_000);

afterAll(() => {
  p?.dispose();
  q?.dispose();
  for (const d of empties) rmSync(d, { recursive: true, force: true });
});

/** Start `loop serve`, read its first line of stdout, then stop it with `signal`. */
async function serveOnce(args: string[], signal: NodeJS.Signals = "SIGTERM") {
  const proc = p.spawn(["serve", ...args]);
  const reader = proc.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  const first = out.split("\n")[0]!;
  let fetched: Response | null = null;
  try {
    const url = first.startsWith("{") ? JSON.parse(first).url : first;
    fetched = await fetch(new URL("api/loops", url));
  } catch {}
  proc.kill(signal);
  const code = await proc.exited;
  reader.releaseLock();
  const stderr = await new Response(proc.stderr).text();
  return { first, code, stderr, fetched };
}

describe("serving", () => {
  test("off a terminal the first line is the loop/serve@1 document with the address port 0 picked; SIGTERM stops it with 130", async () => {
    const r = await serveOnce(["--listen", "127.0.0.1:0"]);
    const doc = JSON.parse(r.first);
    expect(doc).toMatchObject({ schema: "loop/serve@1", token: false, loops: [{ name: "one", root: p.root, stateRoot: p.stateRoot }] });
    expect(doc.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(doc.listen).toBe(new URL(doc.url).host);
    expect(doc.loops[0].url).toBe(`${doc.url}loops/one/`);
    expect(r.fetched?.status).toBe(200);
    expect(r.code).toBe(130);
    expect(r.stderr.trim().split("\n")).toEqual([`loop serve: 1 loop on ${doc.url}, actions on; Ctrl-C stops`]);
  });

  test("--text: the first line is the address; SIGINT stops it too", async () => {
    const r = await serveOnce(["--listen", "127.0.0.1:0", "--text"], "SIGINT");
    expect(r.first).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(r.fetched?.status).toBe(200);
    expect(r.code).toBe(130);
  });

  test("several --root: one loop each; --listen with a token from the environment", async () => {
    const r = await (async () => {
      const other = new Project(demoDefinition([{ id: "c", prompt: "hi" }], { name: "two" }));
      try {
        await other.run();
        const proc = p.spawn(["serve", "--root", p.root, "--root", other.root, "--listen", "127.0.0.1:0"], { LOOP_SERVE_TOKEN: "a-token-of-16-chars" });
        const reader = proc.stdout.getReader();
        const { value } = await reader.read();
        const doc = JSON.parse(new TextDecoder().decode(value).split("\n")[0]!);
        const unauthorized = (await fetch(new URL("api/loops", doc.url))).status;
        const loops = await (await fetch(new URL("api/loops", doc.url), { headers: { authorization: "Bearer a-token-of-16-chars" } })).json();
        proc.kill("SIGTERM");
        await proc.exited;
        return { doc, unauthorized, loops: loops as any };
      } finally {
        other.dispose();
      }
    })();
    expect(r.doc.token).toBe(true);
    expect(r.doc.loops.map((l: any) => l.name)).toEqual(["one", "two"]);
    expect(r.unauthorized).toBe(401);
    expect(r.loops.loops.map((l: any) => [l.name, l.state])).toEqual([
      ["one", "drained"],
      ["two", "running"],
    ]);
  });
});

describe("refusals, before anything is served", () => {
  const cases: { name: string; args: () => string[]; env?: () => Record<string, string>; exit: number; code: string; message: RegExp }[] = [
    { name: "beyond loopback without a token", args: () => ["--listen", "0.0.0.0:0"], exit: 2, code: "usage", message: /not loopback, without a token/ },
    { name: "a short token", args: () => ["--listen", "0.0.0.0:0", "--token", "short"], exit: 2, code: "usage", message: /at least 16/ },
    { name: "a malformed --listen", args: () => ["--listen", "7777"], exit: 2, code: "usage", message: /expected host:port/ },
    { name: "no store under the root", args: () => ["--root", empty(), "--listen", "127.0.0.1:0"], exit: 2, code: "missing_store", message: /no store at/ },
    {
      name: "two loops of one name",
      args: () => ["--root", p.root, "--root", q.root, "--listen", "127.0.0.1:0"],
      exit: 2,
      code: "usage",
      message: /two loops are named "one"/,
    },
    { name: "one root twice", args: () => ["--root", p.root, "--root", p.root, "--listen", "127.0.0.1:0"], exit: 2, code: "usage", message: /is given twice/ },
    {
      name: "--state-root with several roots",
      args: () => ["--root", p.root, "--root", q.root, "--state-root", p.stateRoot],
      exit: 2,
      code: "usage",
      message: /--state-root names one state root/,
    },
    {
      name: "LOOP_STATE_ROOT with several roots",
      args: () => ["--root", p.root, "--root", q.root],
      env: () => ({ LOOP_STATE_ROOT: p.stateRoot }),
      exit: 2,
      code: "usage",
      message: /LOOP_STATE_ROOT names one state root/,
    },
  ];
  for (const c of cases)
    test(`${c.name}: exit ${c.exit}, ${c.code}`, async () => {
      const r = await runInProcess(["serve", ...c.args()], { cwd: p.root, env: c.env?.() });
      expect(r.stdout).toBe("");
      expect(r.code).toBe(c.exit);
      const err = JSON.parse(r.stderr).error;
      expect(err.code).toBe(c.code);
      expect(err.message).toMatch(c.message);
    });

  test("an address in use: exit 1, io_error naming the address", async () => {
    const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    try {
      const r = await runInProcess(["serve", "--listen", `127.0.0.1:${taken.port}`], { cwd: p.root });
      expect(r.code).toBe(1);
      const err = JSON.parse(r.stderr).error;
      expect(err.code).toBe("io_error");
      expect(err.message).toContain(`cannot listen on 127.0.0.1:${taken.port}`);
      expect(r.stdout).toBe("");
    } finally {
      taken.stop(true);
    }
  });

  test("a root without a store is left as it was", async () => {
    const dir = empty();
    const r = await runInProcess(["serve", "--root", dir, "--listen", "127.0.0.1:0"], { cwd: p.root });
    expect(r.code).toBe(2);
    expect(readdirSync(dir)).toEqual([]);
  });
});
