// `loop logs`: an attempt's agent output (or verify output), found from the log without writing
// anything (a read snapshot, like status), printed as it is on disk, or followed while the
// attempt's session lives. Following keeps going across the output cap's cuts (lib/supervisor/output-log.ts):
// it counts the output it has printed, and after the file is replaced it goes on from the same
// place in the new one, printing one marker for whatever was dropped before it got there.
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { readItem, readLoopRow, withReadSnapshot } from "../log/snapshot.ts";
import { isInFlight } from "../log/vocabulary.ts";
import type { ItemState } from "../log/projection.ts";
import { reworkOf } from "../step/handoff.ts";
import { resolveSelectorsIn } from "../definition/selectors.ts";
import { sessionDir } from "../shared/paths.ts";
import { readJsonOrNull } from "../shared/fsutil.ts";
import { UnknownItemError, UsageError } from "../shared/errors.ts";
import { SESSION_FILES, VERIFY_FILES } from "../supervisor/session-wrapper.ts";
import { type GatewayRefusal, readRefusals } from "../supervisor/gateway-files.ts";
import { cutOf, DEFAULT_OUTPUT_CAP, markerLine, outputLayout } from "../supervisor/output-log.ts";
import { sessionAlive } from "../supervisor/liveness.ts";

type LogKind = "output" | "verify" | "setup";

export interface LogTarget {
  item: string;
  epoch: number;
  attempt: number;
  /** Attempts the item has made in its current epoch. */
  attempts: number;
  kind: LogKind;
  path: string;
  /** The output cap the attempt was launched with (its launch.json), to follow across cuts; null for verify output. */
  cap: number | null;
}

/** The file of an attempt: the latest one unless `attempt` is given. Unknown item or attempt: exit 2. */
export function findLog(stateRoot: string, selector: string, o: { attempt: number | null; kind: LogKind }): LogTarget {
  const found = findItem(stateRoot, selector);
  const { attempt, attempts } = attemptOf(found, o.attempt);
  const dir = sessionDir(stateRoot, found.id, found.epoch, attempt);
  const cap = o.kind === "output" ? capOf(dir) : null;
  return { item: found.id, epoch: found.epoch, attempt, attempts, kind: o.kind, path: join(dir, SESSION_FILES[o.kind]), cap };
}

/**
 * The feedback an attempt was given (docs/forge.md#what-the-rework-is-told): the digest recorded
 * with the reaction to the attempt before it, exactly as its handoff carries it; null when it was
 * no rework. From the log (a read snapshot), like everything `loop logs` finds.
 */
export function findFeedback(
  stateRoot: string,
  selector: string,
  o: { attempt: number | null },
): { item: string; attempt: number; attempts: number; feedback: string | null } {
  const found = findItem(stateRoot, selector);
  const { attempt, attempts } = attemptOf(found, o.attempt);
  return { item: found.id, attempt, attempts, feedback: reworkOf(found, attempt) };
}

/**
 * What the attempt's gateway refused (GATEWAY_FILES.refused in its session folder), oldest first.
 * The file is the wrapper's, but an agent without the sandbox can write it: only well-formed lines
 * are taken, the others counted (`unreadable`).
 */
export function findRefusals(
  stateRoot: string,
  selector: string,
  o: { attempt: number | null },
): { item: string; attempt: number; attempts: number; refused: GatewayRefusal[]; unreadable: number } {
  const found = findItem(stateRoot, selector);
  const { attempt, attempts } = attemptOf(found, o.attempt);
  return { item: found.id, attempt, attempts, ...readRefusals(sessionDir(stateRoot, found.id, found.epoch, attempt)) };
}

function attemptOf(found: ItemState, asked: number | null): { attempt: number; attempts: number } {
  const n = found.attempts.length;
  if (n === 0) throw new UsageError(`${found.id} has no attempts yet (it is ${found.status}): nothing was logged`);
  const attempt = asked ?? n;
  if (attempt < 1 || attempt > n)
    throw new UsageError(
      `--attempt ${attempt}: ${found.id} has ${n === 1 ? "one attempt (1)" : `${n} attempts (1 to ${n})`}${found.epoch > 0 ? " since its last reset" : ""}`,
    );
  return { attempt, attempts: n };
}

function findItem(stateRoot: string, selector: string): ItemState {
  return withReadSnapshot(stateRoot, ({ db }) => {
    // Selectors resolve in presentation order (a ref shared with a withdrawn item picks the current one).
    const order = (JSON.parse(readLoopRow(db).body) as { order: string[] }).order;
    const refs = new Map(
      (db.query("SELECT item, json_extract(body, '$.def.ref') AS ref FROM proj_items").all() as { item: string; ref: string | null }[]).map((r) => [
        r.item,
        r.ref,
      ]),
    );
    let id: string;
    try {
      [id] = resolveSelectorsIn(
        order.map((id) => ({ id, ref: refs.get(id) ?? null })),
        [selector],
      ) as [string];
    } catch (err) {
      // The item is an argument here, not a --work-item flag: say so in the message.
      if (err instanceof UnknownItemError) throw new UnknownItemError(err.message.replace(/^--work-item /, "item "));
      throw err;
    }
    const it = readItem(db, id);
    if (!it) throw new UnknownItemError(`"${selector}": no item of this loop has this id`);
    return it;
  });
}

function capOf(dir: string): number | null {
  const launch = readJsonOrNull<{ outputCap?: unknown }>(join(dir, SESSION_FILES.launch));
  if (!launch) return null;
  // A launch record without one comes from before the cap; its wrapper wrote with the default.
  return typeof launch.outputCap === "number" ? launch.outputCap : DEFAULT_OUTPUT_CAP;
}

/**
 * Whether the attempt's file may still grow. Agent output: while its session is alive (or still
 * being launched). Verify output: while the attempt is in flight and its verify has not finished.
 */
export function attemptLive(stateRoot: string, t: LogTarget, env: Record<string, string | undefined> = process.env): boolean {
  const it = withReadSnapshot(stateRoot, ({ db }) => readItem(db, t.item));
  if (!it || it.epoch !== t.epoch || it.attempts.length !== t.attempt || !isInFlight(it.status)) return false;
  if (t.kind === "verify") return it.attempts[t.attempt - 1]!.verify === null;
  // The setup runs inside the launch: it may grow while the attempt is being launched.
  if (t.kind === "setup") return it.status === "launching";
  if (it.status === "launching") return true;
  const s = it.session;
  return it.status === "running" && s !== null && s.attempt === t.attempt && s.closed === null && sessionAlive(s, env);
}

interface LogFacts {
  exists: boolean;
  bytes: number;
  droppedBytes: number;
}

/** What is on disk for a target, for `loop logs --json`. */
export function logFacts(t: LogTarget): LogFacts {
  const f = openLog(t.path);
  if (!f) return { exists: false, bytes: 0, droppedBytes: 0 };
  try {
    const size = fstatSync(f.fd).size;
    const head = t.cap === null ? null : outputLayout(t.cap).head;
    const marker = head !== null && size > head ? cutOf(t.path, f.fd, head) : null;
    return { exists: true, bytes: size, droppedBytes: marker?.dropped ?? 0 };
  } finally {
    closeSync(f.fd);
  }
}

/** How a print or a follow ended. */
type LogEnd = "absent" | "ended" | "reader_gone" | "interrupted";

interface PrintOptions {
  target: LogTarget;
  /** Write bytes; false when the reader is gone. */
  write: (bytes: Uint8Array) => Promise<boolean>;
  /** Follow: keep reading while this says the file may still grow. Without it, print what is there. */
  live?: () => boolean;
  /** Checked between polls (SIGINT). */
  interrupted?: () => boolean;
  pollMs?: number;
  /** How often `live` is asked at most; it reads a snapshot of the store. */
  liveEveryMs?: number;
}

/** Print the file (and, with `live`, what is appended to it until its writer is gone). */
export async function printLog(o: PrintOptions): Promise<LogEnd> {
  const reader = new LogReader(o.target, o.write);
  try {
    if (!o.live) return (await reader.pass()) ?? (reader.opened ? "ended" : "absent");
    let live = true;
    let asked = 0;
    for (;;) {
      if (o.interrupted?.()) return "interrupted";
      const before = reader.position;
      const gone = await reader.pass();
      if (gone) return gone;
      if (reader.position !== before) continue;
      // Nothing new. Once the writer was seen gone, this pass was the last one.
      if (!live) return reader.opened ? "ended" : "absent";
      if (Date.now() - asked >= (o.liveEveryMs ?? 1000)) {
        asked = Date.now();
        live = o.live();
        if (!live) continue;
      }
      await Bun.sleep(o.pollMs ?? 200);
    }
  } finally {
    reader.close();
  }
}

/** An open log file: regular, never through a link, and never a FIFO that would block the reader. */
function openLog(path: string): { fd: number; ino: number } | null {
  let fd: number;
  try {
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === "ENOENT") return null;
    if (e.code === "ELOOP") throw Object.assign(new Error(`${path} is a symbolic link; loop logs does not follow it`), { code: "ELOOP", syscall: "open" });
    throw err;
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw Object.assign(new Error(`${path} is not a regular file`), { code: "EINVAL", syscall: "open" });
  }
  return { fd, ino: st.ino };
}

/**
 * Reads the output in order across cuts. `position` is the number of output bytes printed; in a
 * file cut with a marker, byte `position` of the output lies at `head + marker + (position - head -
 * dropped)`, and output bytes between `position` and `head + dropped` are gone (one marker says so).
 */
class LogReader {
  private file: { fd: number; ino: number } | null = null;
  position = 0;
  opened = false;
  private readonly head: number | null;
  private readonly buf = Buffer.allocUnsafe(1 << 20);

  constructor(
    private readonly t: LogTarget,
    private readonly write: (bytes: Uint8Array) => Promise<boolean>,
  ) {
    this.head = t.cap === null ? null : outputLayout(t.cap).head;
  }

  /** Read to the end of the file, then to the end of the file that replaced it, if one did. */
  async pass(): Promise<"reader_gone" | null> {
    for (;;) {
      this.file ??= openLog(this.t.path);
      if (!this.file) return null;
      this.opened = true;
      if (!(await this.drain(this.file.fd))) return "reader_gone";
      let now: number | null = null;
      try {
        now = statSync(this.t.path).ino;
      } catch {
        // Gone for a moment (between a cut's steps nothing is missing; a removed folder is the end).
      }
      if (now === null || now === this.file.ino) return null;
      // Replaced by a cut: the old file is complete (the wrapper writes only to the new one); read
      // what is left of it, then go on in the new one.
      if (!(await this.drain(this.file.fd))) return "reader_gone";
      closeSync(this.file.fd);
      this.file = null;
    }
  }

  close(): void {
    if (this.file) closeSync(this.file.fd);
    this.file = null;
  }

  private async drain(fd: number): Promise<boolean> {
    for (;;) {
      const size = fstatSync(fd).size;
      const head = this.head;
      const marker = head !== null && size > head ? cutOf(this.t.path, fd, head) : null;
      let from: number;
      let end = size;
      if (!marker || head === null) from = this.position;
      else if (this.position < head) {
        from = this.position;
        end = head;
      } else {
        const skipped = head + marker.dropped - this.position;
        if (skipped > 0) {
          if (!(await this.write(Buffer.from(markerLine(skipped, this.t.cap!))))) return false;
          this.position += skipped;
        }
        from = head + marker.length + (this.position - head - marker.dropped);
      }
      if (from >= end) return true;
      const n = readSync(fd, this.buf, 0, Math.min(this.buf.length, end - from), from);
      if (n === 0) return true;
      if (!(await this.write(this.buf.subarray(0, n)))) return false;
      this.position += n;
    }
  }
}

/**
 * The environment the attempt's verify ran with, as loop wrote it at its start (VERIFY_FILES.environment):
 * lines to show, or null when none was written. The folder is the agent's to write without the
 * sandbox: only strings are taken, and the caller escapes them.
 */
export function verifyEnvironment(t: LogTarget): string[] | null {
  const r = readJsonOrNull<Record<string, unknown>>(join(dirname(t.path), VERIFY_FILES.environment));
  if (!r || typeof r !== "object") return null;
  const strings = (x: unknown) => (Array.isArray(x) ? x.filter((s): s is string => typeof s === "string") : []);
  const dropped = (Array.isArray(r.dropped) ? r.dropped : []).flatMap((d: { name?: unknown; why?: unknown }) =>
    typeof d?.name === "string" && typeof d.why === "string" ? [`${d.name} (${d.why})`] : [],
  );
  return [
    `the verify ran with: ${strings(r.names).join(" ")}`,
    ...(typeof r.PATH === "string" ? [`  PATH=${r.PATH}`] : []),
    ...(typeof r.VIRTUAL_ENV === "string" ? [`  VIRTUAL_ENV=${r.VIRTUAL_ENV}`] : []),
    ...(dropped.length ? [`  dropped (the item's environment is its own): ${dropped.join(", ")}`] : []),
    ...strings(r.removed).map((e) => `  taken off ${e}`),
    ...(strings(r.withheld).length ? [`  withheld (the environment policy, loop's keys): ${strings(r.withheld).join(" ")}`] : []),
  ];
}
