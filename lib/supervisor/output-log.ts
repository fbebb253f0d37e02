// A session's output log, bounded: an agent that prints without end must not fill the disk.
//
// Layout of output.log under a cap of C bytes (LOOP_OUTPUT_CAP, default 64 MiB): the first C/8 bytes
// of the output (the head: where agents announce their conversation id), then, once the output
// outgrows the file, a marker line saying how many bytes were dropped, then the latest output (the
// tail, at least ~C/4 bytes). The wrapper appends to the file; when the part after the head reaches
// twice the tail it writes a new file (head, marker, the last tail bytes) beside it and renames it
// over output.log. So the file only ever grows or is replaced whole: a reader holding the old file
// reads a complete one, the file's mtime still moves with every write (the stall detector's
// "output growth"), and the old and the new file together never take more than C bytes.
//
// A write the disk refuses (ENOSPC: the disk is full; any other errno) never ends the wrapper: the
// output is dropped and counted, and once a write succeeds again a line says how much was lost
// there. The first such failure is kept (writeError) for exit.json: the step says it.
import { closeSync, existsSync, constants as fsConstants, fstatSync, openSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { openOwnForAppend, readRegularFile, writeFileAtomic } from "../shared/fsutil.ts";
import { StartError } from "../shared/errors.ts";

export const DEFAULT_OUTPUT_CAP = 64 * 2 ** 20;
export const MIN_OUTPUT_CAP = 64 * 2 ** 10;
const MAX_OUTPUT_CAP = 2 ** 40;
/** The longest marker line: two numbers of at most 13 digits each. */
const MARKER_MAX = markerLine(MAX_OUTPUT_CAP, MAX_OUTPUT_CAP).length;

/** The line written where output was lost because the disk refused it. */
function lostLine(lost: number): string {
  return `\n[loop: ${lost} bytes of output lost here: the disk refused them]\n`;
}

/** The marker that replaces the dropped middle of the output. */
export function markerLine(dropped: number, cap: number): string {
  return `\n[loop: ${dropped} bytes of output dropped here (output cap ${cap} bytes)]\n`;
}
const MARKER = /^\n\[loop: (\d+) bytes of output dropped here \(output cap (\d+) bytes\)\]\n/;

/** The dropped byte count and the marker's length, when `bytes` (read at the head's end) start with a marker. */
export function parseMarker(bytes: Uint8Array): { dropped: number; length: number } | null {
  const m = MARKER.exec(Buffer.from(bytes).toString("latin1"));
  return m ? { dropped: Number(m[1]), length: m[0].length } : null;
}
const MARKER_READ = MARKER_MAX;

/**
 * The wrapper's record of its cuts, beside the log (`output.log.cuts`): for each of the last two
 * files it made, its inode, the bytes dropped before it and its marker's length. Readers take a cut
 * from here, never from the marker in the log: at the head's end of a file not cut yet is the
 * agent's own output, which could imitate a marker to have a reader skip what follows (the usage
 * lines its spend is read from). In the sandbox the agent cannot write the record.
 */
export function cutsPath(logPath: string): string {
  return `${logPath}.cuts`;
}

interface CutEntry {
  ino: string;
  dropped: number;
  markerLength: number;
}

function inodeOf(fd: number): string {
  return String(fstatSync(fd, { bigint: true }).ino);
}

/**
 * Where the log open at `fd` (read from `logPath`) was cut: its entry in the record, or null when it
 * was never cut. A log without a record (written by a wrapper older than the record) is read by its
 * marker, as before; an unreadable record is no cut.
 */
export function cutOf(logPath: string, fd: number, head: number): { dropped: number; length: number } | null {
  const r = readRegularFile(cutsPath(logPath), { maxBytes: 4096, noLinks: true });
  if (r.kind === "absent") {
    const buf = Buffer.alloc(MARKER_READ);
    return parseMarker(buf.subarray(0, readSync(fd, buf, 0, buf.length, head)));
  }
  if (r.kind !== "ok") return null;
  let cuts: unknown;
  try {
    cuts = (JSON.parse(r.bytes.toString("utf8")) as { cuts?: unknown }).cuts;
  } catch {
    return null;
  }
  const ino = inodeOf(fd);
  const mine = (Array.isArray(cuts) ? (cuts as CutEntry[]) : [])
    .filter((e) => e?.ino === ino && Number.isSafeInteger(e.dropped) && Number.isSafeInteger(e.markerLength))
    .at(-1);
  return mine ? { dropped: mine.dropped, length: mine.markerLength } : null;
}

interface OutputLayout {
  cap: number;
  /** Bytes of the output's beginning kept at the start of the file. */
  head: number;
  /** Bytes of the latest output kept after a cut; the file is cut when the part after the head reaches twice this. */
  keep: number;
}

export function outputLayout(cap: number): OutputLayout {
  const head = Math.floor(cap / 8);
  // Old file (head, marker, 2·keep) and new file (head, marker, keep) side by side fit in the cap.
  return { cap, head, keep: Math.floor((cap - 2 * head - 2 * MARKER_MAX) / 3) };
}

const UNITS: Record<string, number> = { "": 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 };

/** A size as people write it: bytes, or a number with K, M, G or T (binary: 64M is 64 MiB), "iB" or "B" allowed after. */
export function parseSize(text: string): number | null {
  const m = /^(\d{1,15})\s*([KMGT]?)(?:i?B)?$/i.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]) * UNITS[m[2]!.toUpperCase()]!;
  return Number.isSafeInteger(n) ? n : null;
}

/** The cap from $LOOP_OUTPUT_CAP (default 64 MiB); an invalid value is an error naming it, never ignored. */
export function outputCapFrom(env: Record<string, string | undefined>): number {
  const raw = env.LOOP_OUTPUT_CAP;
  if (raw === undefined || raw === "") return DEFAULT_OUTPUT_CAP;
  const n = parseSize(raw);
  // A session cannot be started with it: the launch (or the verify) that meets it says so as such.
  if (n === null) throw new StartError(`LOOP_OUTPUT_CAP=${JSON.stringify(raw)} is not a size (bytes, or a number with K, M or G, e.g. 64M)`);
  if (n < MIN_OUTPUT_CAP || n > MAX_OUTPUT_CAP)
    throw new StartError(`LOOP_OUTPUT_CAP=${JSON.stringify(raw)} is out of range: between ${MIN_OUTPUT_CAP} bytes (64K) and ${MAX_OUTPUT_CAP} bytes (1T)`);
  return n;
}

/** The session wrapper's writer of output.log. Synchronous writes: two pumps (stdout, stderr) never interleave inside a chunk. */
export class CappedLog {
  private fd: number;
  private size: number;
  private dropped = 0;
  private markerLength = 0;
  /** The record's entry for the file being written, once it was cut. */
  private lastCut: CutEntry | null = null;
  private closed = false;
  /** Bytes a failing disk kept out since the last write that succeeded. */
  private lost = 0;
  private failure: string | null = null;
  private readonly layout: OutputLayout;
  /** What was found in the log's place and removed (a link, a FIFO: never written through), or null. */
  readonly replaced: string | null;

  constructor(
    private readonly path: string,
    cap: number,
    /** How the file is opened; tests hand in a device that refuses every write (/dev/full). */
    open: (path: string) => { fd: number; size: number; replaced: string | null } = openOwnForAppend,
  ) {
    this.layout = outputLayout(cap);
    // Read too: a cut copies from it. Never through a link or into a FIFO planted in its place.
    const opened = open(path);
    this.fd = opened.fd;
    this.size = opened.size;
    this.replaced = opened.replaced;
    // The record says "no cut yet" from the start: its presence is what tells readers to trust it,
    // not the marker. A disk that refuses it loses no output: kept as the log's first write error.
    try {
      if (!existsSync(cutsPath(path))) writeFileAtomic(cutsPath(path), JSON.stringify({ v: 1, cuts: [] }) + "\n");
    } catch (err) {
      if (typeof (err as NodeJS.ErrnoException)?.code !== "string") throw err;
      this.failure = `${cutsPath(path)}: ${(err as Error).message}`;
    }
  }

  /** Bytes of output dropped so far. */
  get droppedBytes(): number {
    return this.dropped;
  }

  /** The first write the disk refused (its system message), or null: output was lost while it refused. */
  get writeError(): string | null {
    return this.failure;
  }

  /** Append output; after close (a straggler's chunk, once the agent is gone) it is dropped. */
  write(chunk: Uint8Array): void {
    if (this.closed) return;
    if (this.lost > 0) {
      // The disk refused earlier output: say where, once it takes a write again.
      if (this.put(Buffer.from(lostLine(this.lost))) > 0) {
        this.lost += chunk.length;
        return;
      }
      this.lost = 0;
    }
    this.lost += this.put(chunk);
  }

  /** Write within the cap, cutting as needed; returns how many bytes the disk kept out (0: all written). */
  private put(bytes: Uint8Array): number {
    const { head, keep } = this.layout;
    let off = 0;
    try {
      while (off < bytes.length) {
        const room = head + this.markerLength + 2 * keep - this.size;
        if (room <= 0) {
          this.cut();
          continue;
        }
        const n = writeSync(this.fd, bytes, off, Math.min(room, bytes.length - off));
        this.size += n;
        off += n;
      }
      return 0;
    } catch (err) {
      if (typeof (err as NodeJS.ErrnoException)?.code !== "string") throw err;
      this.failure ??= (err as Error).message;
      return bytes.length - off;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }

  /** Replace the file by its head, a marker and its last `keep` bytes. */
  private cut(): void {
    const { head, keep, cap } = this.layout;
    const tailStart = this.size - keep;
    const dropped = this.dropped + (tailStart - head - this.markerLength);
    const marker = Buffer.from(markerLine(dropped, cap));
    const tmp = `${this.path}.tmp-${process.pid}`;
    // Created afresh, never opened through whatever (a link) a leftover of that name is.
    rmSync(tmp, { force: true });
    const out = openSync(tmp, fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o644);
    try {
      copyRange(this.fd, 0, head, out);
      writeAll(out, marker);
      copyRange(this.fd, tailStart, keep, out);
      // Recorded before the new file takes the log's name: a reader that opens it finds its cut.
      const entry = { ino: inodeOf(out), dropped, markerLength: marker.length };
      writeFileAtomic(cutsPath(this.path), JSON.stringify({ v: 1, cuts: [...(this.lastCut ? [this.lastCut] : []), entry] }) + "\n");
      this.lastCut = entry;
      renameSync(tmp, this.path);
    } catch (err) {
      closeSync(out);
      rmSync(tmp, { force: true }); // a full disk: no half copy left behind
      throw err;
    }
    closeSync(this.fd);
    this.fd = out;
    this.size = head + marker.length + keep;
    this.markerLength = marker.length;
    this.dropped = dropped;
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off);
}

function copyRange(from: number, start: number, length: number, to: number): void {
  const buf = Buffer.allocUnsafe(Math.min(length, 2 ** 20));
  for (let done = 0; done < length; ) {
    const n = readSync(from, buf, 0, Math.min(buf.length, length - done), start + done);
    if (n === 0) throw new Error(`output log is shorter than expected (${start + done} bytes)`);
    writeAll(to, buf.subarray(0, n));
    done += n;
  }
}
