// Small file helpers shared by the effectful modules.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync } from "node:fs";

/** Write a file so that readers see either the old or the new content, never a torn one. */
export function writeFileAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, "w");
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

export function readTextOrNull(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

export function readJsonOrNull<T = any>(path: string): T | null {
  const t = readTextOrNull(path);
  if (t === null) return null;
  try {
    return JSON.parse(t) as T;
  } catch {
    return null;
  }
}

/** The last `lines` lines of a text, at most `maxChars` characters. */
export function tail(text: string, lines = 30, maxChars = 4000): string {
  const parts = text.replace(/\s+$/, "").split("\n");
  let out = parts.slice(-lines).join("\n");
  if (out.length > maxChars) out = out.slice(out.length - maxChars);
  return out;
}
