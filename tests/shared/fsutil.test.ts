// Cutting text from outside (agent and verify output, prompts): never half a surrogate pair, which
// canonical JSON refuses, so an event carrying it could never be recorded.
import { afterAll, describe, expect, test } from "bun:test";
import { chownSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readRegularFile, sliceText, tail } from "../../lib/shared/fsutil.ts";
import { TempDirs } from "../helpers/fs.ts";
import { canonicalJson } from "../../lib/log/canonical.ts";

const smile = "\u{1F600}"; // two UTF-16 code units
const temp = new TempDirs();
afterAll(() => temp.cleanup());

describe("sliceText", () => {
  test.each([
    ["plain text", "abcdef", 1, 4, "bcd"],
    ["start inside a pair: the pair is left out", `a${smile}b`, 2, 4, "b"],
    ["end inside a pair: the pair is left out", `a${smile}b`, 0, 2, "a"],
    ["both ends inside pairs", `${smile}x${smile}`, 1, 4, "x"],
    ["ends on pair boundaries are kept", `a${smile}b`, 1, 3, smile],
    ["a lone low surrogate already there is not ours to fix", "\uDC00ab", 0, 2, "\uDC00a"],
  ])("%s", (_name, text, start, end, want) => {
    expect(sliceText(text, start, end)).toBe(want);
  });
});

describe("tail", () => {
  test("cut to maxChars in the middle of a pair stays valid text (the verify tail of an emoji-printing command)", () => {
    const out = tail(`${smile.repeat(2500)}b\n`);
    expect(out.length).toBeLessThanOrEqual(4000);
    expect(out.endsWith("b")).toBe(true);
    expect(out.isWellFormed()).toBe(true);
    expect(() => canonicalJson({ tail: out })).not.toThrow();
  });
  test("keeps the last lines", () => {
    expect(tail("1\n2\n3\n\n", 2)).toBe("2\n3");
  });
});

describe("readRegularFile", () => {
  const dir = temp.make();
  writeFileSync(join(dir, "small"), "hello");
  writeFileSync(join(dir, "big"), "x".repeat(100));
  mkdirSync(join(dir, "sub"));
  symlinkSync(join(dir, "small"), join(dir, "link"));
  Bun.spawnSync(["mkfifo", join(dir, "fifo")]);
  const text = (r: ReturnType<typeof readRegularFile>) => (r.kind === "ok" ? r.bytes.toString() : r);
  test.each([
    ["a regular file", "small", {}, "hello"],
    ["a symlink to one", "link", {}, "hello"],
    ["absent", "nothing", {}, { kind: "absent" }],
    ["a directory", "sub", {}, { kind: "error", message: "not a regular file" }],
    ["a FIFO (never opened: a writer waiting on it is not released)", "fifo", {}, { kind: "error", message: "not a regular file" }],
    ["over the limit", "big", { maxBytes: 10 }, { kind: "error", message: "larger than 10 bytes (100)" }],
    ["over the limit, cut when the caller takes a prefix", "big", { maxBytes: 10, truncate: true }, "x".repeat(10)],
  ] as const)("%s", (_name, file, o, want) => {
    expect(text(readRegularFile(join(dir, file), o))).toEqual(want);
  });

  // noLinks: a file someone else leaves for loop to record (the ask file) is read only if it is
  // the file itself, not what a link in its place points to.
  writeFileSync(join(dir, "target"), "root:x:0:0");
  linkSync(join(dir, "target"), join(dir, "hard"));
  symlinkSync(join(dir, "target"), join(dir, "soft"));
  symlinkSync(join(dir, "nowhere"), join(dir, "dangling"));
  test.each([
    ["noLinks: a regular file of its own", "small", "hello"],
    ["noLinks: a symbolic link is not followed", "soft", { kind: "error", message: "it is a symbolic link" }],
    ["noLinks: a dangling symbolic link", "dangling", { kind: "error", message: "it is a symbolic link" }],
    ["noLinks: a hard link to another file", "hard", { kind: "error", message: "it has 2 links (a hard link to another file)" }],
    ["noLinks: a FIFO", "fifo", { kind: "error", message: "not a regular file" }],
    ["noLinks: absent", "nothing", { kind: "absent" }],
  ] as const)("%s", (_name, file, want) => {
    expect(text(readRegularFile(join(dir, file), { noLinks: true }))).toEqual(want);
  });

  test.skipIf(process.getuid?.() !== 0)("noLinks: a file of another user is not read (as root, chown makes one)", () => {
    writeFileSync(join(dir, "theirs"), "not yours");
    chownSync(join(dir, "theirs"), 65534, 65534);
    expect(readRegularFile(join(dir, "theirs"), { noLinks: true })).toEqual({ kind: "error", message: "it belongs to uid 65534, not to this user (uid 0)" });
  });
});
