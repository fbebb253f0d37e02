// Small file helpers shared by the effectful modules.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";

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
  const out = parts.slice(-lines).join("\n");
  return out.length > maxChars ? sliceText(out, out.length - maxChars) : out;
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/**
 * `text.slice(start, end)` that never cuts a surrogate pair in half (it keeps the pair out). Half a
 * pair is not text: canonical JSON refuses it, so an event carrying it could never be recorded and
 * the item would be stuck. Use it wherever text from outside (agent output, prompts) is cut.
 */
export function sliceText(text: string, start: number, end = text.length): string {
  if (start > 0 && isLow(text.charCodeAt(start)) && isHigh(text.charCodeAt(start - 1))) start++;
  if (end < text.length && isHigh(text.charCodeAt(end - 1)) && isLow(text.charCodeAt(end))) end--;
  return text.slice(start, end);
}

export type FileRead = { kind: "absent" } | { kind: "error"; message: string } | { kind: "ok"; bytes: Buffer };

/**
 * A file the read verbs check, as bytes. Only a regular file is read: a FIFO or a device in its
 * place (`/dev/zero`) would block or never end, so it is reported as an error instead.
 */
export function readRegularFile(path: string): FileRead {
  try {
    if (!statSync(path).isFile()) return { kind: "error", message: "not a regular file" };
    return { kind: "ok", bytes: readFileSync(path) };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return e.code === "ENOENT" ? { kind: "absent" } : { kind: "error", message: e.message };
  }
}
