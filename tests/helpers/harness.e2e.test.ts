// A tool run in process (runInProcess, tests/helpers/cli.ts) answers exactly as the same tool run
// as a real process: what lets the fast tier test usage, formats and exit codes without a spawn.
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { makeRepo } from "./repo.ts";
import { runInProcess, runLoopSync } from "./cli.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("runInProcess answers as the real process does", () => {
  const { dir, root } = makeRepo("loop-harness-parity-");
  dirs.push(dir);
  const cases: string[][] = [
    ["status", "--json"], // no store yet: missing_store as JSON on stderr
    ["status", "--text"],
    ["status", "--no-such-flag"],
    ["status", "--root", "a", "--root", "b"],
    ["replay", "--json", "--text"],
    ["ctl", "pause", "--json", "--yes", "--dry-run"],
    ["ctl", "frobnicate", "--json"],
    ["run", "--interval", "5s"],
    ["init", "--help"],
    ["status", "--version"],
    ["init", "--json", "--state-root", join(dir, "state")],
    ["status", "--json", "--state-root", join(dir, "state")],
    ["replay", "--text", "--state-root", join(dir, "state")],
  ];
  const codes = new Set<number | null>();
  for (const argv of cases)
    test(`loop ${argv.join(" ").replace(dir, "<tmp>")}`, async () => {
      const real = runLoopSync(argv, { cwd: root });
      // A second `init` would find the first one's loop.json: start it from the same nothing.
      if (argv[0] === "init" && argv.includes("--state-root")) {
        rmSync(join(root, "loop.json"));
        rmSync(join(dir, "state"), { recursive: true });
      }
      const inProcess = await runInProcess(argv, { cwd: root });
      expect(inProcess).toEqual({ code: real.code!, stdout: real.stdout, stderr: real.stderr });
      codes.add(real.code);
    });
  test("the cases compared both successes and usage errors", () => {
    expect([...codes].sort()).toEqual([0, 2]);
  });
});
