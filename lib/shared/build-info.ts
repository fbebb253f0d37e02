// What this `loop` is, for `--version --json` (docs/cli/README.md#version): the version, the commit
// and target baked into a compiled build (scripts/compile.ts), or, from source, the commit of the
// checkout it runs from. Loaded only when asked: it may run git and opens an in-memory SQLite.
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { Database } from "bun:sqlite";
import { BUILD, VERSION, type BuildStamp } from "./version.ts";

interface VersionDocument {
  schema: "loop/version@1";
  version: string;
  /** The git commit it was built from (or, from source, the checkout's HEAD); null when unknown. */
  commit: string | null;
  dirty: boolean | null;
  /** A release target (`linux-x64`, …), `local` (`npm run build`), or `source` (`bun cmd/loop.ts`). */
  target: string;
  /** The running system, `<os>-<arch>` as the runtime sees it (`linux-arm64`). */
  platform: string;
  bun: string;
  /** The SQLite compiled into the runtime, which writes `loop.db`. */
  sqlite: string;
}

/** The source tree this module belongs to (lib/shared/ → the repository root). */
const SOURCE_ROOT = resolve(import.meta.dir, "..", "..");

/**
 * The commit a source tree is at and whether tracked files differ from it, or null when `dir` is
 * not the top of a git checkout (a tarball of the sources inside some other repository must not
 * report that repository's commit). Never takes git's optional locks: reading is all it does.
 */
export function sourceRevision(dir: string): { commit: string; dirty: boolean } | null {
  // A GIT_DIR or GIT_WORK_TREE from a hook that runs loop must not point git at another repository.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GIT_")));
  const git = (args: string[]) => {
    try {
      const r = Bun.spawnSync(["git", "--no-optional-locks", "-C", dir, ...args], { env, stdout: "pipe", stderr: "ignore", stdin: "ignore" });
      return r.exitCode === 0 ? r.stdout.toString() : null;
    } catch {
      return null; // no git on PATH
    }
  };
  const [top, commit] = (git(["rev-parse", "--show-toplevel", "HEAD"]) ?? "").split("\n");
  if (!top || !commit || !/^[0-9a-f]{40,64}$/.test(commit)) return null;
  try {
    if (realpathSync(top) !== realpathSync(dir)) return null;
  } catch {
    return null;
  }
  const status = git(["status", "--porcelain", "--untracked-files=no"]);
  return { commit, dirty: status === null ? true : status.trim() !== "" };
}

/** The document from a build's stamp (null: from source, with the checkout's revision if any). */
export function versionDocument(stamp: BuildStamp | null, source: () => { commit: string; dirty: boolean } | null, sqlite: string): VersionDocument {
  const rev = stamp ?? { ...(source() ?? { commit: null, dirty: null }), target: "source" };
  return {
    schema: "loop/version@1",
    version: VERSION,
    commit: rev.commit,
    dirty: rev.dirty,
    target: rev.target,
    platform: `${process.platform}-${process.arch}`,
    bun: Bun.version,
    sqlite,
  };
}

/** This process's document. */
export function currentVersionDocument(): VersionDocument {
  const db = new Database(":memory:");
  try {
    const { v } = db.query("SELECT sqlite_version() AS v").get() as { v: string };
    return versionDocument(BUILD, () => sourceRevision(SOURCE_ROOT), v);
  } finally {
    db.close();
  }
}
