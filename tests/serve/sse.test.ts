// The live updates' hub, without a server: who gets a `head`, and what an item page's `tail` carries
// as the output of the attempt in flight grows, is cut by the output cap, outruns a message, ends.
import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SseHub, TAIL_CHUNK } from "../../lib/serve/sse.ts";

const dir = mkdtempSync(join(tmpdir(), "loop-serve-sse-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every event queued on a stream so far (it is never closed here: read what is there). */
async function drain(stream: ReadableStream<Uint8Array>): Promise<{ event: string; data: any }[]> {
  const reader = stream.getReader();
  let text = "";
  for (;;) {
    const got = await Promise.race([reader.read(), Bun.sleep(20).then(() => null)]);
    if (got === null || got.done) break;
    text += new TextDecoder().decode(got.value);
  }
  reader.releaseLock();
  return [...text.matchAll(/event: (\w+)\ndata: (.*)\n\n/g)].map((m) => ({ event: m[1]!, data: JSON.parse(m[2]!) }));
}

describe("SseHub", () => {
  test("head goes to the loop's pages only; a client over the cap is refused", async () => {
    const hub = new SseHub(2);
    const a = hub.open("one", null, null)!;
    const b = hub.open("two", null, null)!;
    expect(hub.open("one", null, null)).toBeNull();
    hub.head("one", 7);
    expect(await drain(a)).toEqual([{ event: "head", data: { seq: 7 } }]);
    expect(await drain(b)).toEqual([]);
    hub.closeAll();
    expect(hub.size).toBe(0);
  });

  test("an item page's tail: from where the page stopped, appended as it grows, afresh when the file is cut or the attempt changes, ended", async () => {
    const hub = new SseHub(10);
    const log = join(dir, "output.log");
    writeFileSync(log, "first\n");
    // The page was drawn with the 6 bytes there were.
    const s = hub.open("one", "a", { key: "e0-1", offset: 6 })!;
    const target = { key: "e0-1", root: dir, path: log };
    hub.tail("one", "a", target);
    expect(await drain(s)).toEqual([]); // nothing new
    appendFileSync(log, "second <b>\n");
    hub.tail("one", "a", target);
    hub.tail("one", "a", target); // nothing new the second time
    expect(await drain(s)).toEqual([{ event: "tail", data: { attempt: "e0-1", reset: false, text: "second <b>\n" } }]);
    // The output cap writes a new file (its head, a marker, the latest part) and renames it over the log.
    writeFileSync(join(dir, "new.log"), "head\n[cut]\nlatest\n");
    renameSync(join(dir, "new.log"), log);
    hub.tail("one", "a", target);
    expect(await drain(s)).toEqual([{ event: "tail", data: { attempt: "e0-1", reset: true, text: "head\n[cut]\nlatest\n" } }]);
    // Faster than one message carries: the middle is skipped, and the text says how much.
    appendFileSync(log, "x".repeat(TAIL_CHUNK + 100));
    hub.tail("one", "a", target);
    const [big] = await drain(s);
    expect(big!.data.reset).toBe(false);
    expect(big!.data.text).toStartWith("\n[loop serve: 100 bytes skipped]\n");
    expect(big!.data.text.length).toBe("\n[loop serve: 100 bytes skipped]\n".length + TAIL_CHUNK);
    // A new attempt: its output from the start.
    const next = join(dir, "output-2.log");
    writeFileSync(next, "attempt two\u001b[31m\n");
    hub.tail("one", "a", { key: "e0-2", root: dir, path: next });
    expect(await drain(s)).toEqual([{ event: "tail", data: { attempt: "e0-2", reset: true, text: "attempt two\\u001b[31m\n" } }]);
    // Nothing in flight any more.
    hub.tail("one", "a", null);
    hub.tail("one", "a", null);
    expect(await drain(s)).toEqual([{ event: "tail", data: { ended: true } }]);
    expect(hub.itemsWatched()).toEqual([{ loop: "one", item: "a" }]);
    hub.closeAll();
  });
});
