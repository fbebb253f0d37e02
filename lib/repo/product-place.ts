// Where what `workspace.setup` made names its checkout (docs/operations.md#setup-once-per-lockfile).
// A virtualenv writes its folder's absolute path into its scripts' `#!` lines, its activate scripts,
// and an editable install's `.pth` and finder module; such products would run the wrong checkout's
// code (or nothing) at another item's path. So, once, right after setup ran, loop finds every file of
// the products that names the checkout's path: in a virtualenv (a folder holding `pyvenv.cfg`) every
// file is read (compiled `.pyc` files aside: the path in them is only what a traceback prints);
// elsewhere a script's `#!` line. A text file naming it can be moved: when the products are taken to
// another checkout (a copy, or the spare checkout renamed), loop writes each of those files again
// with the new path. What cannot be moved (a link, or a binary file, naming the path) makes the
// products bound to their place: they are not kept, and setup runs in each checkout.
// Everything is read without following a link or blocking on a FIFO, and never run.
import { chmodSync, closeSync, constants, fstatSync, openSync, readlinkSync, readSync, renameSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { ProductStamps } from "./products.ts";

/** The files of the products naming the checkout's path `dir`, relative to it: rewritten when they move. */
export interface PlaceBinding {
  dir: string;
  files: string[];
}

/** A venv's file read whole at most (a larger one is taken as binary: bound). */
const MAX_TEXT = 16 * 2 ** 20;

function readNoFollow(abs: string, max: number): Buffer | null {
  let fd: number;
  try {
    fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const size = Math.min(fstatSync(fd).size, max);
    const buf = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const n = readSync(fd, buf, got, size - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** Whether `buf` names `dir` as a path: followed by a separator or the end of a word, not as the start of a longer name. */
function namesPath(buf: Buffer, dir: Buffer): boolean {
  for (let i = buf.indexOf(dir); i !== -1; i = buf.indexOf(dir, i + 1)) {
    const next = buf[i + dir.length];
    if (next === undefined || !/[A-Za-z0-9._-]/.test(String.fromCharCode(next))) return true;
  }
  return false;
}

/**
 * The files of `stamps`' entries (relative to `dir`) that name `dir`, or why the products cannot move
 * from it (`bound`): a link naming it, a binary file in a virtualenv naming it, or a non-text script.
 */
export function placeBinding(dir: string, stamps: ProductStamps): { binding: PlaceBinding } | { bound: string } {
  const needle = Buffer.from(dir);
  const venvs = Object.keys(stamps)
    .filter((rel) => basename(rel) === "pyvenv.cfg")
    .map((rel) => `${dirname(rel)}/`);
  const files: string[] = [];
  for (const [rel, s] of Object.entries(stamps)) {
    const abs = join(dir, rel);
    if (s.startsWith("l:")) {
      if (readlinkSync(abs).includes(dir)) return { bound: `${rel} (a link into the checkout)` };
      continue;
    }
    if (!s.startsWith("f:")) continue;
    const inVenv = venvs.some((v) => rel.startsWith(v));
    if (inVenv) {
      if (rel.endsWith(".pyc")) continue;
      const buf = readNoFollow(abs, MAX_TEXT + 1);
      if (!buf || !namesPath(buf, needle)) continue;
      if (buf.length > MAX_TEXT || buf.includes(0)) return { bound: `${rel} (a binary file naming the checkout's path)` };
      files.push(rel);
    } else if (Number(s.split(":")[1]) & 0o111) {
      // A script's first line (`#!/…/bin/tool`).
      const head = readNoFollow(abs, 512);
      if (head?.subarray(0, 2).toString() !== "#!" || !namesPath(head, needle)) continue;
      const whole = readNoFollow(abs, MAX_TEXT + 1);
      if (!whole || whole.length > MAX_TEXT || whole.includes(0)) return { bound: `${rel} (a script naming the checkout's path)` };
      files.push(rel);
    }
  }
  return { binding: { dir, files: files.sort() } };
}

/**
 * The products moved from `binding.dir` to `to`: each file that named the old path written again
 * naming the new one (a new file renamed over it, its mode kept). Returns the binding at `to`.
 * Throws when a file cannot be read or written (the caller's record no longer matches: not trusted).
 */
export function relocateProducts(binding: PlaceBinding, to: string): PlaceBinding {
  if (binding.dir === to) return binding;
  const from = Buffer.from(binding.dir);
  const into = Buffer.from(to);
  for (const rel of binding.files) {
    const abs = join(to, rel);
    const buf = readNoFollow(abs, MAX_TEXT + 1);
    if (!buf) throw new Error(`${rel} could not be read to move it to ${to}`);
    const parts: Buffer[] = [];
    let at = 0;
    for (let i = buf.indexOf(from); i !== -1; i = buf.indexOf(from, i + from.length)) {
      const next = buf[i + from.length];
      if (next !== undefined && /[A-Za-z0-9._-]/.test(String.fromCharCode(next))) continue;
      parts.push(buf.subarray(at, i), into);
      at = i + from.length;
    }
    parts.push(buf.subarray(at));
    const fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
    const mode = fstatSync(fd).mode & 0o7777;
    closeSync(fd);
    const tmp = `${abs}.loop-move-${process.pid}`;
    writeFileSync(tmp, Buffer.concat(parts), { flag: "wx" });
    chmodSync(tmp, mode);
    renameSync(tmp, abs);
  }
  return { dir: to, files: binding.files };
}
