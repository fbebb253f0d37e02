// Compile the one multi-call executable (cmd/loop.ts), for this machine (scripts/build.ts) or for a
// release target (scripts/release.ts), with the build's stamp baked in (lib/shared/version.ts).
//
// Flags, as `bun build` spells them: --compile --bytecode --format=esm --minify
// --no-compile-autoload-dotenv --no-compile-autoload-bunfig. --bytecode needs ESM to be explicit
// (it defaults to CJS), and a multi-entry --compile silently builds only the first entry, so there
// is exactly one entry point. Autoloading is off so a server's stray .env or bunfig.toml in the
// cwd can never change what the binary does.
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { BuildStamp } from "../lib/shared/version.ts";

export const ROOT = resolve(import.meta.dir, "..");
const ENTRY = join(ROOT, "cmd", "loop.ts");

export interface CompileOptions {
  outfile: string;
  stamp: BuildStamp;
  /** Bun's name of the runtime to embed (`bun-linux-arm64`); omitted: the running Bun's own. */
  bunTarget?: Bun.Build.CompileTarget;
}

/** Compile; returns the compiler's messages (warnings included) and whether a binary was written. */
export async function compileLoop(o: CompileOptions): Promise<{ ok: boolean; logs: string[] }> {
  mkdirSync(dirname(o.outfile), { recursive: true });
  // The compiler writes a temporary `.<hash>.bun-build` file in the cwd: keep it beside the output
  // (git-ignored) so an interrupted or concurrent build never leaves it in the working tree.
  const cwd = process.cwd();
  process.chdir(dirname(o.outfile));
  try {
    const result = await Bun.build({
      // The worker thread of `loop replay` is an entry point of its own: a compiled binary starts a
      // Worker only from an embedded entry ("./lib/log/integrity-worker.ts", see lib/reports/replay.ts).
      entrypoints: [ENTRY, join(ROOT, "lib", "log", "integrity-worker.ts")],
      target: "bun",
      format: "esm",
      bytecode: true,
      minify: true,
      // Chunks for the dynamically imported tools: a compiled binary loads all bytecode of its entry
      // chunk at start-up, evaluated or not, so `loop --version` pays only for what it uses
      // (measured: 44 ms as one chunk, 34 ms split; see bench/README.md).
      splitting: true,
      define: { __LOOP_BUILD__: JSON.stringify(o.stamp) },
      compile: {
        outfile: o.outfile,
        ...(o.bunTarget ? { target: o.bunTarget } : {}),
        autoloadDotenv: false,
        autoloadBunfig: false,
        autoloadTsconfig: false,
        autoloadPackageJson: false,
      },
    });
    return { ok: result.success && existsSync(o.outfile), logs: result.logs.map(String) };
  } finally {
    process.chdir(cwd);
  }
}
