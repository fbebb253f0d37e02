#!/usr/bin/env bun
// How to give every worktree its dependencies (docs/operations.md#on-a-real-repository): time and
// disk of three ways of filling a fresh checkout's node_modules from what the machine already has.
//   npm ci   `npm ci --prefer-offline` from the shared npm cache (~/.npm, warm): what workspace.setup runs
//   cp -a    a full copy of a prepared node_modules (a reflink where the file system has them: cp --reflink=auto)
//   cp -al   hard links to a prepared node_modules (no data copied; a package written in place is written in both)
// Usage: bun bench/setup-deps.ts [--project <dir with package.json and package-lock.json>] [--runs N]
// Default project: this repository. Prints a markdown table on stdout, progress on stderr.
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : dflt;
};
const project = resolve(opt("--project", join(import.meta.dir, "..")));
const runs = Number(opt("--runs", "3"));

function sh(cmd: string[], cwd: string): void {
  const r = Bun.spawnSync(cmd, { cwd, stdout: "ignore", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString().trim()}`);
}
function du(dir: string): number {
  // Blocks actually taken by this tree alone: -l is not given, so hard links already counted elsewhere are not.
  const r = Bun.spawnSync(["du", "-sk", dir], { stdout: "pipe" });
  return Number(r.stdout.toString().split("\t")[0]) * 1024;
}

const base = mkdtempSync(join(tmpdir(), "loop-bench-deps-"));
try {
  // A prepared tree: the project's package files with node_modules installed once (warms the cache too).
  const prepared = join(base, "prepared");
  for (const f of ["package.json", "package-lock.json"]) cpSync(join(project, f), join(prepared, f));
  process.stderr.write(`preparing ${prepared} (npm ci)\n`);
  sh(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], prepared);
  const ways: [string, (dir: string) => void][] = [
    ["npm ci --prefer-offline", (dir) => sh(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], dir)],
    ["cp -a --reflink=auto", (dir) => sh(["cp", "-a", "--reflink=auto", join(prepared, "node_modules"), join(dir, "node_modules")], dir)],
    ["cp -al (hard links)", (dir) => sh(["cp", "-al", join(prepared, "node_modules"), join(dir, "node_modules")], dir)],
  ];
  const rows: string[] = [];
  for (const [name, fill] of ways) {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < runs; i++) {
      const dir = join(base, `w-${times.length}-${Math.random().toString(36).slice(2)}`);
      for (const f of ["package.json", "package-lock.json"]) cpSync(join(project, f), join(dir, f));
      const t = performance.now();
      fill(dir);
      times.push(performance.now() - t);
      // Measured beside the prepared tree: du counts a hard-linked file once, for the first tree it meets.
      const both = Bun.spawnSync(["du", "-sk", prepared, dir], { stdout: "pipe" }).stdout.toString().trim().split("\n");
      bytes = Number(both[1]!.split("\t")[0]) * 1024;
      const t2 = performance.now();
      rmSync(dir, { recursive: true, force: true });
      times.push(-(performance.now() - t2)); // removal, kept apart below
      process.stderr.write(`${name}: run ${i + 1}\n`);
    }
    const fills = times.filter((x) => x >= 0).sort((a, b) => a - b);
    const removes = times
      .filter((x) => x < 0)
      .map((x) => -x)
      .sort((a, b) => a - b);
    const med = (xs: number[]) => xs[Math.floor(xs.length / 2)]!;
    rows.push(`| ${name} | ${(med(fills) / 1000).toFixed(2)} s | ${(bytes / 2 ** 20).toFixed(0)} MiB | ${(med(removes) / 1000).toFixed(2)} s |`);
  }
  console.log(`node_modules of ${project} (prepared tree ${(du(join(prepared, "node_modules")) / 2 ** 20).toFixed(0)} MiB), median of ${runs}\n`);
  console.log("| way | fill a worktree | its own disk | remove it |\n|---|---|---|---|");
  for (const r of rows) console.log(r);
} finally {
  rmSync(base, { recursive: true, force: true });
}
