// The object store's proof of itself (lib/repo/object-store.ts), on a real repository: what was
// written since a moment is checked against its name; an object rewritten under another's name, a
// link, a damaged pack and a written alternates file are named; honest writes are not.
import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, chmodSync, copyFileSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { recordObjectStore, tamperedObjects } from "../../lib/repo/object-store.ts";
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
/** The baseline, recorded as a launch records it (before the attempt). */
const proofsOf = (root: string) => join(root, "..", "object-proofs.json");
const baseline = (root: string) => recordObjectStore({ repo: root, proofs: proofsOf(root) });
const objectPath = (root: string, id: string) => join(root, ".git", "objects", id.slice(0, 2), id.slice(2));

describe("tamperedObjects", () => {
  test("honest writes since the moment (a commit, a repack) are not named; nothing before the moment is read", () => {
    const root = repo();
    const since = Date.now();
    writeFileSync(join(root, "more.txt"), "more\n");
    git(root, "add", "-A");
    git(root, "commit", "-qm", "more");
    expect(tamperedObjects({ repo: root, since, proofs: proofsOf(root) })).toEqual([]);
    git(root, "repack", "-adq");
    expect(tamperedObjects({ repo: root, since, proofs: proofsOf(root) })).toEqual([]);
  });

  test("a blob rewritten under its own name with another's bytes is named; so is a link in its place", () => {
    const root = repo();
    const since = Date.now();
    const blob = git(root, "rev-parse", "HEAD:check.sh");
    const evil = Bun.spawnSync(["git", "hash-object", "-w", "--stdin"], { cwd: root, stdin: Buffer.from("exit 0\n") })
      .stdout.toString()
      .trim();
    chmodSync(objectPath(root, blob), 0o644);
    rmSync(objectPath(root, blob));
    copyFileSync(objectPath(root, evil), objectPath(root, blob));
    expect(tamperedObjects({ repo: root, since, proofs: proofsOf(root) })).toEqual([
      `objects/${blob.slice(0, 2)}/${blob.slice(2)} does not hold the object its name says`,
    ]);
    rmSync(objectPath(root, blob));
    symlinkSync(objectPath(root, evil), objectPath(root, blob));
    expect(tamperedObjects({ repo: root, since, proofs: proofsOf(root) })).toEqual([`objects/${blob.slice(0, 2)}/${blob.slice(2)} is a symbolic link`]);
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
    expect(tamperedObjects({ repo: root, since, proofs: proofsOf(root) })).toEqual([`objects/${blob.slice(0, 2)} is a symbolic link`]);
  });

  test("a pack whose bytes were changed does not verify; a written alternates file is named", () => {
    const root = repo();
    git(root, "repack", "-adq");
    baseline(root);
    const since = Date.now();
    const packDir = join(root, ".git", "objects", "pack");
    const pack = readdirSync(packDir).find((f) => f.endsWith(".pack"))!;
    chmodSync(join(packDir, pack), 0o644);
    appendFileSync(join(packDir, pack), "trailing bytes");
    writeFileSync(join(root, ".git", "objects", "info", "alternates"), "/elsewhere/objects\n");
    const found = tamperedObjects({ repo: root, since, proofs: proofsOf(root) });
    expect(found).toHaveLength(2);
    expect(found[0]).toBe(`objects/pack/${pack} was rewritten (its bytes are not those it held before the attempt)`);
    expect(found[1]).toBe("objects/info/alternates was written: git would read objects from elsewhere");
  });
});

describe("packs: what the attempt could change, at the cost of what it changed", () => {
  test("a pack git freshened (its times moved, its bytes the same) is not named; verified nowhere", () => {
    const root = repo();
    git(root, "repack", "-adq");
    baseline(root);
    const since = Date.now();
    const packDir = join(root, ".git", "objects", "pack");
    for (const f of readdirSync(packDir)) utimesSync(join(packDir, f), new Date(), new Date());
    expect(tamperedObjects({ repo: root, since, proofs: proofsOf(root) })).toEqual([]);
  });

  test("a pack under a name that is not pack-<hex>, with an index git reads, is verified: one that does not verify is named", () => {
    const root = repo();
    baseline(root);
    const since = Date.now();
    const packDir = join(root, ".git", "objects", "pack");
    git(root, "repack", "-adq");
    const pack = readdirSync(packDir)
      .find((f) => f.endsWith(".pack"))!
      .replace(/\.pack$/, "");
    for (const ext of ["pack", "idx"]) copyFileSync(join(packDir, `${pack}.${ext}`), join(packDir, `evil.${ext}`));
    expect(tamperedObjects({ repo: root, since, proofs: proofsOf(root) })).toEqual([]);
    chmodSync(join(packDir, "evil.pack"), 0o644);
    appendFileSync(join(packDir, "evil.pack"), "x");
    rmSync(proofsOf(root));
    baseline(root);
    writeFileSync(join(packDir, "evil2.pack"), readFileSync(join(packDir, "evil.pack")));
    copyFileSync(join(packDir, "evil.idx"), join(packDir, "evil2.idx"));
    const found = tamperedObjects({ repo: root, since, proofs: proofsOf(root) });
    expect(found).toHaveLength(1);
    expect(found[0]).toStartWith("objects/pack/evil2 does not verify");
  });

  test("a pack with no index (an import killed between its two renames) is read by no git and named nothing; once an index comes, the pack is verified with it", () => {
    const root = repo();
    git(root, "repack", "-adq");
    const packDir = join(root, ".git", "objects", "pack");
    const pack = readdirSync(packDir)
      .find((f) => f.endsWith(".pack"))!
      .replace(/\.pack$/, "");
    const aside = join(root, "..", "aside");
    mkdirSync(aside);
    for (const ext of ["pack", "idx"]) copyFileSync(join(packDir, `${pack}.${ext}`), join(aside, `${pack}.${ext}`));
    rmSync(join(packDir, `${pack}.idx`), { force: true });
    rmSync(join(packDir, `${pack}.pack`), { force: true });
    baseline(root);
    const since = Date.now();
    writeFileSync(join(packDir, "cut.pack"), Buffer.concat([readFileSync(join(aside, `${pack}.pack`)), Buffer.from("x")]));
    expect(tamperedObjects({ repo: root, since, proofs: proofsOf(root) })).toEqual([]);
    copyFileSync(join(aside, `${pack}.idx`), join(packDir, "cut.idx"));
    const found = tamperedObjects({ repo: root, since, proofs: proofsOf(root) });
    expect(found).toHaveLength(1);
    expect(found[0]).toStartWith("objects/pack/cut does not verify");
  });

  test("a FIFO or a link in the pack folder is named, never opened", () => {
    const root = repo();
    baseline(root);
    const since = Date.now();
    const packDir = join(root, ".git", "objects", "pack");
    mkdirSync(packDir, { recursive: true });
    Bun.spawnSync(["mkfifo", join(packDir, "x.pack")]);
    symlinkSync("/dev/zero", join(packDir, "y.idx"));
    expect(tamperedObjects({ repo: root, since, proofs: proofsOf(root) }).sort()).toEqual([
      "objects/pack/x.pack is a FIFO",
      "objects/pack/y.idx is a symbolic link",
    ]);
  });
});
