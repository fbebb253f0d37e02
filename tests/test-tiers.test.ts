// The two tiers of the suite (README.md, Development): `npm run test:fast` runs every test file
// not named `*.e2e.test.ts`, so none of those may spawn `bun cmd/loop.ts`; what spawns it is named
// end-to-end. Read from the sources (tests/helpers/spawn-scan.ts), so a new test file is held to it
// the moment it exists, and planted files prove the reading catches each way of spawning.
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isE2e, testFiles, tierFiles } from "../scripts/test-tier.ts";
import { REPO } from "./helpers/cli.ts";
import { spawningExports, spawnsOf } from "./helpers/spawn-scan.ts";

function helperSources(): Map<string, string> {
  const files = [...new Glob("tests/**/*.ts").scanSync({ cwd: REPO, onlyFiles: true })].filter(
    (f) => !f.endsWith(".test.ts") && !f.split("/").includes("node_modules"),
  );
  return new Map(files.map((f) => [f, readFileSync(join(REPO, f), "utf8")]));
}

/** What the helpers export that spawns the entry point: read once for the file (parsing takes a while). */
let helpersRead: Map<string, Set<string>> | null = null;
const helperSpawns = () => (helpersRead ??= spawningExports(helperSources()));

describe("the tiers", () => {
  test("every test file is in exactly one tier, by its name", () => {
    const all = testFiles();
    const fast = tierFiles("fast", all);
    const e2e = tierFiles("e2e", all);
    expect(fast.length + e2e.length).toBe(all.length);
    expect(fast.some(isE2e)).toBe(false);
    expect(e2e.every(isE2e)).toBe(true);
    expect(all).toContain("tests/test-tiers.test.ts");
    expect(fast).toContain("tests/test-tiers.test.ts");
  });

  test("no file of the fast tier spawns bun cmd/loop.ts (name it *.e2e.test.ts, or run the tool in process)", () => {
    const spawning = helperSpawns();
    const found = tierFiles("fast", testFiles()).flatMap((f) => spawnsOf(f, readFileSync(join(REPO, f), "utf8"), spawning));
    expect(found).toEqual([]);
  });

  test("the helpers that spawn the entry point are found, and those that do not are not", () => {
    const spawning = helperSpawns();
    const cli = spawning.get("tests/helpers/cli.ts")!;
    for (const name of ["LOOP", "spawnLoop", "runLoop", "runLoopSync"]) expect(cli).toContain(name);
    for (const name of ["runInProcess", "REPO", "BUN", "parseJson", "finish"]) expect(cli).not.toContain(name);
    const harness = spawning.get("tests/helpers/project.ts")!;
    for (const name of ["LOOP", "spawnLoop", "Project", "scenario", "loop", "countingRunner", "LoopUnderTest", "checkDrained"]) expect(harness).toContain(name);
    for (const name of ["git", "makeRepo", "cleanupDir", "shq", "demoDefinition", "pollUntil", "finish", "REPO"]) expect(harness).not.toContain(name);
  });
});

describe("planted files: each way of spawning is caught", () => {
  const helpers = new Map([
    [
      "tests/helpers/entry.ts",
      `import { join } from "node:path";\n// cmd/loop.ts in a comment is no spawn\nexport const ENTRY = join(ROOT, "cmd", "loop.ts");\nexport const ROOT = "/r";\n`,
    ],
    [
      "tests/helpers/runs.ts",
      `import { ENTRY as E, ROOT } from "./entry.ts";\n/** Runs bun cmd/loop.ts. */\nexport function go(args: string[]) {\n  return Bun.spawn(["bun", E, ...args]);\n}\nexport class Thing {\n  run() {\n    return go([]);\n  }\n}\nexport function quiet() {\n  return ROOT;\n}\nexport { E };\nexport { ENTRY as AGAIN } from "./entry.ts";\n`,
    ],
  ]);
  const spawning = spawningExports(helpers);
  const scan = (text: string) => spawnsOf("tests/x/planted.test.ts", text, spawning);

  test.each([
    ["the entry named in a spawn", `test("t", () => Bun.spawnSync(["bun", "cmd/loop.ts", "status"]));`],
    ["the entry joined from its parts", `const e = join(REPO, "cmd", "loop-status.ts");`],
    ["a helper's entry constant", `import { ENTRY } from "../helpers/entry.ts";`],
    ["a helper that spawns it", `import { go } from "../helpers/runs.ts";`],
    ["a helper's class whose method spawns it, renamed", `import { Thing as T } from "../helpers/runs.ts";`],
    ["a re-export of the constant under its import name", `import { E } from "../helpers/runs.ts";`],
    ["a re-export from the module", `import { AGAIN } from "../helpers/runs.ts";`],
  ])("%s", (_what, text) => {
    expect(scan(text).length).toBeGreaterThan(0);
  });

  test.each([
    ["a helper that spawns nothing", `import { quiet, ROOT } from "../helpers/runs.ts";`],
    ["a type-only import", `import type { Thing } from "../helpers/runs.ts";\nimport { type go, quiet } from "../helpers/runs.ts";`],
    ["an import of the entry module for its exports", `import { CONTRACT_TOOLS } from "../../cmd/loop.ts";`],
    ["the entry in a comment", `// spawned as bun cmd/loop.ts elsewhere\n/* cmd/loop.ts */`],
  ])("not: %s", (_what, text) => {
    expect(scan(text)).toEqual([]);
  });
});
