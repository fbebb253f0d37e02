#!/usr/bin/env bun
// bench/startup-probes.ts — what does a compiled binary pay at startup for each import?
//
//   bun bench/startup-probes.ts [--runs 30]
//
// Compiles tiny one-line programs with the same flags as `bun run build` (compile, bytecode, ESM,
// minify) into $TMPDIR/loop-startup-probes/ (not under bench/: tsconfig includes bench/**), then runs them round-robin (so machine noise hits all alike) and
// prints the median and minimum wall time of each, next to the real dist/loop --version. A probe's
// cost is its time minus the "floor" probe (a binary that only prints a line).
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const ROOT = resolve(import.meta.dir, "..");
const DIR = join(tmpdir(), "loop-startup-probes");
const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: "string" } }, strict: true });
const RUNS = Number(values.runs ?? 30);

// Probes live outside the repository, so packages are imported by their resolved paths.
const pkg = (name: string) => JSON.stringify(Bun.resolveSync(name, ROOT));

// Each probe prints the version and references its import only on a branch never taken, so the
// import's module evaluation is all it adds.
const PROBES: Record<string, string | { src: string; flags: string[] }> = {
  floor: `console.log("0.1.0"); export {};`,
  "Bun.write(Bun.stdout)": `await Bun.write(Bun.stdout, "0.1.0\\n"); export {};`,
  "process.stdout.write": `process.stdout.write("0.1.0\\n");`,
  "touch process.stderr": `if (process.argv[2] === "--version") { void process.stderr; console.log("0.1.0"); }`,
  'import "node:tty"': `import * as m from "node:tty"; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  'import "node:util"': `import { parseArgs } from "node:util"; if (process.argv[2] === "x") console.log(parseArgs); console.log("0.1.0");`,
  'import { stdout } from "node:process"': `import { stdout } from "node:process"; if (process.argv[2] === "x") console.log(stdout); console.log("0.1.0");`,
  'import "node:readline"': `import * as m from "node:readline"; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  'import "node:child_process"': `import { spawnSync } from "node:child_process"; if (process.argv[2] === "x") console.log(spawnSync); console.log("0.1.0");`,
  'import "node:fs"': `import { readFileSync } from "node:fs"; if (process.argv[2] === "x") console.log(readFileSync); console.log("0.1.0");`,
  'import "node:os"': `import { hostname } from "node:os"; if (process.argv[2] === "x") console.log(hostname); console.log("0.1.0");`,
  'import "node:path"': `import { join } from "node:path"; if (process.argv[2] === "x") console.log(join); console.log("0.1.0");`,
  'import "bun:sqlite"': `import { Database } from "bun:sqlite"; if (process.argv[2] === "x") console.log(Database); console.log("0.1.0");`,
  'import "valibot"': `import * as v from ${pkg("valibot")}; if (process.argv[2] === "x") console.log(v.string()); console.log("0.1.0");`,
  'import "citty"': `import { renderUsage } from ${pkg("citty")}; if (process.argv[2] === "x") console.log(renderUsage); console.log("0.1.0");`,
  'import "consola"': `import { createConsola } from ${pkg("consola")}; if (process.argv[2] === "x") console.log(createConsola); console.log("0.1.0");`,
  'import "consola/core"': `import { createConsola } from ${pkg("consola/core")}; if (process.argv[2] === "x") console.log(createConsola); console.log("0.1.0");`,
  'await import("consola") (lazy)': `if (process.argv[2] === "x") console.log(await import(${pkg("consola")})); console.log("0.1.0"); export {};`,
  'await import("consola") (lazy) + --splitting': {
    src: `if (process.argv[2] === "x") console.log(await import(${pkg("consola")})); console.log("0.1.0"); export {};`,
    flags: ["--splitting"],
  },
  'import "@clack/prompts"': `import * as c from ${pkg("@clack/prompts")}; if (process.argv[2] === "x") console.log(c); console.log("0.1.0");`,
  "import lib/shared/cli.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "shared", "cli.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import lib/log/events.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "log", "events.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import lib/log/reducer.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "log", "reducer.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import lib/log/materialize.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "log", "materialize.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import lib/log/snapshot.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "log", "snapshot.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import lib/supervisor/liveness.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "step", "liveness.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import lib/definition/selectors.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "definition", "selectors.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import lib/log/store.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "log", "store.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import lib/reports/status.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "reports", "status.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import lib/reports/replay.ts": `import * as m from ${JSON.stringify(join(ROOT, "lib", "reports", "replay.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import cmd/loop-status.ts": `import * as m from ${JSON.stringify(join(ROOT, "cmd", "loop-status.ts"))}; if (process.argv[2] === "x") console.log(m); console.log("0.1.0");`,
  "import cmd/tools.ts (every tool)": `import { TOOLS } from ${JSON.stringify(join(ROOT, "cmd", "tools.ts"))}; if (process.argv[2] === "x") console.log(TOOLS); console.log("0.1.0");`,
};

mkdirSync(DIR, { recursive: true });
const bins: [string, string[]][] = [];
let i = 0;
for (const [name, probe] of Object.entries(PROBES)) {
  const { src, flags } = typeof probe === "string" ? { src: probe, flags: [] as string[] } : probe;
  const file = join(DIR, `p${i}.ts`);
  const out = join(DIR, `p${i}`);
  i++;
  writeFileSync(file, src + "\n");
  const r = Bun.spawnSync([process.execPath, "build", "--compile", "--bytecode", "--format=esm", "--minify", ...flags, file, "--outfile", out], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) {
    process.stderr.write(`probe ${name}: build failed: ${r.stderr.toString().slice(0, 300)}\n`);
    continue;
  }
  bins.push([name, [out, "--version"]]);
}
const dist = join(ROOT, "dist", "loop");
if (existsSync(dist)) bins.push(["dist/loop --version", [dist, "--version"]]);

const times = new Map<string, number[]>(bins.map(([n]) => [n, []]));
for (let r = 0; r < RUNS; r++)
  for (const [name, cmd] of bins) {
    const t = performance.now();
    Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
    times.get(name)!.push(performance.now() - t);
  }
const stat = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)]!, min: s[0]! };
};
const floor = stat(times.get("floor")!);
process.stdout.write(
  `compiled probes, ${RUNS} round-robin runs each (Bun ${Bun.version})\n\n| probe | median ms | min ms | min − floor |\n| --- | ---: | ---: | ---: |\n`,
);
for (const [name] of bins) {
  const s = stat(times.get(name)!);
  process.stdout.write(`| ${name} | ${s.median.toFixed(1)} | ${s.min.toFixed(1)} | ${name === "floor" ? "" : (s.min - floor.min).toFixed(1)} |\n`);
}
