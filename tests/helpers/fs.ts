// Temp directories, small tmpfs mounts, and byte-level snapshots of a directory tree.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh directory under the OS temp dir; remember to pass it to removeDir. */
export function makeTempDir(prefix = "loop-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Collects temp dirs made in a test file and removes them all (call from afterEach/afterAll). */
export class TempDirs {
  private dirs: string[] = [];
  make(prefix?: string): string {
    const d = makeTempDir(prefix);
    this.dirs.push(d);
    return d;
  }
  cleanup(): void {
    for (const d of this.dirs.splice(0)) removeDir(d);
  }
}

export type TreeEntry = { kind: "file"; size: number; sha256: string; mtimeMs: number } | { kind: "dir"; listing: string[]; mtimeMs: number };

/** Every file (size, sha256, mtime) and directory (sorted listing, mtime) under root, by relative path. */
export function snapshotTree(root: string): Record<string, TreeEntry> {
  const out: Record<string, TreeEntry> = {};
  const walk = (rel: string) => {
    const abs = rel ? join(root, rel) : root;
    const st = statSync(abs);
    if (st.isDirectory()) {
      const listing = readdirSync(abs).sort();
      out[rel || "."] = { kind: "dir", listing, mtimeMs: st.mtimeMs };
      for (const name of listing) walk(rel ? join(rel, name) : name);
    } else {
      const bytes = readFileSync(abs);
      out[rel] = { kind: "file", size: st.size, sha256: createHash("sha256").update(bytes).digest("hex"), mtimeMs: st.mtimeMs };
    }
  };
  walk("");
  return out;
}

/** Small tmpfs mounts for tests of a really full disk: only root can mount one, so ask `available()`. */
export class Tmpfs {
  private mounts: string[] = [];
  private probed: boolean | null = null;
  constructor(private readonly temp: TempDirs) {}

  private tryMount(dir: string, size: string): boolean {
    if (typeof process.getuid !== "function" || process.getuid() !== 0) return false;
    mkdirSync(dir, { recursive: true });
    return Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]).exitCode === 0;
  }

  /** Whether a tmpfs can be mounted here (root, with mount permission); probed once. */
  available(): boolean {
    if (this.probed === null) {
      const probe = join(this.temp.make(), "probe");
      this.probed = this.tryMount(probe, "64k");
      if (this.probed) Bun.spawnSync(["umount", "-l", probe]);
    }
    return this.probed;
  }

  /** A fresh tmpfs of `size` (mount's syntax: 64k, 8m), unmounted by cleanup(). */
  mount(size: string): string {
    const dir = join(this.temp.make(), "tmpfs");
    if (!this.tryMount(dir, size)) throw new Error(`cannot mount a tmpfs at ${dir}`);
    this.mounts.push(dir);
    return dir;
  }

  cleanup(): void {
    for (const m of this.mounts.splice(0)) Bun.spawnSync(["umount", "-l", m]);
  }
}
