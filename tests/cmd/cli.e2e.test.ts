// CLI contract tests (docs/cli/README.md) where the process is the point (`cli`: `bun cmd/loop.ts …`
// or `bun cmd/loop-status.ts`): the multi-call entry, the single-file script, pipes, terminals,
// signals. Usage, output format and exit codes in process: cli.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { closeSync, constants as fsConstants, existsSync, mkdtempSync, openSync, readFileSync, readSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { Store } from "../../lib/log/store.ts";
import { buildStore } from "../helpers/store.ts";
import { definition, itemDef } from "../helpers/events.ts";
import { TOOLS } from "../../cmd/tools.ts";
import { BUN, type Env, LOOP, REPO, runInProcess as run, runLoopSync as cli } from "../helpers/cli.ts";
import { testEnv } from "../helpers/env.ts";
import { onTerminal } from "../helpers/tty.ts";
import { makeRepo } from "../helpers/repo.ts";
import { seededItem, seededRepo } from "../helpers/seeded-repo.ts";

const LOOP_STATUS = join(REPO, "cmd", "loop-status.ts");
const PKG_VERSION: string = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version;
/** `--version --json` from source: this checkout's commit, asked of git here independently. */
const SOURCE_VERSION_DOC = (() => {
  const rev = (args: string[]) =>
    Bun.spawnSync(["git", "-C", REPO, ...args], { env: testEnv(), stdout: "pipe" })
      .stdout.toString()
      .trim();
  const commit = rev(["rev-parse", "HEAD"]) || null; // null: the sources are not a git checkout
  return {
    schema: "loop/version@1",
    version: PKG_VERSION,
    commit,
    dirty: expect.any(Boolean), // the working tree changes while tests are written
    target: "source",
    platform: `${process.platform}-${process.arch}`,
    bun: Bun.version,
  };
})();
const ANSI = /\x1b\[/;

const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix = "loop-cli-"): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

/** A fresh git repository on branch main with one commit (tests/helpers/repo.ts). */
function gitRepo(): string {
  const { dir, root } = makeRepo("loop-cli-repo-");
  temps.push(dir);
  return root;
}

/** Run under a pseudo-terminal (stdin, stdout and stderr are one TTY); returns everything it printed. */
function cliOnTty(args: string[], opts: { cwd?: string; env?: Env } = {}) {
  return onTerminal([BUN, LOOP, ...args], { cwd: opts.cwd ?? REPO, env: testEnv({ TERM: "xterm-256color", ...opts.env }) }).ended();
}

function jsonError(stderr: string): { error: { code: string; message: string } } {
  const doc = JSON.parse(stderr.trim());
  expect(typeof doc.error.code).toBe("string");
  expect(typeof doc.error.message).toBe("string");
  return doc;
}

const builtTools = Object.keys(TOOLS);

describe("--version", () => {
  // The entry answers `loop --version` and `loop <tool> --version` itself, before loading a tool.
  test("the multi-call entry: loop --version, loop status --version", () => {
    for (const args of [["--version"], ["status", "--version"]]) expect(cli(args)).toEqual({ code: 0, stdout: `${PKG_VERSION}\n`, stderr: "" });
  });

  test("the multi-call entry: loop --version --json (either order), loop -V --text; nothing else beside it", () => {
    for (const args of [
      ["--version", "--json"],
      ["--json", "--version"],
      ["-V", "--json"],
    ]) {
      const r = cli(args);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(JSON.parse(r.stdout)).toEqual({ ...SOURCE_VERSION_DOC, sqlite: expect.any(String) });
    }
    for (const args of [
      ["-V", "--text"],
      ["--text", "--version"],
    ])
      expect(cli(args)).toEqual({ code: 0, stdout: `${PKG_VERSION}\n`, stderr: "" });
    for (const [args, message] of [
      [["--version", "--bogus"], 'loop --version takes only --json or --text, not "--bogus"'],
      [["--version", "status"], 'loop --version takes only --json or --text, not "status"'],
      [["--version", "--json", "--text"], "--json and --text exclude each other"],
      [["--version", "--json", "--json"], "--json was given 2 times; give it once"],
    ] as const) {
      const r = cli([...args]);
      // Off a terminal a usage error is a JSON document (docs/cli/README.md#errors): compare its message.
      const said = r.stderr.startsWith("{") ? JSON.parse(r.stderr).error.message : r.stderr;
      expect({ args, code: r.code, stdout: r.stdout, said }).toEqual({ args, code: 2, stdout: "", said: expect.stringContaining(message) });
    }
  });

  test("bun cmd/loop-status.ts --version (the single-file script)", () => {
    const r = cli(["--version"], { script: LOOP_STATUS });
    expect(r).toEqual({ code: 0, stdout: `${PKG_VERSION}\n`, stderr: "" });
  });
});

describe("--help", () => {
  test.each(builtTools)("loop %s --help: stdout, exit 0, no ANSI when piped, the tool named as invoked", (t) => {
    const r = cli([t, "--help"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain(`USAGE loop ${t} `);
    expect(r.stdout).not.toContain(`loop-${t}`);
    expect(r.stdout).toContain("--help");
    expect(r.stdout).not.toMatch(ANSI);
  });

  test("loop --help lists every built tool; loop help <tool> is the tool's help", () => {
    const r = cli(["--help"]);
    expect(r.code).toBe(0);
    for (const t of builtTools) expect(r.stdout).toContain(`  ${t} `);
    expect(r.stdout).not.toMatch(ANSI);
    const h = cli(["help", "status"]);
    expect([h.code, h.stderr]).toEqual([0, ""]);
    expect(h.stdout).toContain("--work-item");
  });

  test("bun cmd/loop-status.ts --help: the single-file script is named loop-status", () => {
    const r = cli(["--help"], { script: LOOP_STATUS });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("--work-item");
    expect(r.stdout).toContain("USAGE loop-status ");
    expect(r.stdout).not.toMatch(ANSI);
  });

  test("loop help <tool> and the tool's own messages name it as invoked", () => {
    expect(cli(["help", "run"]).stdout).toContain("USAGE loop run ");
    const r = cli(["run", "--no-such-flag", "--text"]);
    expect(r.stderr).toBe("loop run: unknown or unexpected option: --no-such-flag\nRun `loop run --help` for usage.\n");
    const s = cli(["--no-such-flag", "--text"], { script: LOOP_STATUS });
    expect(s.stderr).toContain("Run `loop-status --help` for usage.");
  });

  test("loop with no tool: usage on stderr, exit 2", () => {
    const r = cli([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("Usage: loop <tool>");
  });
});

describe("usage errors exit 2, message on stderr, nothing on stdout", () => {
  test("bun cmd/loop-status.ts --no-such-flag", () => {
    const r = cli(["--no-such-flag"], { script: LOOP_STATUS });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("no-such-flag");
  });

  test("loop --no-such-flag", () => {
    const r = cli(["--no-such-flag"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("no-such-flag");
  });

  test("unknown tool name", () => {
    const r = cli(["no-such-tool"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("unknown tool");
    expect(r.stderr).not.toContain("did you mean");
  });

  test("a misspelt tool name: did you mean the close one", () => {
    const r = cli(["stauts"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(JSON.parse(r.stderr).error.message).toStartWith('unknown tool "stauts"; did you mean "status"? (tools: ');
  });

  test("an error message quoting what was typed prints its control characters escaped", async () => {
    const repo = gitRepo();
    const said = [cli(["\u009b31mtool"], { cwd: repo })]; // the multi-call entry's own message
    for (const args of [
      ["ctl", "pause", "\u001b]0;pwned\u0007", "--text"],
      ["run", "--foo\nloop-run: all good"],
      ["status", "--text", "--root", "/x\nloop-status: healthy"],
      ["run", "--text", "--root", "/x\nloop-run: all good"],
    ])
      said.push(await run(args, { cwd: repo }));
    for (const r of said) {
      expect(r.code).toBe(2);
      expect(r.stderr).not.toMatch(/[\u001b\u0007\u009b]/);
      // What was typed stays inside its own line.
      expect(r.stderr.split("\n").filter((l) => /^loop-(run|status): (all good|healthy)/.test(l))).toEqual([]);
    }
  });

  test("under --json every usage error is one JSON line on stderr, whoever finds it (parser, tool, entry point)", () => {
    const repo = gitRepo();
    const cases: [string[], string][] = [
      [["run", "--no-such-flag", "--json"], "no-such-flag"], // the parser
      [["status", "--json", "--text"], "--json and --text"], // the format check
      [["run", "--interval", "0s", "--watch", "--json"], "must be greater than zero"], // the tool
      [["ctl", "no-such-verb", "--json"], "unknown verb"],
      [["no-such-tool", "--json"], "unknown tool"], // the multi-call entry
      [["--no-such-option", "--json"], "unknown option"],
      [["help", "no-such-tool", "--json"], "unknown tool"],
      [["run", "--no-such-flag"], "no-such-flag"], // piped without a format flag: JSON, the default
    ];
    for (const [args, text] of cases) {
      const r = cli(args, { cwd: repo });
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
      expect(r.stderr.endsWith("\n") && r.stderr.trim().split("\n").length === 1).toBe(true);
      const doc = jsonError(r.stderr);
      expect(doc.error.code).toBe("usage");
      expect(doc.error.message).toContain(text);
    }
    // --text keeps the line for people.
    const t = cli(["run", "--no-such-flag", "--text"], { cwd: repo });
    expect(() => JSON.parse(t.stderr)).toThrow();
    expect(existsSync(join(repo, ".loop"))).toBe(false);
  });

  test("the format of a usage error is the one the command line asks for (docs/cli/README.md#errors): text on a terminal, JSON in a pipe, for every tool and the entry point", async () => {
    const repo = gitRepo();
    const cases: [string[], string][] = [
      [["run", "--no-such-flag"], "loop run"],
      [["status", "--root="], "loop status"],
      [["add"], "loop add"],
      [["no-such-tool"], "loop"],
      [["--no-such-option"], "loop"],
    ];
    for (const [args, prog] of cases) {
      // A person at a terminal: one line of text naming the tool (a tool's own errors add the hint).
      const tty = await cliOnTty(args, { cwd: repo, env: { NO_COLOR: "1" } });
      expect({ args, code: tty.code }).toEqual({ args, code: 2 });
      expect(tty.text).toStartWith(`${prog}: `);
      expect(tty.text).not.toContain('{"error"');
      if (prog !== "loop") expect(tty.text).toContain(`Run \`${prog} --help\` for usage.`);
      // A script reading a pipe: the JSON error line it parses every other error from.
      const piped = cli(args, { cwd: repo });
      expect({ args, code: piped.code, stdout: piped.stdout }).toEqual({ args, code: 2, stdout: "" });
      expect(jsonError(piped.stderr).error.code).toBe("usage");
      // --text in a pipe: text again.
      if (!args.includes("--json")) expect(cli([...args, "--text"], { cwd: repo }).stderr).toStartWith(`${prog}: `);
    }
  });

  test("a JSON error line escapes C1 control characters too (JSON.stringify leaves them raw)", () => {
    const r = cli(["run", "--json", "--x\u009b31m"]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/[\u0080-\u009f]/);
    expect(jsonError(r.stderr).error.message).toContain("\u009b31m");
  });
});

describe("loop init", () => {
  // A real process: GIT_CEILING_DIRECTORIES must reach git, which runs with the process's environment.
  test("outside a git work tree: exit 2, nothing created", () => {
    const dir = tempDir("loop-cli-nogit-");
    const r = cli(["init"], { cwd: dir, env: { GIT_CEILING_DIRECTORIES: dir } });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("git");
    expect(existsSync(join(dir, "loop.json"))).toBe(false);
    expect(existsSync(join(dir, ".loop"))).toBe(false);
  });

  test('writes the JSON Schema into the state root and a "$schema" reference to it that loop accepts', () => {
    const repo = gitRepo();
    const r = cli(["init", "--json"], { cwd: repo });
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.schema).toBe("loop/init@1");
    expect(doc.schemaFile).toBe(join(realpathSync(repo), ".loop", "loop.schema.json"));
    expect(doc.created).toContain(doc.schemaFile);
    expect(JSON.parse(readFileSync(doc.schemaFile, "utf8"))).toEqual(JSON.parse(readFileSync(join(REPO, "schema", "loop.schema.json"), "utf8")));
    expect(readFileSync(join(repo, "loop.json"), "utf8")).toContain('"$schema": "./.loop/loop.schema.json",');
    // The template with its $schema is a valid definition: a step imports it, and waits for its review (control.review).
    const waits = cli(["run", "--json"], { cwd: repo });
    expect(waits.code).toBe(1);
    expect(JSON.parse(waits.stdout).action).toBe("review");
    expect(cli(["ctl", "start", "--yes", "--json"], { cwd: repo }).code).toBe(0);
    const run = cli(["run", "--json"], { cwd: repo });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).action).toBe("drained");
    // A state root elsewhere: the reference leads there from the project root.
    const other = gitRepo();
    const elsewhere = join(tempDir(), "state");
    expect(cli(["init", "--state-root", elsewhere], { cwd: other }).code).toBe(0);
    const ref = /"\$schema": "([^"]+)"/.exec(readFileSync(join(other, "loop.json"), "utf8"))![1]!;
    expect(ref.startsWith("../")).toBe(true);
    expect(existsSync(join(other, ref))).toBe(true);
  });
});

describe("status and replay", () => {
  test("a reader that goes away early (`| head`) is not an error: no stack, no message, the exit code stands", async () => {
    const repo = gitRepo();
    expect((await run(["init"], { cwd: repo })).code).toBe(0);
    // The reader closes its end at once, so the tool's write fails with EPIPE (or, if the tool
    // wrote first, the pipe swallowed it): either way stderr stays empty and the exit code is 0.
    for (const args of ["status --json", "replay --text", "--help", "--version", "status --help"]) {
      const r = spawnSync("bash", ["-c", `"$0" "$1" ${args} | { exec 0<&-; sleep 0.3; }; echo "exit=\${PIPESTATUS[0]}" >&2`, process.execPath, LOOP], {
        cwd: repo,
        encoding: "utf8",
        env: testEnv(),
      });
      expect(r.stderr).toBe("exit=0\n");
    }
  });

  test("a stdout that cannot take the results (/dev/full) is one line on stderr and exit 1, never a stack", async () => {
    const repo = gitRepo();
    expect((await run(["init"], { cwd: repo })).code).toBe(0);
    for (const args of ["status --json", "replay --text", "--help", "--version", "status --help"]) {
      const r = spawnSync("bash", ["-c", `"$0" "$1" ${args} >/dev/full`, process.execPath, LOOP], { cwd: repo, encoding: "utf8", env: testEnv() });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/^loop( status| replay)?: cannot write (the results )?to stdout: ENOSPC[^\n]*\n$/);
    }
  });

  test("a watcher whose stdout is full says so once, while it runs, never a stack per tick", async () => {
    const repo = gitRepo();
    expect((await run(["init"], { cwd: repo })).code).toBe(0);
    // Without control.review: a loop waiting for review prints its review on stderr, which is not what this is about.
    const def = join(repo, "loop.json");
    writeFileSync(def, readFileSync(def, "utf8").replace('"review": true', '"review": false'));
    const child = Bun.spawn(["bash", "-c", `exec "$0" "$1" run --watch --forever --interval 50ms --json >/dev/full`, process.execPath, LOOP], {
      cwd: repo,
      env: testEnv(),
      stderr: "pipe",
    });
    // The message arrives while the watcher still runs (it is interrupted only afterwards).
    const reader = child.stderr.getReader();
    let err = "";
    while (!err.endsWith("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      err += new TextDecoder().decode(value);
    }
    expect(child.exitCode).toBeNull();
    // Later turns write (and fail) again: nothing more may appear.
    child.kill("SIGINT");
    expect(await child.exited).toBe(130);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      err += new TextDecoder().decode(value);
    }
    expect(err).toBe("loop run: cannot write the results to stdout: ENOSPC: no space left on device, write\n");
  });

  test("a watcher whose repository is deleted stops instead of warning forever", async () => {
    const repo = gitRepo();
    expect((await run(["init"], { cwd: repo })).code).toBe(0);
    const child = Bun.spawn([process.execPath, LOOP, "run", "--watch", "--forever", "--interval", "50ms", "--json", "--root", repo], {
      env: testEnv(),
      stdout: "ignore",
      stderr: "pipe",
    });
    const runPid = join(repo, ".loop", "run.pid");
    for (let i = 0; i < 2400 && !existsSync(runPid); i++) await Bun.sleep(25);
    rmSync(repo, { recursive: true, force: true });
    // It stops at its next turn: exit 2 (nothing to read there), or 1 if the deletion caught a
    // step half-way. Either way it does not warn forever (the test would not end).
    expect([1, 2]).toContain(await child.exited);
  });

  test("a large document reaches a pipe opened non-blocking and read late, whole", async () => {
    // The tool writes stdout synchronously; its stdout here is a FIFO the parent opened O_NONBLOCK
    // and reads only after the pipe's 64 KiB filled. (Bun makes its stdio blocking at start-up, so
    // here the write just waits; writeWhole's hand-over after EAGAIN or a short write is tested above.)
    const dir = tempDir("loop-cli-nonblock-");
    const stateRoot = join(dir, "state");
    buildStore(stateRoot, [
      definition(
        1,
        Array.from({ length: 400 }, (_, i) => itemDef(`item-${i}`)),
      ),
    ]);
    const fifo = join(dir, "out");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    const { O_NONBLOCK, O_RDONLY, O_WRONLY } = fsConstants;
    const rfd = openSync(fifo, O_RDONLY | O_NONBLOCK);
    const wfd = openSync(fifo, O_WRONLY | O_NONBLOCK);
    const child = Bun.spawn([process.execPath, LOOP, "status", "--json", "--state-root", stateRoot], {
      stdio: ["ignore", wfd, "pipe"],
      env: testEnv(),
    });
    closeSync(wfd);
    await Bun.sleep(500); // let the pipe fill before anyone reads
    const chunks: Buffer[] = [];
    const buf = Buffer.alloc(1 << 16);
    let exited = false;
    void child.exited.then(() => (exited = true));
    for (;;) {
      let n = 0;
      try {
        n = readSync(rfd, buf);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EAGAIN") throw err;
        if (exited) break;
        await Bun.sleep(5);
        continue;
      }
      if (n === 0) break; // every writer closed: the child exited
      chunks.push(Buffer.from(buf.subarray(0, n)));
    }
    closeSync(rfd);
    expect(await child.exited).toBe(0);
    expect(await new Response(child.stderr).text()).toBe("");
    const text = Buffer.concat(chunks).toString("utf8");
    expect(text.length).toBeGreaterThan(1 << 16);
    expect(JSON.parse(text).items).toHaveLength(400);
  });

  test("JSON is the default when not on a terminal, with a schema key; exit 0 on a fresh store", async () => {
    const repo = gitRepo();
    expect((await run(["init"], { cwd: repo })).code).toBe(0);
    const s = await run(["status"], { cwd: repo });
    expect(s.code).toBe(0);
    expect(s.stderr).toBe("");
    expect(JSON.parse(s.stdout).schema).toBe("loop/status@1");
    const p = await run(["replay"], { cwd: repo });
    expect(p.code).toBe(0);
    const rep = JSON.parse(p.stdout);
    expect(rep.schema).toBe("loop/replay@1");
    expect(rep.ok).toBe(true);
    // A real process whose stdout is a pipe, through the single-file script.
    const direct = cli([], { cwd: repo, script: LOOP_STATUS });
    expect(direct.code).toBe(0);
    expect(JSON.parse(direct.stdout).schema).toBe("loop/status@1");
  });

  test("a JSON document over 64 KiB reaches a pipe whole", async () => {
    const items = Array.from({ length: 400 }, (_, i) => seededItem(`item-${i}`, `github:acme/api#${i + 1}`));
    const repo = await seededRepo(items, temps);
    const r = cli(["status"], { cwd: repo });
    expect(r.code).toBe(0);
    expect(r.stdout.length).toBeGreaterThan(64 * 1024);
    expect(JSON.parse(r.stdout).items).toHaveLength(400);
  });
});

describe("the actor", () => {
  test("without $LOOP_ACTOR, $USER or $LOGNAME, events name the uid's user, never `unknown`", async () => {
    const repo = await seededRepo([seededItem("alpha")], temps);
    const env = { LOOP_ACTOR: undefined, USER: undefined, LOGNAME: undefined };
    expect(cli(["ctl", "pause", "--json"], { cwd: repo, env }).code).toBe(0);
    const want = spawnSync("id", ["-un"], { encoding: "utf8" }).stdout.trim();
    const store = Store.open(join(repo, ".loop"));
    try {
      const last = store.db.query("SELECT actor FROM events ORDER BY seq DESC LIMIT 1").get() as { actor: string };
      expect(want).not.toBe("");
      expect(last.actor).toBe(`${want}@${hostname()}`);
    } finally {
      store.close();
    }
  });
});

describe("colour", () => {
  test("on a TTY, help is coloured unless NO_COLOR is set", async () => {
    const plain = await cliOnTty(["status", "--help"], { env: { NO_COLOR: "1" } });
    expect(plain.code).toBe(0);
    expect(plain.text).toContain("--work-item");
    expect(plain.text).not.toMatch(ANSI);
    // The control: without NO_COLOR the same TTY does get colour, so the check above means something.
    // (citty also turns colour off under CI=true, as CI runs this suite: testEnv removes CI.)
    const coloured = await cliOnTty(["status", "--help"], { env: { NO_COLOR: undefined } });
    expect(coloured.code).toBe(0);
    expect(coloured.text).toMatch(ANSI);
  });

  test("an empty NO_COLOR does not turn colour off (no-color.org: only a non-empty value does)", async () => {
    const r = await cliOnTty(["status", "--help"], { env: { NO_COLOR: "", CI: undefined } });
    expect(r.code).toBe(0);
    expect(r.text).toMatch(ANSI);
  });

  test("on a TTY with NO_COLOR, status text has no ANSI", async () => {
    const repo = await seededRepo([seededItem("alpha"), seededItem("beta")], temps);
    const r = await cliOnTty(["status"], { cwd: repo, env: { NO_COLOR: "1" } });
    expect(r.code).toBe(0);
    expect(r.text).toContain("alpha");
    expect(r.text).not.toMatch(ANSI);
  });

  test("piped, nothing is coloured even on a colour terminal", async () => {
    const repo = await seededRepo([seededItem("alpha")], temps);
    for (const args of [
      ["status", "--text"],
      ["replay", "--text"],
      ["status", "--help"],
      ["status", "--no-such-flag"],
    ]) {
      const r = cli(args, { cwd: repo, env: { TERM: "xterm-256color", NO_COLOR: undefined } });
      expect(r.stdout).not.toMatch(ANSI);
      expect(r.stderr).not.toMatch(ANSI);
    }
  });
});

describe("the confirmation prompt", () => {
  /** `loop ctl skip` on a terminal: answer the prompt with `keys` once it shows. */
  async function answerPrompt(repo: string, keys: string) {
    const tty = onTerminal([process.execPath, LOOP, "ctl", "skip", "--work-item", "alpha"], {
      cwd: repo,
      env: testEnv({ TERM: "xterm-256color", NO_COLOR: "1" }),
    });
    await tty.waitFor("Type the item's id (alpha)");
    tty.write(keys);
    return tty.ended();
  }

  test("Ctrl-C exits 130 (interrupted), No and Escape exit 3 (declined); nothing is changed either way", async () => {
    const repo = await seededRepo([seededItem("alpha")], temps);
    const db = readFileSync(join(repo, ".loop", "loop.db"));
    for (const [keys, code] of [
      ["\x03", 130],
      ["n\r", 3],
      ["\x1b", 3],
    ] as const) {
      const r = await answerPrompt(repo, keys);
      expect({ keys, code: r.code }).toEqual({ keys, code });
      expect(r.text).toContain(
        code === 130
          ? "interrupted; nothing was changed"
          : keys === "n\r"
            ? "declined: what was typed is not the item's id; nothing was changed"
            : "declined; nothing was changed",
      );
    }
    expect(readFileSync(join(repo, ".loop", "loop.db")).equals(db)).toBe(true);
  });
});
