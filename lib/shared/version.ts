// Kept in step with package.json by tests/cmd/cli.test.ts.
export const VERSION = "0.1.0";

/** What a compiled build was made from and for; baked in by scripts/compile.ts. */
export interface BuildStamp {
  /** The git commit the build was made from, or null when it was not built from a git checkout. */
  commit: string | null;
  /** Whether tracked files differed from that commit (null when the commit is unknown). */
  dirty: boolean | null;
  /** A release target (`linux-arm64`, …: scripts/release/targets.ts), or `local` for `npm run build`. */
  target: string;
}

// Replaced by a literal object at compile time (Bun.build's `define`); never defined from source.
declare const __LOOP_BUILD__: BuildStamp | undefined;

/** The stamp of this compiled build, or null when running from source (`bun cmd/loop.ts`). */
export const BUILD: BuildStamp | null = typeof __LOOP_BUILD__ === "undefined" ? null : __LOOP_BUILD__;
