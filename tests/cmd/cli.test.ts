// CLI contract tests (docs/cli/README.md), in temp git repositories: streams, exit codes and documents,
// in process (`run`: the tool's runTool with captured streams), and the entry's pure choices (the
// tool from the invoked name, a version request). Where the process is the point (the multi-call
// entry, the single-file script, pipes, terminals, signals): cli.e2e.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VERSION } from "../../lib/shared/version.ts";
import { TOOLS } from "../../cmd/tools.ts";
import { CONTRACT_TOOLS, invokedName, isCompiled, toolFromName, versionRequest } from "../../cmd/loop.ts";
import { type ArgsSpec, commonArgs, parseArgv, writeWhole } from "../../lib/shared/cli.ts";
import { UsageError } from "../../lib/shared/errors.ts";
import { REPO, runInProcess as run } from "../helpers/cli.ts";
import { testEnv } from "../helpers/env.ts";
import { git, makeRepo } from "../helpers/repo.ts";
import { seededItem, seededRepo } from "../helpers/seeded-repo.ts";

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

function jsonError(stderr: string): { error: { code: string; message: string } } {
  const doc = JSON.parse(stderr.trim());
  expect(typeof doc.error.code).toBe("string");
  expect(typeof doc.error.message).toBe("string");
  return doc;
}

const builtTools = Object.keys(TOOLS);

describe("--version", () => {
  test("lib/shared/version.ts matches package.json", () => {
    expect(VERSION).toBe(PKG_VERSION);
  });

  test.each(builtTools)("loop %s --version (and after other flags; piped, so the default format would be JSON)", async (t) => {
    for (const args of [["--version"], ["--text", "--version"], ["--quiet", "--version"]])
      expect(await run([t, ...args])).toEqual({ code: 0, stdout: `${PKG_VERSION}\n`, stderr: "" });
  });

  test.each(builtTools)("loop %s --version --json: the version document (from source: target source, the checkout's commit)", async (t) => {
    for (const args of [
      ["--version", "--json"],
      ["--json", "--version"],
    ]) {
      const r = await run([t, ...args]);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(JSON.parse(r.stdout)).toEqual({ ...SOURCE_VERSION_DOC, sqlite: expect.stringMatching(/^3\.\d+\.\d+$/) });
    }
    const both = await run([t, "--version", "--json", "--text"]);
    expect(both.code).toBe(2);
    expect(both.stdout).toBe("");
    expect(both.stderr).toContain("--json and --text exclude each other");
  });

  test("versionRequest: what the entry takes for a version request", () => {
    const cases: [string[], ReturnType<typeof versionRequest>][] = [
      [["--version"], "text"],
      [["-V"], "text"],
      [["--version", "--text"], "text"],
      [["--json", "--version"], "json"],
      [["--text", "-V"], "text"],
      [["status", "--version"], null], // the tool's own --version
      [["--json", "status"], null], // not a version request: an unknown option, said elsewhere
      [["--json"], null],
      [[], null],
      [["--version", "-h"], { error: 'loop --version takes only --json or --text, not "-h"' }],
    ];
    for (const [args, want] of cases) expect({ args, got: versionRequest(args) }).toEqual({ args, got: want });
  });
});

describe("parseArgv: strict, every value of a repeated flag", () => {
  const spec = {
    ...commonArgs,
    "work-item": { type: "string", multiple: true, description: "" },
    yes: { type: "boolean", description: "", short: "y" },
    verb: { type: "positional", description: "", required: true },
    rest: { type: "positional", description: "", variadic: true },
  } satisfies ArgsSpec;
  const ok: [string[], Record<string, unknown>][] = [
    [["stop"], { verb: "stop", rest: [], "work-item": [], yes: false, json: false, root: undefined }],
    [["stop", "--work-item", "a", "--work-item=b"], { verb: "stop", "work-item": ["a", "b"] }],
    [["--json", "-y", "stop", "x", "y"], { json: true, yes: true, verb: "stop", rest: ["x", "y"] }],
    [["-qv", "stop"], { quiet: true, verbose: true }],
    [["stop", "--", "--json"], { json: false, rest: ["--json"] }],
    [["--help"], { help: true, verb: undefined }],
  ];
  test.each(ok)("%j", (argv, want) => {
    expect(parseArgv(argv, spec)).toMatchObject(want);
  });
  const bad: [string[], string][] = [
    [["stop", "--bogus"], "unknown or unexpected option: --bogus"],
    [["stop", "-z"], "unknown or unexpected option: -z"],
    [["stop", "--json=yes"], "option --json does not take a value"],
    [["stop", "--root"], "option requires argument: --root"],
    [["stop", "--root", "--json"], '--root needs a value; to pass "--json" as its value, write --root=--json'],
    [["stop", "--work-item", "-a"], '--work-item needs a value; to pass "-a" as its value, write --work-item=-a'],
    [["stop", "--root="], "--root needs a non-empty value"],
    [["stop", "--work-item", "a", "--work-item="], "--work-item needs a non-empty value"],
    // A single-value flag given twice would silently lose the first value.
    [["--root", "/srv/a", "--root=/srv/b", "stop"], "--root was given 2 times; give it once"],
    [[], "missing required argument <verb>"],
  ];
  test.each(bad)("%j is a usage error", (argv, message) => {
    let err: unknown;
    try {
      parseArgv(argv, spec);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toBe(message);
  });
});

describe("writeWhole: stdout written synchronously, nothing lost when the descriptor takes less", () => {
  const doc = `{"text":"caf\u00e9 \u65e5\u672c ${"x".repeat(100)}"}\n`; // multi-byte: bytes != length
  const bytes = Buffer.from(doc);
  test.each([
    ["takes it all", (): number => bytes.length, null],
    ["takes part (a short write)", (): number => 70, bytes.subarray(70)],
    [
      "takes nothing (EAGAIN)",
      (): number => {
        throw Object.assign(new Error("EAGAIN"), { code: "EAGAIN" });
      },
      bytes,
    ],
  ] as const)("the descriptor %s", (_, write, expectRest) => {
    const rests: Buffer[] = [];
    writeWhole(1, doc, (r) => rests.push(Buffer.from(r as string | Uint8Array)), write);
    expect(rests).toEqual(expectRest === null ? [] : [Buffer.from(expectRest)]);
  });
  test("any other error (EPIPE) is the caller's", () => {
    const epipe = (): number => {
      throw Object.assign(new Error("EPIPE"), { code: "EPIPE" });
    };
    expect(() => writeWhole(1, doc, () => 0, epipe)).toThrow("EPIPE");
  });
});

describe("usage errors exit 2, message on stderr, nothing on stdout", () => {
  test.each(builtTools)("loop %s: an unknown flag, a repeated single-value flag, a value for a boolean", async (t) => {
    // `loop serve --root` is repeatable (one loop each): its single-value flag here is --state-root.
    const single = (TOOLS[t]!.args as ArgsSpec).root?.type === "string" && (TOOLS[t]!.args.root as { multiple?: boolean }).multiple ? "--state-root" : "--root";
    for (const [args, says] of [
      [["--no-such-flag"], "no-such-flag"],
      [[single, "/a", `${single}=/b`], `${single} was given 2 times; give it once`],
      [["--json=yes"], "option --json does not take a value"],
    ] as const) {
      // --text: the line for people, with the hint; piped without a format flag: one JSON line.
      const r = await run([t, ...args, "--text"]);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
      expect(r.stderr).toContain(says);
      expect(r.stderr).toContain(`Run \`loop ${t} --help\` for usage.`);
      const piped = await run([t, ...args]);
      expect({ args, code: piped.code, stdout: piped.stdout }).toEqual({ args, code: 2, stdout: "" });
      expect(jsonError(piped.stderr).error).toEqual({ code: "usage", message: expect.stringContaining(says) });
    }
  });

  test.each(builtTools)("loop %s --root <missing dir> or <a file>: the flag is named, exit 2, nothing is created", async (t) => {
    // What each tool needs before it looks at the root (its required arguments).
    const needs: Record<string, string[]> = { backup: [join(tempDir(), "copy.db")], ctl: ["pause"], logs: ["a"], plan: ["a brief"], reset: ["--all", "--yes"] };
    const missing = join(tempDir(), "gone");
    const file = join(tempDir(), "a-file");
    writeFileSync(file, "");
    for (const [root, says] of [
      [missing, `--root ${missing}: no such directory`],
      [file, `--root ${file}: not a directory`],
    ] as const) {
      const r = await run([t, ...(needs[t] ?? []), "--root", root]);
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: "" });
      expect(jsonError(r.stderr).error).toEqual({ code: "usage", message: says });
    }
    expect(existsSync(missing)).toBe(false);
    expect(readFileSync(file, "utf8")).toBe("");
  });

  test("--json and --text together", async () => {
    const repo = gitRepo();
    for (const t of builtTools) {
      const r = await run([t, ...(t === "ctl" ? ["pause"] : t === "logs" ? ["a"] : t === "backup" ? ["copy.db"] : []), "--json", "--text"], { cwd: repo });
      expect({ t, code: r.code, stdout: r.stdout }).toEqual({ t, code: 2, stdout: "" });
      expect(r.stderr).toContain("--json and --text");
    }
    expect(existsSync(join(repo, "loop.json"))).toBe(false);
    expect(existsSync(join(repo, ".loop"))).toBe(false);
  });

  test("an empty value for a string flag", async () => {
    const r = await run(["status", "--root="]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("--root needs a non-empty value");
  });
});

describe("the tool is chosen from the invoked name", () => {
  test("a compiled binary uses argv0 (the link's name), a script uses its own path", () => {
    expect(invokedName("/usr/local/bin/loop-status", "/$bunfs/root/loop", true)).toBe("loop-status");
    expect(invokedName("./dist/loop-replay", "/$bunfs/root/loop", true)).toBe("loop-replay");
    expect(invokedName("loop", "/$bunfs/root/loop", true)).toBe("loop");
    expect(invokedName("bun", "/work/cmd/loop.ts", false)).toBe("loop");
    expect(invokedName("/x/node_modules/.bin/bun", "/work/cmd/loop.ts", false)).toBe("loop");
    expect(invokedName("C:\\bin\\loop-init.exe", "B:/~BUN/root/loop", true)).toMatch(/loop-init$/);
  });

  test("loop-<tool> names select the tool; other names fall back to `loop <tool>`", () => {
    for (const t of CONTRACT_TOOLS) expect(toolFromName(`loop-${t}`)).toBe(t);
    expect(toolFromName("loop")).toBeNull();
    expect(toolFromName("loop-linux-x64")).toBeNull();
    expect(toolFromName("loop-")).toBeNull();
    expect(toolFromName("status")).toBeNull();
  });

  test("isCompiled recognises the embedded file system", () => {
    expect(isCompiled("/$bunfs/root/loop")).toBe(true);
    expect(isCompiled("B:/~BUN/root/loop.exe")).toBe(true);
    expect(isCompiled(import.meta.path)).toBe(false); // a script run from source
    expect(isCompiled()).toBe(false);
  });
});

describe("loop init", () => {
  test("writes loop.json and the state root; refuses to overwrite without --force; --force works", async () => {
    const repo = gitRepo();
    const first = await run(["init", "--json"], { cwd: repo });
    expect(first.code).toBe(0);
    const doc = JSON.parse(first.stdout);
    expect(doc.schema).toBe("loop/init@1");
    expect(doc.overwrote).toBe(false);
    expect(existsSync(join(repo, "loop.json"))).toBe(true);
    expect(existsSync(join(repo, ".loop", "loop.db"))).toBe(true);
    expect(existsSync(join(repo, ".loop", "state.json"))).toBe(true);
    // The template says plainly what landing merge does with a forge (it writes no forge itself).
    const template = readFileSync(join(repo, "loop.json"), "utf8");
    expect(template).toContain("merge merges each passing");
    expect(template).toContain("LOOP_ALLOW_AUTO_MERGE=1");

    writeFileSync(join(repo, "loop.json"), "// mine\n{}\n");
    const again = await run(["init"], { cwd: repo });
    expect(again.code).toBe(2);
    expect(again.stdout).toBe("");
    expect(again.stderr).toContain("--force");
    expect(readFileSync(join(repo, "loop.json"), "utf8")).toBe("// mine\n{}\n");

    const forced = await run(["init", "--force", "--json"], { cwd: repo });
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout).overwrote).toBe(true);
    expect(readFileSync(join(repo, "loop.json"), "utf8")).not.toBe("// mine\n{}\n");
  });

  test("loop.json a directory or a symlink (even dangling), with --force: exit 2, nothing created or written through", async () => {
    const cases: [string, (path: string) => void, string][] = [
      ["a directory", (path) => mkdirSync(path), "a directory or special file"],
      ["a dangling symlink", (path) => symlinkSync(join(tempDir(), "elsewhere.json"), path), "a symbolic link"],
    ];
    for (const [, make, what] of cases) {
      const repo = gitRepo();
      make(join(repo, "loop.json"));
      for (const force of [["--force"], []]) {
        const r = await run(["init", ...force, "--json"], { cwd: repo });
        expect(r.code).toBe(2);
        expect(JSON.parse(r.stderr).error.message).toContain(force.length ? what : "already exists");
        expect(existsSync(join(repo, ".loop"))).toBe(false);
      }
    }
  });

  test("--root names the project; --text prints text", async () => {
    const repo = gitRepo();
    const r = await run(["init", "--root", repo, "--text"], { cwd: tempDir() });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("loop.json");
    expect(() => JSON.parse(r.stdout)).toThrow();
    expect(existsSync(join(repo, "loop.json"))).toBe(true);
  });

  test("refuses a loop nested in another (loop.json or a state root above, up to the git top level) unless --nested; never inside a state root", async () => {
    const repo = gitRepo();
    expect((await run(["init"], { cwd: repo })).code).toBe(0);
    const sub = join(repo, "services", "api");
    mkdirSync(sub, { recursive: true });
    for (const force of [[], ["--force"]]) {
      const r = await run(["init", ...force, "--json"], { cwd: sub });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      const err = JSON.parse(r.stderr).error;
      expect(err.code).toBe("usage");
      expect(err.message).toContain(`is inside another loop: ${join(realpathSync(repo), "loop.json")} defines a loop`);
      expect(err.message).toContain("--nested");
      expect(existsSync(join(sub, "loop.json"))).toBe(false);
      expect(existsSync(join(sub, ".loop"))).toBe(false);
    }
    // A state root without a loop.json above counts too.
    rmSync(join(repo, "loop.json"));
    const again = await run(["init", "--json"], { cwd: sub });
    expect(again.code).toBe(2);
    expect(JSON.parse(again.stderr).error.message).toContain(`${join(realpathSync(repo), ".loop")} is a loop's state root`);
    // --nested: the operator means it.
    expect((await run(["init", "--nested"], { cwd: sub })).code).toBe(0);
    expect(existsSync(join(sub, "loop.json"))).toBe(true);

    // An item's worktree is its own git top level, inside the state root: refused even with --nested.
    git(repo, "worktree", "add", "-q", "-b", "item", join(repo, ".loop", "workspaces", "x"));
    const inside = await run(["init", "--nested", "--json"], { cwd: join(repo, ".loop", "workspaces", "x") });
    expect(inside.code).toBe(2);
    expect(JSON.parse(inside.stderr).error.message).toContain("is inside a loop's state root");
    expect(existsSync(join(repo, ".loop", "workspaces", "x", ".loop"))).toBe(false);

    // A loop.json above the git top level is another project's business: not a nesting.
    const outer = tempDir();
    writeFileSync(join(outer, "loop.json"), "{}\n");
    const inner = join(outer, "repo");
    mkdirSync(inner);
    git(inner, "init", "-q", "-b", "main");
    expect((await run(["init"], { cwd: inner })).code).toBe(0);
  });
});

describe("status and replay", () => {
  test("a FIFO in place of loop.json: loop run exits 2 at once (it never opens it), nothing created", async () => {
    const repo = gitRepo();
    expect(spawnSync("mkfifo", [join(repo, "loop.json")]).status).toBe(0);
    const r = await run(["run", "--json"], { cwd: repo });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr).error.message).toContain("not a regular file");
    expect(existsSync(join(repo, ".loop"))).toBe(false);
  });

  test("an environment error (a file where the state root should be) is io_error: one JSON line in --json mode, the system's message", async () => {
    const repo = gitRepo();
    writeFileSync(join(repo, "blocker"), "");
    const r = await run(["init", "--json", "--state-root", join(repo, "blocker")], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(JSON.parse(r.stderr)).toEqual({ error: { code: "io_error", message: expect.stringContaining(join(repo, "blocker")) } });
  });

  test("the state root is found from a subdirectory, or given by --state-root / LOOP_STATE_ROOT", async () => {
    const repo = gitRepo();
    expect((await run(["init"], { cwd: repo })).code).toBe(0);
    const sub = join(repo, "a", "b");
    mkdirSync(sub, { recursive: true });
    expect((await run(["status"], { cwd: sub })).code).toBe(0);
    const elsewhere = tempDir();
    expect((await run(["status"], { cwd: elsewhere })).code).toBe(2);
    expect((await run(["status", "--state-root", join(repo, ".loop")], { cwd: elsewhere })).code).toBe(0);
    expect((await run(["replay"], { cwd: elsewhere, env: { LOOP_STATE_ROOT: join(repo, ".loop") } })).code).toBe(0);
  });

  test("a repeated --work-item collects every value", async () => {
    const repo = await seededRepo([seededItem("alpha"), seededItem("beta", "github:acme/api#7"), seededItem("gamma"), seededItem("delta")], temps);
    const all = JSON.parse((await run(["status"], { cwd: repo })).stdout);
    expect(all.items.map((i: { id: string }) => i.id)).toEqual(["alpha", "beta", "gamma", "delta"]);
    const r = await run(["status", "--work-item", "gamma", "--work-item", "github:acme/api#0007"], { cwd: repo });
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.items.map((i: { id: string }) => i.id).sort()).toEqual(["beta", "gamma"]);
    const direct = await run(["status", "--work-item=alpha", "--work-item=delta"], { cwd: repo });
    expect(direct.code).toBe(0);
    expect(
      JSON.parse(direct.stdout)
        .items.map((i: { id: string }) => i.id)
        .sort(),
    ).toEqual(["alpha", "delta"]);
  });

  test("an invalid --work-item ref aborts the whole command: exit 2, nothing on stdout", async () => {
    const repo = await seededRepo([seededItem("alpha"), seededItem("beta")], temps);
    for (const bad of ["github:acme/../api#1", "github:acme/api#1 ", "github:acme/api", "-alpha"]) {
      const r = await run(["status", `--work-item=${bad}`, "--work-item", "alpha"], { cwd: repo });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(jsonError(r.stderr).error.code).toBe("invalid_ref");
    }
  });

  test("a --work-item naming no item of the loop: exit 2, nothing on stdout", async () => {
    const repo = await seededRepo([seededItem("alpha")], temps);
    const r = await run(["status", "--work-item", "alpha", "--work-item", "nope"], { cwd: repo });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(jsonError(r.stderr).error.code).toBe("unknown_item");
  });

  test("a missing store: exit 2, a JSON error object on stderr in JSON mode, text otherwise", async () => {
    const repo = gitRepo();
    for (const t of ["status", "replay"]) {
      const j = await run([t, "--json"], { cwd: repo });
      expect(j.code).toBe(2);
      expect(j.stdout).toBe("");
      expect(jsonError(j.stderr).error.code).toBe("missing_store");
      const x = await run([t, "--text"], { cwd: repo });
      expect(x.code).toBe(2);
      expect(x.stdout).toBe("");
      expect(x.stderr).toContain("loop init");
      expect(() => JSON.parse(x.stderr)).toThrow();
    }
    expect(existsSync(join(repo, ".loop"))).toBe(false);
  });

  test("a corrupt store: exit 2", async () => {
    const repo = gitRepo();
    mkdirSync(join(repo, ".loop"));
    writeFileSync(join(repo, ".loop", "loop.db"), "this is not a database, just some text that is long enough".repeat(100));
    for (const t of ["status", "replay"]) {
      const r = await run([t], { cwd: repo });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(jsonError(r.stderr).error.code).toBe("corrupt_store");
    }
  });
});

describe("cmd/registry.ts", () => {
  test("lists exactly the tools of cmd/tools.ts, with their own descriptions", async () => {
    const { DESCRIPTIONS, loadTool } = await import("../../cmd/registry.ts");
    expect(Object.keys(DESCRIPTIONS).sort()).toEqual(Object.keys(TOOLS).sort());
    for (const name of Object.keys(DESCRIPTIONS) as (keyof typeof DESCRIPTIONS)[]) {
      const tool = await loadTool(name);
      expect(tool).toBe(TOOLS[name]!);
      expect(tool.description).toBe(DESCRIPTIONS[name]);
    }
  });
});
