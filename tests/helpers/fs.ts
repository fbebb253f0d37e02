// Temp directories and byte-level snapshots of a directory tree.
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
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

export type TreeEntry =
  | { kind: "file"; size: number; sha256: string; mtimeMs: number }
  | { kind: "dir"; listing: string[]; mtimeMs: number };

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
