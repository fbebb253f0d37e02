// One loop as the server sees it: its state root, read only through the read snapshot `loop status`
// uses (lib/log/snapshot.ts), and the history folded from its log as the log grows. The server asks
// each source to `refresh` a few times a second; a source looks at the store's files first (a stat
// each) and reads only when they changed, and then only the events after the last one it folded.
import { statSync } from "node:fs";
import { basename } from "node:path";
import { EVENT_COLUMNS, type EventRow } from "../log/integrity.ts";
import { dbPath, headOf, storeError, withReadSnapshot } from "../log/snapshot.ts";
import { projectOf, type ProjectIdentity } from "../log/ownership.ts";
import { statusReport, type StatusReport } from "../reports/status.ts";
import { judgeDefinition } from "../reports/definition-judge.ts";
import { emptyHistory, foldEvent, type History } from "../reports/history.ts";

/** Events read per snapshot while catching up (a long log is folded in pages, each its own read). */
const PAGE = 5_000;

interface SourceOptions {
  /** The project root (loop.json's folder). */
  root: string;
  stateRoot: string;
  /** The name in URLs; by default the loop's own name, read once at start. */
  name?: string;
  env?: Record<string, string | undefined>;
}

interface EventsPage {
  events: (Omit<EventRow, "payload"> & { payload: unknown })[];
  /** The log head when the page was read. */
  head: number;
}

export class LoopSource {
  readonly root: string;
  readonly stateRoot: string;
  readonly project: ProjectIdentity | null;
  readonly env: Record<string, string | undefined>;
  name: string;
  history: History = emptyHistory();
  /** The last failure to read the store (missing, corrupt, unreadable), or null. */
  error: { code: string; message: string } | null = null;
  private sig = "";

  constructor(o: SourceOptions) {
    this.root = o.root;
    this.stateRoot = o.stateRoot;
    this.env = o.env ?? process.env;
    this.project = projectOf(o.root, null);
    this.name = o.name ?? "";
  }

  /** The status document, exactly as `loop status --json` prints it. Throws what status throws. */
  status(): StatusReport {
    // loop.json as it is now (a file every step refuses is shown), judged as a step would.
    return statusReport(this.stateRoot, [], { env: this.env, project: this.project, root: this.root, judge: judgeDefinition });
  }

  /** The name the loop gives itself (null before its first definition import), else the root's folder name. */
  defaultName(): string {
    return this.history.name ?? basename(this.root);
  }

  /**
   * The first read, before serving: throws what a missing, corrupt or outdated store throws (the
   * command refuses to start over a store it cannot read), and names the loop when no name was given.
   */
  open(): void {
    const path = dbPath(this.stateRoot);
    const sig = fileSig(path) + "|" + fileSig(`${path}-wal`);
    this.catchUp();
    this.sig = sig;
    this.name ||= this.defaultName();
  }

  /**
   * Catch up with the log: fold the events appended since the last call. True when the log head
   * moved (or the store changed under us and the history was rebuilt). Never throws: a store that
   * cannot be read is kept as `error` until it can.
   */
  refresh(): boolean {
    const path = dbPath(this.stateRoot);
    const sig = fileSig(path) + "|" + fileSig(`${path}-wal`);
    if (sig === this.sig && this.error === null) return false;
    try {
      const moved = this.catchUp();
      this.error = null;
      this.sig = sig;
      return moved;
    } catch (err) {
      // As status names it: missing, corrupt or outdated store, or the environment's io_error.
      const e = storeError(err, `cannot read the store under ${this.stateRoot}`);
      this.error = { code: e.code, message: e.message };
      this.sig = "";
      return false;
    }
  }

  private catchUp(): boolean {
    let moved = false;
    for (;;) {
      const after = this.history.seq;
      const read = withReadSnapshot(this.stateRoot, ({ db }) => {
        const head = headOf(db);
        const rows =
          head.seq > after ? (db.query(`SELECT ${EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?`).all(after, PAGE) as EventRow[]) : [];
        return { head, rows };
      });
      // A log that is shorter than what was folded, or whose next event does not chain to the last
      // one folded, is another log (a restored backup, a replaced store): fold it from the start.
      const chained =
        after === 0 || (read.rows.length > 0 ? read.rows[0]!.prev_hash === this.history.hash : read.head.seq > after || read.head.hash === this.history.hash);
      if (!chained) {
        this.history = emptyHistory();
        moved = true;
        continue;
      }
      for (const r of read.rows)
        foldEvent(this.history, { seq: r.seq, ts: r.ts, type: r.type, actor: r.actor, item: r.item, payload: parsePayload(r.payload), hash: r.hash });
      if (read.rows.length) moved = true;
      if (read.rows.length < PAGE) return moved;
    }
  }

  /** A page of the log: at most `limit` events after `after`, in seq order, payloads parsed. */
  events(after: number, limit: number): EventsPage {
    return withReadSnapshot(this.stateRoot, ({ db }) => {
      const head = headOf(db).seq;
      const rows = db.query(`SELECT ${EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?`).all(after, limit) as EventRow[];
      return { head, events: rows.map((r) => ({ ...r, payload: parsePayload(r.payload) })) };
    });
  }

  /** When the store was last written, in ms since the epoch: every step takes and releases the lease, so this is the last tick (or operator command). */
  lastWrite(): number | null {
    const path = dbPath(this.stateRoot);
    let t: number | null = null;
    for (const p of [path, `${path}-wal`])
      try {
        const m = statSync(p).mtimeMs;
        t = t === null ? m : Math.max(t, m);
      } catch {}
    return t;
  }
}

function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function fileSig(path: string): string {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return "-";
  }
}
