// Protected paths as pure data (lib/definition/protect.ts): which changed paths a set of globs
// protects, which globs loop.json may hold, and the built-in ones.
import { describe, expect, test } from "bun:test";
import { builtinProtect, protectedChanges, protectPatternProblem } from "../../lib/definition/protect.ts";

describe("protectedChanges", () => {
  const cases: { name: string; patterns: string[]; changed: string[]; protected: string[] }[] = [
    { name: "an exact file", patterns: ["verify.sh"], changed: ["verify.sh", "src/a.ts"], protected: ["verify.sh"] },
    {
      name: "a folder by name protects what is in it",
      patterns: ["tests"],
      changed: ["tests/a.test.ts", "tests/deep/b.ts", "testsuite.ts"],
      protected: ["tests/a.test.ts", "tests/deep/b.ts"],
    },
    { name: "a folder with a trailing slash", patterns: ["tests/"], changed: ["tests/a.ts", "src/tests.ts"], protected: ["tests/a.ts"] },
    { name: "folder/** protects everything below", patterns: ["tests/**"], changed: ["tests/x/y/z.ts", "src/x.ts"], protected: ["tests/x/y/z.ts"] },
    { name: "* stays in one segment", patterns: ["*.md"], changed: ["README.md", "notes/x.md"], protected: ["README.md"] },
    {
      name: "**/ reaches every depth, the top included",
      patterns: ["**/*.test.ts"],
      changed: ["a.test.ts", "x/y/b.test.ts", "x/c.ts"],
      protected: ["a.test.ts", "x/y/b.test.ts"],
    },
    {
      name: "dot files and folders are matched",
      patterns: [".github/**", "**/.env"],
      changed: [".github/workflows/ci.yml", "svc/.env", ".envrc"],
      protected: [".github/workflows/ci.yml", "svc/.env"],
    },
    {
      name: "braces and classes",
      patterns: ["{ci,build}/*.sh", "v[12].txt"],
      changed: ["ci/run.sh", "build/x.sh", "other/x.sh", "v1.txt", "v3.txt"],
      protected: ["ci/run.sh", "build/x.sh", "v1.txt"],
    },
    { name: "an escaped star is literal", patterns: ["a\\*b"], changed: ["a*b", "axb"], protected: ["a*b"] },
    { name: "case matters", patterns: ["Makefile"], changed: ["makefile"], protected: [] },
    { name: "no pattern protects nothing", patterns: [], changed: ["a"], protected: [] },
    { name: "each path once, in the order given", patterns: ["a", "a/**", "*"], changed: ["b", "a/x", "a/x"], protected: ["b", "a/x"] },
    {
      name: "the old and the new path of a rename are both changes",
      patterns: ["tests/**"],
      changed: ["tests/old.ts", "moved/old.ts"],
      protected: ["tests/old.ts"],
    },
  ];
  for (const c of cases) test(c.name, () => expect(protectedChanges(c.patterns, c.changed)).toEqual(c.protected));
});

describe("protectPatternProblem", () => {
  const cases: [string, string | undefined][] = [
    ["tests/**", undefined],
    ["tests/", undefined],
    ["**/*.test.ts", undefined],
    ["a\\[b", undefined],
    ["", "must not be empty"],
    ["  ", "must not be empty"],
    ["!tests", "must not start with '!': protect only adds paths (the built-in ones always hold)"],
    ["/etc/passwd", "must be relative to the repository's top level (no leading '/')"],
    ["a//b", "must not contain an empty path segment ('//')"],
    ["./tests", "must not contain '.' or '..' segments (paths are as git prints them, from the repository's top level)"],
    ["tests/../x", "must not contain '.' or '..' segments (paths are as git prints them, from the repository's top level)"],
    ["a[bc", "has a '[' without its ']' (write '\\[' for a literal bracket)"],
    ["{a,b", "has a '{' without its '}'"],
    ["a}", "has a '}' without its '{'"],
    ["a\tb", "must not contain control characters"],
  ];
  for (const [pattern, problem] of cases) test(JSON.stringify(pattern), () => expect(protectPatternProblem(pattern)).toBe(problem));
});

describe("builtinProtect", () => {
  test("loop.json at the top and the default state root", () =>
    expect(builtinProtect({ repoTop: "/srv/api", root: "/srv/api", stateRoot: "/srv/api/.loop" })).toEqual(["loop.json", ".loop"]));
  test("a loop in a subfolder", () =>
    expect(builtinProtect({ repoTop: "/srv/api", root: "/srv/api/svc", stateRoot: "/srv/api/svc/.loop" })).toEqual(["svc/loop.json", "svc/.loop"]));
  test("a state root outside the repository protects only loop.json", () =>
    expect(builtinProtect({ repoTop: "/srv/api", root: "/srv/api", stateRoot: "/var/lib/loop/api" })).toEqual(["loop.json"]));
  test("the built-in paths match what git prints", () =>
    expect(
      protectedChanges(builtinProtect({ repoTop: "/r", root: "/r/svc", stateRoot: "/r/svc/.loop" }), ["svc/loop.json", "svc/.loop/state.json", "loop.json"]),
    ).toEqual(["svc/loop.json", "svc/.loop/state.json"]));
});
