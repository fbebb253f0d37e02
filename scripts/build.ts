#!/usr/bin/env bun
// `bun run build`: compile ONE multi-call executable dist/loop from cmd/loop.ts and link every
// tool name to it (README.md, Build). The tool is chosen at run time from the invoked name
// (see cmd/loop.ts), so `dist/loop-status` is `dist/loop status`.
//
// The compiler's flags: scripts/compile.ts. loop runs on Linux only (docs/operations.md#installing-and-upgrading):
// on another system this refuses, as `npm run release` refuses darwin and windows targets.
import { lstatSync, mkdirSync, rmSync, statSync, symlinkSync } from "node:fs";
import { join, relative } from "node:path";
import { spawnSync } from "node:child_process";
import { CONTRACT_TOOLS } from "../cmd/loop.ts";
import { VERSION } from "../lib/shared/version.ts";
import { sourceRevision } from "../lib/shared/build-info.ts";
import { compileLoop, ROOT as root } from "./compile.ts";
import { LINUX_ONLY } from "./release/targets.ts";

const dist = join(root, "dist");
const entry = join(root, "cmd", "loop.ts");
const outfile = join(dist, "loop");
const links = CONTRACT_TOOLS.map((t) => `loop-${t}`);

function removeIfPresent(path: string) {
  try {
    lstatSync(path);
  } catch {
    return;
  }
  rmSync(path, { force: true });
}

mkdirSync(dist, { recursive: true });
// A failed build must not leave an older binary behind that CI would smoke-test instead.
for (const name of ["loop", ...links]) removeIfPresent(join(dist, name));

if (process.platform !== "linux") {
  console.error(`build: ${LINUX_ONLY} Not building on ${process.platform}; from source, \`bun cmd/loop.ts\` still runs for development.`);
  process.exit(2);
}

const started = performance.now();
const rev = sourceRevision(root);
const result = await compileLoop({ outfile, stamp: { commit: rev?.commit ?? null, dirty: rev?.dirty ?? null, target: "local" } });
for (const log of result.logs) console.error(log);
if (!result.ok) {
  console.error(`build: compiling ${relative(root, entry)} failed`);
  process.exit(1);
}

for (const name of links) symlinkSync("loop", join(dist, name)); // relative: dist/ moves as a whole

// Sanity check: the binary runs and a link selects its tool.
const probe = spawnSync(join(dist, "loop-status"), ["--version"], { encoding: "utf8" });
if (probe.status !== 0 || probe.stdout.trim() !== VERSION) {
  console.error(`build: dist/loop-status --version gave exit ${probe.status}, stdout ${JSON.stringify(probe.stdout)}, stderr ${JSON.stringify(probe.stderr)}`);
  process.exit(1);
}

const mib = (statSync(outfile).size / 2 ** 20).toFixed(1);
console.log(`built ${relative(root, outfile)} (loop ${VERSION}, ${mib} MiB) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
console.log(`links: ${links.map((l) => `dist/${l}`).join(" ")} -> loop`);
