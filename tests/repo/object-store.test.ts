// The object store's proof of itself (lib/repo/object-store.ts), on a real repository: what was
// written since a moment is checked against its name; an object rewritten under another's name, a
// link, a damaged pack and a written alternates file are named; honest writes are not.
import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, chmodSync, copyFileSync, cpSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { looseObjectMatches, tamperedObjects } from "../../lib/repo/object-store.ts";
import { git, makeRepo } from "../helpers/repo.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function repo() {
  const { dir, root } = makeRepo({ prefix: "loop-objects-", files: { "check.sh": "exit 1\n" } });
  dirs.push(dir);
  return root;
}
const objectPath = (root: string, id: string) => join(root, ".git", "objects", id.slice(0, 2), id.slice(2));

describe("looseObjectMatches", () => {
  test("a loose object's inflated bytes hash to its name (sha1 and sha256); anything else does not", () => {
    const body = Buffer.from("blob 7\0exit 1\n");
    const sha1 = new Bun.CryptoHasher("sha1").update(body).digest("hex");
    const sha256 = new Bun.CryptoHasher("sha256").update(body).digest("hex");
    expect(looseObjectMatches(sha1, deflateSync(body))).toBe(true);
    expect(looseObjectMatches(sha256, deflateSync(body))).toBe(true);
    expect(looseObjectMatches(sha1, deflateSync(Buffer.from("blob 7\0exit 0\n")))).toBe(false);
    expect(looseObjectMatches(sha1, Buffer.from("not zlib"))).toBe(false);
    expect(looseObjectMatches("abc", deflateSync(body))).toBe(false);
  });

  test("a few KiB that inflate beyond the bound are not inflated: said too large", () => {
    const bomb = deflateSync(Buffer.alloc(8 * 2 ** 20));
    expect(bomb.length).toBeLessThan(64 * 1024);
    expect(looseObjectMatches("a".repeat(40), bomb, 2 ** 20)).toBe("too large");
  });
});

describe("tamperedObjects", () => {
  test("honest writes since the moment (a commit, a repack) are not named; nothing before the moment is read", () => {
    const root = repo();
    const since = Date.now();
    writeFileSync(join(root, "more.txt"), "more\n");
    git(root, "add", "-A");
    git(root, "commit", "-qm", "more");
    expect(tamperedObjects({ repo: root, since })).toEqual([]);
    git(root, "repack", "-adq");
    expect(tamperedObjects({ repo: root, since })).toEqual([]);
  });

  test("a blob rewritten under its own name with another's bytes is named; so is a link in its place", () => {
    const root = repo();
    const since = Date.now();
    const blob = git(root, "rev-parse", "HEAD:check.sh");
    const evil = Bun.spawnSync(["git", "hash-object", "-w", "--stdin"], { cwd: root, stdin: Buffer.from("exit 0\n") }).stdout.toString().trim();
    chmodSync(objectPath(root, blob), 0o644);
    rmSync(objectPath(root, blob));
    copyFileSync(objectPath(root, evil), objectPath(root, blob));
    expect(tamperedObjects({ repo: root, since })).toEqual([`objects/${blob.slice(0, 2)}/${blob.slice(2)} does not hold the object its name says`]);
    rmSync(objectPath(root, blob));
    symlinkSync(objectPath(root, evil), objectPath(root, blob));
    expect(tamperedObjects({ repo: root, since })).toEqual([`objects/${blob.slice(0, 2)}/${blob.slice(2)} is a symbolic link`]);
  });

  test("a fan-out folder replaced by a link to a folder of other objects is named, not read through", () => {
    const root = repo();
    const since = Date.now();
    const blob = git(root, "rev-parse", "HEAD:check.sh");
    const fan = join(root, ".git", "objects", blob.slice(0, 2));
    const elsewhere = join(root, "..", "elsewhere");
    cpSync(fan, elsewhere, { recursive: true });
    rmSync(fan, { recursive: true, force: true });
    symlinkSync(elsewhere, fan);
    expect(tamperedObjects({ repo: root, since })).toEqual([`objects/${blob.slice(0, 2)} is a symbolic link`]);
  });

  test("a pack whose bytes were changed does not verify; a written alternates file is named", () => {
    const root = repo();
    git(root, "repack", "-adq");
    const since = Date.now();
    const packDir = join(root, ".git", "objects", "pack");
    const pack = readdirSync(packDir).find((f) => f.endsWith(".pack"))!;
    chmodSync(join(packDir, pack), 0o644);
    appendFileSync(join(packDir, pack), "trailing bytes");
    writeFileSync(join(root, ".git", "objects", "info", "alternates"), "/elsewhere/objects\n");
    const found = tamperedObjects({ repo: root, since });
    expect(found).toHaveLength(2);
    expect(found[0]).toStartWith(`objects/pack/${pack.replace(/\.pack$/, "")} does not verify`);
    expect(found[1]).toBe("objects/info/alternates was written: git would read objects from elsewhere");
  });
});
