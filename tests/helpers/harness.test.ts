// The test harness itself: the environment scrubber covers every variable loop reads, and the
// shared git helper cannot be sent elsewhere by the caller's environment. That a tool run in
// process answers exactly as the same tool run as a real process: harness.e2e.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { INHERITED, isScrubbed, STEERING, TEST_DEFAULTS, testEnv } from "./env.ts";
import { git, makeRepo } from "./repo.ts";
import { REPO } from "./cli.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function sources(dir: string): string[] {
  return readdirSync(join(REPO, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join(dir, f));
}

/** Every environment variable lib/ and cmd/ name: `env.NAME`, `env["NAME"]`, and any LOOP_NAME. */
function variablesRead(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of [...sources("lib"), ...sources("cmd")]) {
    const text = readFileSync(join(REPO, file), "utf8");
    for (const m of text.matchAll(/\benv\.([A-Z][A-Z0-9_]*)\b|\benv\[["']([A-Z][A-Z0-9_]*)["']\]|\b(LOOP_[A-Z0-9_]+)\b/g)) {
      const name = m[1] ?? m[2] ?? m[3]!;
      if (!found.has(name)) found.set(name, file);
    }
  }
  return found;
}

/** Set variables in this process's environment for the length of `fn`, then restore them. */
function withProcessEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe("the environment of test commands (tests/helpers/env.ts)", () => {
  test("every variable lib/ and cmd/ read is scrubbed, or kept from the caller on purpose", () => {
    const read = variablesRead();
    // The scan finds what it must, so an empty result cannot pass for a clean one.
    for (const known of ["LOOP_STATE_ROOT", "LOOP_ACTOR", "LOOP_FAILPOINT", "LOOP_KILL_GRACE_MS", "LOOP_TMUX_SOCKET", "PATH", "NO_COLOR"])
      expect(read.has(known)).toBe(true);
    const undecided = [...read].filter(([name]) => !isScrubbed(name) && !Object.hasOwn(INHERITED, name)).map(([name, file]) => `${name} (${file})`);
    expect(undecided).toEqual([]);
    // Nothing is kept on purpose that loop no longer reads.
    expect(Object.keys(INHERITED).filter((name) => !read.has(name))).toEqual([]);
  });

  test("testEnv drops every LOOP_* and STEERING variable of the caller, keeps the rest, then applies defaults and extras", () => {
    const caller = {
      LOOP_STATE_ROOT: "/elsewhere",
      LOOP_SOMETHING_NEW: "1",
      TMUX: "/tmp/tmux-0/default,1,0",
      FORCE_COLOR: "3",
      GIT_DIR: "/elsewhere/.git",
      LOOP_HARNESS_KEEP_ME: "x",
    };
    const env = withProcessEnv({ ...caller, HARNESS_UNRELATED: "kept" }, () => testEnv({ LOOP_ACTOR: "me@test", NO_COLOR: undefined }));
    for (const k of Object.keys(caller)) expect(env[k]).toBeUndefined();
    // Scrubbed, then set again by the defaults: NO_COLOR (removed here by the extra) and XDG_STATE_HOME.
    for (const k of STEERING) if (k !== "NO_COLOR" && k !== "XDG_STATE_HOME") expect(env[k]).toBeUndefined();
    expect(env.XDG_STATE_HOME).toBe(TEST_DEFAULTS.XDG_STATE_HOME!);
    expect(env.HARNESS_UNRELATED).toBe("kept");
    expect(env.PATH).toBe(process.env.PATH!);
    expect(env.LOOP_KILL_GRACE_MS).toBe(TEST_DEFAULTS.LOOP_KILL_GRACE_MS!);
    expect(env.LOOP_ACTOR).toBe("me@test");
    expect("NO_COLOR" in env).toBe(false);
    expect(testEnv().NO_COLOR).toBe("1");
  });

  test("a GIT_DIR or GIT_WORK_TREE in the caller's environment (a git hook) does not reach the tests' git", () => {
    const { dir, root } = withProcessEnv({ GIT_DIR: join(REPO, ".git"), GIT_WORK_TREE: REPO }, () => makeRepo("loop-harness-"));
    dirs.push(dir);
    expect(git(root, "rev-parse", "--show-toplevel")).toBe(root);
    expect(git(root, "log", "--format=%s")).toBe("initial");
    expect(git(root, "config", "commit.gpgsign")).toBe("false");
    expect(git(root, "log", "--format=%an <%ae>")).toBe("loop test <test@loop.invalid>");
  });
});
