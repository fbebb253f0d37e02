#!/usr/bin/env bun
// `npm run test:fast` / `npm run test:e2e`: one tier of the test suite (README.md, Development).
// A test file is end-to-end when its name ends in `.e2e.test.ts` (it spawns `bun cmd/loop.ts`);
// every other `*.test.ts` under tests/ is the fast tier (pure and in-process tests), which
// tests/test-tiers.test.ts holds to that rule. The files are found on disk, not in git, so a
// test file not yet committed is in its tier the moment it exists. `npm test` runs both.
//
//   bun scripts/test-tier.ts fast|e2e [bun test options…]
import { Glob } from "bun";
import { resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "..");
export const TIERS = ["fast", "e2e"] as const;
export type Tier = (typeof TIERS)[number];

/** Whether a test file (a path relative to the repository) is end-to-end, by its name alone. */
export function isE2e(path: string): boolean {
  return path.endsWith(".e2e.test.ts");
}

/** Every test file under tests/ (relative paths, sorted). */
export function testFiles(root = ROOT): string[] {
  // Never a dependency's own tests (the agent CLIs installed under tests/agents/node_modules bring some), as `bun test` skips them.
  return [...new Glob("tests/**/*.test.ts").scanSync({ cwd: root, onlyFiles: true })].filter((f) => !f.split("/").includes("node_modules")).sort();
}

/** The test files of one tier. */
export function tierFiles(tier: Tier, files: string[]): string[] {
  return files.filter((f) => isE2e(f) === (tier === "e2e"));
}

if (import.meta.main) {
  const [tier, ...rest] = process.argv.slice(2);
  if (!TIERS.includes(tier as Tier)) {
    process.stderr.write(`usage: bun scripts/test-tier.ts ${TIERS.join("|")} [bun test options…] (got ${JSON.stringify(tier ?? null)})\n`);
    process.exit(2);
  }
  // Relative paths are prefixed with ./ so bun reads them as paths, never as name filters.
  const files = tierFiles(tier as Tier, testFiles()).map((f) => `./${f}`);
  const proc = Bun.spawnSync([process.execPath, "test", "--timeout", "120000", ...rest, ...files], {
    cwd: ROOT,
    stdio: ["inherit", "inherit", "inherit"],
    env: process.env,
  });
  process.exit(proc.exitCode ?? 1);
}
