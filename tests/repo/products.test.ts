// What setup made, as it made it (lib/repo/products.ts): a file rewritten, even to the same size and
// with its modification time set back, a file added or removed, a file replaced by a link, are each
// named; what nobody touched is not.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { changedProducts, setupKey, stampProducts } from "../../lib/repo/products.ts";
import { git, makeRepo } from "../helpers/repo.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function made(): string {
  const dir = mkdtempSync(join(tmpdir(), "loop-products-"));
  dirs.push(dir);
  mkdirSync(join(dir, "vendor", "lib"), { recursive: true });
  writeFileSync(join(dir, "vendor", "checker.sh"), "test -f LICENSE || exit 1\n");
  writeFileSync(join(dir, "vendor", "lib", "a.js"), "module.exports = 1;\n");
  writeFileSync(join(dir, ".venv-marker"), "x\n");
  writeFileSync(join(dir, "src.txt"), "the project's own file\n");
  return dir;
}

describe("the stamps of what setup made", () => {
  test("untouched: nothing named; the project's own files are not looked at", () => {
    const dir = made();
    const stamps = stampProducts(dir, ["vendor", ".venv-marker"]);
    expect(Object.keys(stamps).sort()).toEqual([".venv-marker", "vendor", "vendor/checker.sh", "vendor/lib", "vendor/lib/a.js"]);
    writeFileSync(join(dir, "src.txt"), "changed by the agent: its own work\n");
    expect(changedProducts(dir, ["vendor", ".venv-marker"], stamps)).toEqual([]);
  });

  test("a file rewritten to the same size with its times set back, one added, one removed, one made a link: each named", () => {
    const dir = made();
    const stamps = stampProducts(dir, ["vendor", ".venv-marker"]);
    const checker = join(dir, "vendor", "checker.sh");
    const before = statSync(checker);
    writeFileSync(checker, "exit 0 #########################\n".slice(0, before.size));
    utimesSync(checker, before.atime, before.mtime);
    writeFileSync(join(dir, "vendor", "lib", "b.js"), "planted\n");
    rmSync(join(dir, ".venv-marker"));
    rmSync(join(dir, "vendor", "lib", "a.js"));
    symlinkSync("/etc/passwd", join(dir, "vendor", "lib", "a.js"));
    expect(changedProducts(dir, ["vendor", ".venv-marker"], stamps)).toEqual([".venv-marker", "vendor/checker.sh", "vendor/lib/a.js", "vendor/lib/b.js"]);
  });
});

describe("setupKey: what setup's products are made from, at a commit", () => {
  const { dir, root } = makeRepo({
    prefix: "loop-setupkey-",
    files: { "package.json": "{}\n", "package-lock.json": '{"v":1}\n', "src/a.js": "1\n", "deps/list.txt": "x\n" },
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const commit = (files: Record<string, string>): string => {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
    git(root, "add", "-A");
    git(root, "commit", "-qm", "change");
    return git(root, "rev-parse", "HEAD").trim();
  };
  const first = git(root, "rev-parse", "HEAD").trim();

  test("the same lockfiles give the same key, whatever else changed; a changed lockfile or command another", () => {
    const code = commit({ "src/a.js": "2\n" });
    const lock = commit({ "package-lock.json": '{"v":2}\n' });
    const k = (c: string, command = "npm ci") => setupKey({ repo: root, commit: c, command });
    expect(k(code)).toBe(k(first));
    expect(k(lock)).not.toBe(k(first));
    expect(k(first, "npm install")).not.toBe(k(first));
  });

  test("the requirements/ folder counts as one of the lockfiles: a pin changed there is another key", () => {
    const before = commit({ "requirements.txt.note": "x\n" });
    mkdirSync(join(root, "requirements"), { recursive: true });
    const pinned = commit({ "requirements/tests.txt": "pytest==8.3.5\n" });
    const repinned = commit({ "requirements/tests.txt": "pytest==8.4.2\n" });
    const k = (c: string) => setupKey({ repo: root, commit: c, command: "pip install -r requirements/tests.txt" });
    expect(k(pinned)).not.toBe(k(before));
    expect(k(repinned)).not.toBe(k(pinned));
  });

  test("workspace.setupKey's paths replace the lockfiles: a file or a folder, taken literally", () => {
    const listed = commit({ "deps/list.txt": "y\n" });
    const before = git(root, "rev-parse", "HEAD~1").trim();
    const k = (c: string) => setupKey({ repo: root, commit: c, command: "make deps", paths: ["deps"] });
    expect(k(listed)).not.toBe(k(before));
    expect(setupKey({ repo: root, commit: listed, command: "npm ci" })).toBe(setupKey({ repo: root, commit: before, command: "npm ci" }));
    // A glob is a name, not a pattern: it matches nothing here, so the key holds only the command.
    expect(setupKey({ repo: root, commit: listed, command: "x", paths: ["dep*"] })).toBe(
      setupKey({ repo: root, commit: first, command: "x", paths: ["dep*"] }),
    );
  });
});
