// The bounded output log (lib/supervisor/output-log.ts): the head and the latest output are kept with a
// marker counting what was dropped between them, the file never outgrows the cap (nor do the old
// and the new file together while it is cut), a reader holding the file before a cut reads a
// complete file, and a cut file still shows output growth to the stall detector. An agent that
// prints without end through `loop run`: output-log.e2e.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { closeSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  CappedLog,
  cutOf,
  cutsPath,
  DEFAULT_OUTPUT_CAP,
  markerLine,
  MIN_OUTPUT_CAP,
  outputCapFrom,
  outputLayout,
  parseMarker,
  parseSize,
} from "../../lib/supervisor/output-log.ts";
import { TempDirs } from "../helpers/fs.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

/** Numbered lines "000001\n", "000002\n", …: any byte's place in the output can be checked. */
function lines(from: number, count: number): Buffer {
  let s = "";
  for (let i = from; i < from + count; i++) s += String(i).padStart(6, "0") + "\n";
  return Buffer.from(s);
}

describe("parseSize and LOOP_OUTPUT_CAP", () => {
  test.each([
    ["65536", 65536],
    ["64K", 65536],
    ["64k", 65536],
    ["64KiB", 65536],
    ["64M", 64 * 2 ** 20],
    ["1G", 2 ** 30],
    ["2GB", 2 * 2 ** 30],
    [" 5M ", 5 * 2 ** 20],
  ] as const)("%p is %i bytes", (text, n) => expect(parseSize(text)).toBe(n));
  test.each(["", "M", "1.5M", "-1", "10X", "0x10", "1e6", "64 M B"])("%p is not a size", (text) => expect(parseSize(text)).toBeNull());

  test("unset or empty: the default; invalid or out of range: an error naming the variable", () => {
    expect(outputCapFrom({})).toBe(DEFAULT_OUTPUT_CAP);
    expect(outputCapFrom({ LOOP_OUTPUT_CAP: "" })).toBe(DEFAULT_OUTPUT_CAP);
    expect(outputCapFrom({ LOOP_OUTPUT_CAP: "1M" })).toBe(2 ** 20);
    expect(() => outputCapFrom({ LOOP_OUTPUT_CAP: "lots" })).toThrow('LOOP_OUTPUT_CAP="lots" is not a size');
    expect(() => outputCapFrom({ LOOP_OUTPUT_CAP: "1K" })).toThrow("out of range");
    expect(() => outputCapFrom({ LOOP_OUTPUT_CAP: "2T" })).toThrow("out of range");
  });
});

describe("CappedLog", () => {
  const cap = MIN_OUTPUT_CAP;
  const { head, keep } = outputLayout(cap);

  test("under the cap the file is the output, byte for byte", () => {
    const path = join(temp.make(), "output.log");
    const log = new CappedLog(path, cap);
    const out = lines(1, 1000); // 7 KB
    log.write(out.subarray(0, 100));
    log.write(out.subarray(100));
    log.close();
    expect(readFileSync(path).equals(out)).toBe(true);
    expect(log.droppedBytes).toBe(0);
  });

  test("far over the cap: head, one marker with the exact count, then the latest output; never over the cap", () => {
    const dir = temp.make();
    const path = join(dir, "output.log");
    const log = new CappedLog(path, cap);
    const total = lines(1, 200_000); // 1.4 MB, over 20 times the cap
    let max = 0;
    // Uneven chunks, as pipes deliver them.
    for (let off = 0, n = 1; off < total.length; off += n, n = (n * 7 + 13) % 9000) {
      log.write(total.subarray(off, off + n));
      max = Math.max(max, statSync(path).size);
      // No temporary file outlives a cut; beside the log, only the record of its cuts.
      expect(readdirSync(dir).sort()).toEqual(["output.log", "output.log.cuts"]);
    }
    log.close();
    expect(max).toBeLessThanOrEqual(cap);
    const file = readFileSync(path);
    expect(file.subarray(0, head).equals(total.subarray(0, head))).toBe(true);
    const marker = parseMarker(file.subarray(head));
    expect(marker).not.toBeNull();
    expect(marker!.dropped).toBe(log.droppedBytes);
    expect(file.subarray(head, head + marker!.length).toString()).toBe(markerLine(marker!.dropped, cap));
    const kept = file.subarray(head + marker!.length);
    // What is kept after the marker is exactly the output's end, and nothing is lost or repeated.
    expect(kept.length).toBeGreaterThanOrEqual(keep);
    expect(kept.equals(total.subarray(total.length - kept.length))).toBe(true);
    expect(head + marker!.dropped + kept.length).toBe(total.length);
    // The record of the cuts names this file, with the marker's count and length.
    const fd = openSync(path, "r");
    try {
      expect(cutOf(path, fd, head)).toEqual(marker);
    } finally {
      closeSync(fd);
    }
  });

  test("a marker the output itself carries at the head's end is no cut: readers follow the record, not the text", () => {
    const path = join(temp.make(), "output.log");
    const log = new CappedLog(path, cap);
    // The agent prints exactly up to the head's end, then a line that looks like the wrapper's marker.
    log.write(Buffer.alloc(head, "a"));
    log.write(Buffer.from(markerLine(5000, cap) + "after\n"));
    log.close();
    const fd = openSync(path, "r");
    try {
      expect(parseMarker(readFileSync(path).subarray(head))).not.toBeNull(); // it does look like one
      expect(cutOf(path, fd, head)).toBeNull();
    } finally {
      closeSync(fd);
    }
    // A log whose wrapper kept no record (one older than the record) is read by its marker, as before.
    rmSync(cutsPath(path));
    const old = openSync(path, "r");
    try {
      expect(cutOf(path, old, head)).toEqual({ dropped: 5000, length: markerLine(5000, cap).length });
    } finally {
      closeSync(old);
    }
  });

  test("a reader holding the file before a cut reads that file whole; the path then names the new one", () => {
    const path = join(temp.make(), "output.log");
    const log = new CappedLog(path, cap);
    const first = lines(1, Math.floor((head + 2 * keep) / 7)); // just under the first cut
    const second = lines(100_000, 2000); // past it
    log.write(first);
    const fd = openSync(path, "r");
    const before = statSync(path).ino;
    log.write(second);
    log.close();
    expect(statSync(path).ino).not.toBe(before);
    // The old file was filled up to the cut, then left alone: a prefix of the output, never rewritten.
    const buf = Buffer.alloc(cap);
    const n = readSync(fd, buf, 0, buf.length, 0);
    closeSync(fd);
    expect(n).toBe(head + 2 * keep);
    expect(buf.subarray(0, n).equals(Buffer.concat([first, second]).subarray(0, n))).toBe(true);
  });

  test("a cut file still shows output growth: its mtime is that of the latest write", async () => {
    const path = join(temp.make(), "output.log");
    const log = new CappedLog(path, cap);
    log.write(lines(1, 30_000));
    expect(log.droppedBytes).toBeGreaterThan(0);
    const mtimeAfterCut = statSync(path).mtimeMs;
    await Bun.sleep(20); // so that a later write has a later mtime (not an expectation on speed)
    log.write(Buffer.from("still working\n"));
    log.close();
    expect(statSync(path).mtimeMs).toBeGreaterThan(mtimeAfterCut);
  });

  test("writes after close (a straggler's output once the agent is gone) are dropped, not a crash", () => {
    const path = join(temp.make(), "output.log");
    const log = new CappedLog(path, cap);
    log.write(Buffer.from("a\n"));
    log.close();
    log.write(Buffer.from("b\n"));
    log.close();
    expect(readFileSync(path, "utf8")).toBe("a\n");
  });
});
