// A folder made to hold exactly a commit's files from loop's own repository (lib/repo/tree-sync.ts):
// the blobs' bytes and the tree's modes, whatever the folder held, nothing in it followed.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readTree, syncTree, TreeRefused } from "../../lib/repo/tree-sync.ts";
import { git, makeRepo } from "../helpers/repo.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A repository whose main holds a script (executable), a link, nested folders and a .gitattributes that would convert. */
function fixture() {
  const { dir, root } = makeRepo({
    prefix: "loop-tree-",
    files: { "run.sh": "echo run $Id$\n", "src/a/b.txt": "deep\n", ".gitattributes": "*.txt eol=crlf\nrun.sh ident\n", "tests/check.sh": "test -f LICENSE\n" },
  });
  dirs.push(dir);
  chmodSync(join(root, "run.sh"), 0o755);
  symlinkSync("src/a/b.txt", join(root, "link"));
  git(root, "add", "-A");
  git(root, "commit", "-qm", "more");
  const out = join(dir, "out");
  mkdirSync(out);
  return { dir, root, out, head: git(root, "rev-parse", "HEAD"), stamps: join(dir, "stamps.json") };
}

const sync = (f: ReturnType<typeof fixture>, o: { keep?: string[]; untracked?: "remove" | "report"; commit?: string; dryRun?: boolean } = {}) =>
  syncTree({
    repo: f.root,
    dir: f.out,
    commit: o.commit ?? f.head,
    keep: o.keep ?? [],
    stampsFile: f.stamps,
    untracked: o.untracked ?? "remove",
    ...(o.dryRun ? { dryRun: true } : {}),
  });

describe("syncTree", () => {
  test("writes the blobs' raw bytes (no attribute converts them), the executable bit and the links of the tree", () => {
    const f = fixture();
    const r = sync(f);
    expect(r.written).toBe(5);
    expect(readFileSync(join(f.out, "src/a/b.txt"), "utf8")).toBe("deep\n"); // not CRLF: .gitattributes is not read
    expect(readFileSync(join(f.out, "run.sh"), "utf8")).toBe("echo run $Id$\n"); // not expanded
    expect(statSync(join(f.out, "run.sh")).mode & 0o100).toBe(0o100);
    expect(statSync(join(f.out, "tests/check.sh")).mode & 0o100).toBe(0);
    expect(readlinkSync(join(f.out, "link"))).toBe("src/a/b.txt");
    // Again: everything as loop left it, nothing written.
    expect(sync(f)).toMatchObject({ written: 0, unchanged: 5, removed: 0 });
  });

  test("removes what the commit does not hold (an ignored file, a nested repository), keeps what `keep` names and the top-level .git", () => {
    const f = fixture();
    sync(f);
    writeFileSync(join(f.out, "LICENSE"), "MIT\n");
    writeFileSync(join(f.out, ".gitignore"), ".gitignore\nLICENSE\n");
    mkdirSync(join(f.out, "sub/.git"), { recursive: true });
    mkdirSync(join(f.out, "node_modules/x"), { recursive: true });
    writeFileSync(join(f.out, "node_modules/x/index.js"), "1\n");
    writeFileSync(join(f.out, ".git"), "gitdir: /elsewhere\n");
    sync(f, { keep: ["node_modules"] });
    expect(existsSync(join(f.out, "LICENSE"))).toBe(false);
    expect(existsSync(join(f.out, ".gitignore"))).toBe(false);
    expect(existsSync(join(f.out, "sub"))).toBe(false);
    expect(readFileSync(join(f.out, "node_modules/x/index.js"), "utf8")).toBe("1\n");
    expect(readFileSync(join(f.out, ".git"), "utf8")).toBe("gitdir: /elsewhere\n");
  });

  test("a commit that holds what `keep` names (an attempt committed what setup made) leaves it as it is, never written over", () => {
    const f = fixture();
    sync(f);
    writeFileSync(join(f.out, "prepared.txt"), "setup's\n");
    mkdirSync(join(f.out, "node_modules/x"), { recursive: true });
    writeFileSync(join(f.out, "node_modules/x/index.js"), "setup's\n");
    writeFileSync(join(f.root, "prepared.txt"), "the agent's\n");
    mkdirSync(join(f.root, "node_modules/x"), { recursive: true });
    writeFileSync(join(f.root, "node_modules/x/index.js"), "the agent's\n");
    writeFileSync(join(f.root, "node_modules/x/more.js"), "the agent's\n");
    git(f.root, "add", "-A");
    git(f.root, "commit", "-qm", "commits setup's output");
    const r = sync(f, { keep: ["prepared.txt", "node_modules"], commit: git(f.root, "rev-parse", "HEAD") });
    expect(r).toMatchObject({ written: 0, removed: 0 });
    expect(readFileSync(join(f.out, "prepared.txt"), "utf8")).toBe("setup's\n");
    expect(readFileSync(join(f.out, "node_modules/x/index.js"), "utf8")).toBe("setup's\n");
    expect(existsSync(join(f.out, "node_modules/x/more.js"))).toBe(false);
  });

  test("a file with the right bytes that loop did not leave there (its times set by another) is written again", () => {
    const f = fixture();
    sync(f);
    const p = join(f.out, "src/a/b.txt");
    rmSync(p);
    writeFileSync(p, "deep\n");
    utimesSync(p, new Date(2000, 1, 1), new Date(2000, 1, 1));
    const r = sync(f);
    expect(r.restored).toEqual(["src/a/b.txt"]);
    expect(statSync(p).mtimeMs).toBeGreaterThan(new Date(2020, 1, 1).getTime());
  });

  test("links and FIFOs planted where files or folders belong are replaced, never followed or opened", () => {
    const f = fixture();
    sync(f);
    const victim = join(f.dir, "victim.txt");
    writeFileSync(victim, "keep me\n");
    const outside = join(f.dir, "outside");
    mkdirSync(outside);
    rmSync(join(f.out, "tests/check.sh"));
    symlinkSync(victim, join(f.out, "tests/check.sh"));
    rmSync(join(f.out, "src"), { recursive: true });
    symlinkSync(outside, join(f.out, "src"));
    rmSync(join(f.out, "run.sh"));
    Bun.spawnSync(["mkfifo", join(f.out, "run.sh")]);
    sync(f);
    expect(readFileSync(victim, "utf8")).toBe("keep me\n");
    expect(lstatSync(join(f.out, "tests/check.sh")).isFile()).toBe(true);
    expect(lstatSync(join(f.out, "src")).isDirectory()).toBe(true);
    expect(existsSync(join(outside, "a"))).toBe(false);
    expect(lstatSync(join(f.out, "run.sh")).isFile()).toBe(true);
    expect(readFileSync(join(f.out, "tests/check.sh"), "utf8")).toBe("test -f LICENSE\n");
  });

  test("`report` lists the top-most untracked paths and leaves them; a tracked file changed is written back and named", () => {
    const f = fixture();
    sync(f);
    mkdirSync(join(f.out, ".venv/bin"), { recursive: true });
    writeFileSync(join(f.out, ".venv/pyvenv.cfg"), "home = /usr\n");
    mkdirSync(join(f.out, "src/a/pkg.egg-info"));
    rmSync(join(f.out, "run.sh"));
    writeFileSync(join(f.out, "run.sh"), "changed by setup\n", { mode: 0o755 });
    const r = sync(f, { untracked: "report" });
    expect(r.untracked.sort()).toEqual([".venv", "src/a/pkg.egg-info"]);
    expect(r.restored).toEqual(["run.sh"]);
    expect(existsSync(join(f.out, ".venv/pyvenv.cfg"))).toBe(true);
    expect(readFileSync(join(f.out, "run.sh"), "utf8")).toBe("echo run $Id$\n");
  });

  test("a dry run changes nothing and says what differs", () => {
    const f = fixture();
    sync(f);
    writeFileSync(join(f.out, "new.txt"), "x\n");
    rmSync(join(f.out, "tests/check.sh"));
    const r = sync(f, { dryRun: true });
    expect(r.untracked).toEqual(["new.txt"]);
    expect(r.missing).toBe(1);
    expect(existsSync(join(f.out, "new.txt"))).toBe(true);
    expect(sync(f, { dryRun: true, commit: f.head }).missing).toBe(1);
  });

  test("moving to another commit writes what changed and removes what went", () => {
    const f = fixture();
    sync(f);
    git(f.root, "rm", "-q", "src/a/b.txt", "link");
    writeFileSync(join(f.root, "LICENSE"), "MIT\n");
    git(f.root, "add", "-A");
    git(f.root, "commit", "-qm", "next");
    const r = sync(f, { commit: git(f.root, "rev-parse", "HEAD") });
    expect(r.written).toBe(1);
    expect(existsSync(join(f.out, "src"))).toBe(false);
    expect(existsSync(join(f.out, "link"))).toBe(false);
    expect(readFileSync(join(f.out, "LICENSE"), "utf8")).toBe("MIT\n");
  });
});

describe("readTree", () => {
  test("refuses a commit holding a path no checkout may have (.git in any case, ..), whole", () => {
    const f = fixture();
    // A tree with a `.GIT` entry, made with plumbing (git add refuses it).
    const blob = Bun.spawnSync(["git", "hash-object", "-w", "--stdin"], { cwd: f.root, stdin: Buffer.from("[core]\n\tfsmonitor = evil\n") })
      .stdout.toString()
      .trim();
    const inner = Bun.spawnSync(["git", "mktree"], { cwd: f.root, stdin: Buffer.from(`100644 blob ${blob}\tconfig\n`) })
      .stdout.toString()
      .trim();
    const tree = Bun.spawnSync(["git", "mktree"], { cwd: f.root, stdin: Buffer.from(`040000 tree ${inner}\t.GIT\n100644 blob ${blob}\tok.txt\n`) })
      .stdout.toString()
      .trim();
    const commit = git(f.root, "commit-tree", tree, "-m", "evil");
    expect(() => readTree(f.root, commit)).toThrow(TreeRefused);
    expect(() => readTree(f.root, commit)).toThrow('".GIT/config"');
  });
});
