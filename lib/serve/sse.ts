// Server-Sent Events for the pages: `head` when a loop's log grows (the page then fetches its
// fragment again), `tail` with the new output of the attempt in flight (item pages). Bounded: at most
// `max` clients at once, a client that does not read is dropped once its queue passes a limit, and a
// tail message carries at most TAIL_CHUNK bytes (a faster writer is skipped over, and the message
// says how much).
import { printableText } from "../shared/printable.ts";
import { fileStat, readSlice } from "./files.ts";

/** Bytes of output one tail message carries at most. */
export const TAIL_CHUNK = 16 * 1024;
/** A client whose unread queue grows past this many bytes is dropped: it is not reading. */
const MAX_QUEUED = 1024 * 1024;
const HEARTBEAT_MS = 15_000;

/** The file an item page's tail follows: the output log of the attempt in flight, under the state root `root`. */
export interface TailTarget {
  key: string;
  root: string;
  path: string | null;
}

interface Client {
  loop: string;
  item: string | null;
  controller: ReadableStreamDefaultController<Uint8Array>;
  /** What the client has of the tail: the attempt, the file's inode, the offset up to which it has the bytes. */
  tail: { key: string; ino: number | null; offset: number } | null;
  queued: number;
}

const encoder = new TextEncoder();

export class SseHub {
  private clients = new Set<Client>();
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(readonly max: number) {}

  get size(): number {
    return this.clients.size;
  }

  /**
   * A new client's stream, or null when `max` clients are connected. `tail`: what the page already
   * shows of the attempt in flight (its key and the byte offset it rendered up to).
   */
  open(loop: string, item: string | null, tail: { key: string; offset: number } | null, onClose: () => void = () => {}): ReadableStream<Uint8Array> | null {
    if (this.clients.size >= this.max) return null;
    let client: Client;
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        client = { loop, item, controller, tail: tail ? { key: tail.key, ino: null, offset: tail.offset } : null, queued: 0 };
        this.clients.add(client);
        // Tell the browser how soon to reconnect, and flush the headers at once.
        this.send(client, "retry: 2000\n: connected\n\n");
        this.ensureHeartbeat();
      },
      cancel: () => {
        this.drop(client);
        onClose();
      },
    });
    return stream;
  }

  /** The log of `loop` moved to `seq`. */
  head(loop: string, seq: number): void {
    for (const c of this.clients) if (c.loop === loop) this.send(c, `event: head\ndata: {"seq":${seq}}\n\n`);
  }

  /** Clients of item pages: which items' tails to look at. */
  itemsWatched(): { loop: string; item: string }[] {
    const seen = new Map<string, { loop: string; item: string }>();
    for (const c of this.clients) if (c.item !== null) seen.set(`${c.loop}\u0000${c.item}`, { loop: c.loop, item: c.item });
    return [...seen.values()];
  }

  /** Send each item page following `item` what its attempt in flight wrote since it last looked. */
  tail(loop: string, item: string, target: TailTarget | null): void {
    for (const c of this.clients) {
      if (c.loop !== loop || c.item !== item) continue;
      if (target === null) {
        if (c.tail !== null) this.send(c, `event: tail\ndata: ${JSON.stringify({ ended: true })}\n\n`);
        c.tail = null;
        continue;
      }
      const fresh = c.tail === null || c.tail.key !== target.key;
      if (fresh) c.tail = { key: target.key, ino: null, offset: 0 };
      const t = c.tail!;
      const st = target.path ? fileStat(target.path, target.root) : null;
      if (!st) {
        if (fresh) this.send(c, `event: tail\ndata: ${JSON.stringify({ attempt: target.key, reset: true, text: "" })}\n\n`);
        continue;
      }
      // The output cap replaces the file by its head and its latest part (lib/supervisor/output-log.ts):
      // then, as for a new attempt, the client is sent the end of the file afresh.
      const reset = fresh || (t.ino !== null && t.ino !== st.ino) || st.size < t.offset;
      if (!reset && st.size === t.offset) continue;
      let from = reset ? Math.max(0, st.size - TAIL_CHUNK) : t.offset;
      let skipped = 0;
      if (!reset && st.size - from > TAIL_CHUNK) {
        skipped = st.size - TAIL_CHUNK - from;
        from = st.size - TAIL_CHUNK;
      }
      const slice = readSlice(target.path!, { root: target.root, from, max: TAIL_CHUNK });
      if (slice.kind !== "ok") continue;
      t.ino = slice.ino;
      t.offset = slice.size;
      const note = skipped ? `\n[loop serve: ${skipped} bytes skipped]\n` : "";
      this.send(c, `event: tail\ndata: ${JSON.stringify({ attempt: target.key, reset, text: note + printableText(slice.text) })}\n\n`);
    }
  }

  /** End every stream (the server is stopping). */
  closeAll(): void {
    for (const c of [...this.clients]) {
      try {
        c.controller.close();
      } catch {}
      this.drop(c);
    }
  }

  private send(c: Client, text: string): void {
    const bytes = encoder.encode(text);
    // desiredSize goes negative by what is queued and unread.
    const queued = -(c.controller.desiredSize ?? 0);
    if (queued > MAX_QUEUED) {
      try {
        c.controller.error(new Error("client is not reading"));
      } catch {}
      this.drop(c);
      return;
    }
    try {
      c.controller.enqueue(bytes);
    } catch {
      this.drop(c);
    }
  }

  private drop(c: Client | undefined): void {
    if (!c) return;
    this.clients.delete(c);
    if (this.clients.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private ensureHeartbeat(): void {
    // A comment line now and then: proxies keep the connection, and a gone client is noticed.
    this.timer ??= setInterval(() => {
      for (const c of this.clients) this.send(c, ": ping\n\n");
    }, HEARTBEAT_MS);
  }
}
