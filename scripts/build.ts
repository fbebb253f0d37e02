#!/usr/bin/env bun
// `bun run build`: compile ONE multi-call executable dist/loop from cmd/loop.ts and link every
// tool name to it (README.md, Build). The tool is chosen at run time from the invoked name
// (see cmd/loop.ts), so `dist/loop-status` is `dist/loop status`.
//
// Flags, as `bun build` spells them: --compile --bytecode --format=esm --minify
// --no-compile-autoload-dotenv --no-compile-autoload-bunfig. --bytecode needs ESM to be explicit
// (it defaults to CJS), and a multi-entry --compile silently builds only the first entry, so there
// is exactly one entry point. Autoloading is off so a server's stray .env or bunfig.toml in the
// cwd can never change what the binary does.
import { existsSync, lstatSync, mkdirSync, rmSync, statSync, symlinkSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { CONTRACT_TOOLS } from "../cmd/loop.ts";
import { VERSION } from "../lib/shared/version.ts";

const root = resolve(import.meta.dir, "..");
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

const started = performance.now();
// The compiler writes a temporary `.<hash>.bun-build` file in the cwd: keep it inside dist/
// (git-ignored) so an interrupted or concurrent build never leaves it in the working tree.
process.chdir(dist);
const result = await Bun.build({
  // The worker thread of `loop replay` is an entry point of its own: a compiled binary starts a
  // Worker only from an embedded entry ("./lib/log/integrity-worker.ts", see lib/reports/replay.ts).
  entrypoints: [entry, join(root, "lib", "log", "integrity-worker.ts")],
  target: "bun",
  format: "esm",
  bytecode: true,
  minify: true,
  // Chunks for the dynamically imported tools: a compiled binary loads all bytecode of its entry
  // chunk at start-up, evaluated or not, so `loop --version` pays only for what it uses
  // (measured: 44 ms as one chunk, 34 ms split; see bench/README.md).
  splitting: true,
  compile: {
    outfile,
    autoloadDotenv: false,
    autoloadBunfig: false,
    autoloadTsconfig: false,
    autoloadPackageJson: false,
  },
});
for (const log of result.logs) console.error(String(log));
if (!result.success || !existsSync(outfile)) {
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
