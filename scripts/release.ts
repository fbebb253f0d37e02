#!/usr/bin/env bun
// `npm run release [-- --target <name>[,<name>…]]`: one archive per Linux target in dist/release/,
// `loop-<version>-<target>.tar.gz` holding `loop-<version>-<target>/loop`, and SHA256SUMS
// (README.md#install). The targets, names and checks are scripts/release/targets.ts; each binary's
// ELF header is checked against its target here, since most of them cannot run on this machine
// (.ci/run smoke-tests the ones that can).
//
// Why archives rather than bare binaries: gzip halves the download (a binary is ~107 MiB, its
// archive ~50 MiB), the executable bit survives the download, and the file inside is plainly `loop`,
// the name the multi-call binary and its links expect. Archives are reproducible: entries sorted,
// owned by 0:0, dated at the commit, gzip without a timestamp.
//
// Bun cross-compiles by embedding the target's runtime, which it fetches from the npm registry once
// and keeps in ~/.bun/install/cache (about 100 MB per target).
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { VERSION } from "../lib/shared/version.ts";
import { sourceRevision } from "../lib/shared/build-info.ts";
import { compileLoop, ROOT } from "./compile.ts";
import { readElf } from "./release/elf.ts";
import { artifactName, artifactStem, elfMismatches, formatSha256Sums, LINUX_ONLY, selectTargets } from "./release/targets.ts";

const OUT = join(ROOT, "dist", "release");
const USAGE = `Usage: npm run release [-- --target <name>[,<name>…]]

Builds dist/release/loop-${VERSION}-<target>.tar.gz for every target (or those named) and SHA256SUMS.
`;

function die(message: string, code = 1): never {
  console.error(`release: ${message}`);
  process.exit(code);
}

function parseArgs(argv: string[]): string[] {
  const names: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--help" || a === "-h") {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    if (a === "--target" && argv[i + 1] !== undefined) names.push(argv[++i]!);
    else if (a.startsWith("--target=")) names.push(a.slice("--target=".length));
    else die(`unexpected argument ${JSON.stringify(a)}\n${USAGE}`, 2);
  }
  return names;
}

function run(argv: string[], cwd: string): Promise<void> {
  const p = Bun.spawn(argv, { cwd, stdout: "ignore", stderr: "pipe" });
  return p.exited.then(async (code) => {
    if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}: ${(await new Response(p.stderr).text()).trim()}`);
  });
}

const selected = selectTargets(parseArgs(process.argv.slice(2)));
if (!selected.ok) die(selected.error, 2);
// The archives are made with GNU tar's reproducibility flags; the targets themselves are Linux only.
if (process.platform !== "linux") die(`release builds are made on Linux. ${LINUX_ONLY}`, 2);

const started = performance.now();
const rev = sourceRevision(ROOT);
if (rev === null) console.error("release: warning: not a git checkout; the binaries' commit is null");
else if (rev.dirty) console.error(`release: warning: tracked files differ from ${rev.commit.slice(0, 12)}; the binaries say "dirty": true`);
// The archives' entries are dated at the commit, so the same commit gives the same archives.
const epoch = rev ? Number(Bun.spawnSync(["git", "-C", ROOT, "log", "-1", "--format=%ct", rev.commit]).stdout.toString().trim()) || 0 : 0;

// Nothing older may stay beside the new artifacts: a partial or failed release leaves none.
rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const work = mkdtempSync(join(ROOT, "dist", ".release-"));
const rows: { target: string; binary: number; archive: number; seconds: number }[] = [];
try {
  // Each settles to its error or null: one that fails while the next target compiles must not be
  // an unhandled rejection before it is awaited.
  const archiving: Promise<Error | null>[] = [];
  for (const t of selected.targets) {
    const t0 = performance.now();
    const stem = artifactStem(VERSION, t.name);
    const bin = join(work, stem, "loop");
    const built = await compileLoop({ outfile: bin, bunTarget: t.bun, stamp: { commit: rev?.commit ?? null, dirty: rev?.dirty ?? null, target: t.name } });
    for (const log of built.logs) console.error(log);
    if (!built.ok) throw new Error(`compiling for ${t.name} (${t.bun}) failed`);
    const wrong = elfMismatches(t, readElf(readFileSync(bin)));
    if (wrong.length) throw new Error(`${t.name}: the binary is not what the target needs: ${wrong.join("; ")}`);
    chmodSync(bin, 0o755);
    rows.push({ target: t.name, binary: statSync(bin).size, archive: 0, seconds: (performance.now() - t0) / 1000 });
    console.error(`release: compiled ${t.name} in ${rows.at(-1)!.seconds.toFixed(1)} s`);
    // Compressing overlaps the next compile.
    archiving.push(
      run(
        [
          "tar",
          "--sort=name",
          `--mtime=@${epoch}`,
          "--owner=0",
          "--group=0",
          "--numeric-owner",
          "--format=gnu",
          "-I",
          "gzip -n",
          "-cf",
          join(OUT, artifactName(VERSION, t.name)),
          stem,
        ],
        work,
      ).then(
        () => null,
        (err: Error) => err,
      ),
    );
  }
  const failed = (await Promise.all(archiving)).find((e) => e !== null);
  if (failed) throw failed;

  const sums = selected.targets.map((t) => {
    const name = artifactName(VERSION, t.name);
    const bytes = readFileSync(join(OUT, name));
    rows.find((r) => r.target === t.name)!.archive = bytes.length;
    return { name, sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex") };
  });
  writeFileSync(join(OUT, "SHA256SUMS"), formatSha256Sums(sums));
  // The file is checked the way an operator checks it.
  const check = Bun.spawnSync(["sha256sum", "--check", "--strict", "SHA256SUMS"], { cwd: OUT, stdout: "pipe", stderr: "pipe" });
  if (check.exitCode !== 0) throw new Error(`sha256sum --check SHA256SUMS failed: ${check.stdout.toString()}${check.stderr.toString()}`);
} catch (err) {
  rmSync(OUT, { recursive: true, force: true });
  die((err as Error).message);
} finally {
  rmSync(work, { recursive: true, force: true });
}

const mib = (n: number) => (n / 2 ** 20).toFixed(1).padStart(6);
console.log(
  `loop ${VERSION} (${rev ? rev.commit.slice(0, 12) + (rev.dirty ? ", dirty" : "") : "no commit"}): ${rows.length} targets in ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
console.log(`${"target".padEnd(20)} binary MiB  archive MiB  compile s`);
for (const r of rows) console.log(`${r.target.padEnd(20)} ${mib(r.binary)}      ${mib(r.archive)}       ${r.seconds.toFixed(1).padStart(4)}`);
console.log(`${relative(ROOT, OUT)}/: ${rows.map((r) => artifactName(VERSION, r.target)).join(" ")} SHA256SUMS`);
