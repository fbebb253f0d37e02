// The private git folder of an attempt (lib/repo/attempt-git.ts) and the import of what it made
// (lib/repo/object-import.ts): the agent's git works in its checkout as in any clone, writes only
// to its own folder, and loop takes out only objects, each proven.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { makeAttemptGitDir } from "../../lib/repo/attempt-git.ts";
import { importObjects } from "../../lib/repo/object-import.ts";
import { syncTree } from "../../lib/repo/tree-sync.ts";
import { testEnv } from "../helpers/env.ts";
import { git, makeRepo } from "../helpers/repo.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A repository, a checkout of its main written by loop, and an attempt's git folder for it. */
function attempt() {
  const { dir, root } = makeRepo({ prefix: "loop-agit-", files: { "tests/check.sh": "test -f LICENSE\n", "README.md": "# r\n" } });
  dirs.push(dir);
  const head = git(root, "rev-parse", "HEAD");
  const wt = join(dir, "wt");
  mkdirSync(wt);
  syncTree({ repo: root, dir: wt, commit: head, keep: [], stampsFile: join(dir, "stamps.json"), untracked: "remove" });
  writeFileSync(join(wt, ".git"), "gitdir: /somewhere/else\n"); // replaced, never followed
  const gitDir = join(dir, "session", "git");
  mkdirSync(join(dir, "session"));
  makeAttemptGitDir({
    repo: root,
    gitDir,
    worktree: wt,
    branch: "loop/t/item/a",
    head,
    refs: { "refs/heads/main": head, "refs/remotes/origin/main": head },
    excludes: [".aider*"],
  });
  return { dir, root, wt, gitDir, head };
}

/** The agent's git in its checkout: found from the checkout, as any tool finds it. */
const agentGit = (cwd: string, ...args: string[]) => {
  const env = { ...testEnv() };
  const r = Bun.spawnSync(["git", ...args], { cwd, env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.toString().trim();
};

const storeFiles = (root: string) =>
  readdirSync(join(root, ".git", "objects"), { recursive: true })
    .map(String)
    .filter((f) => !f.startsWith("info") && !f.startsWith("pack"))
    .sort();

describe("makeAttemptGitDir", () => {
  test("the agent's git sees a clean checkout on its branch, the base beside it, and commits into its own folder only", () => {
    const a = attempt();
    expect(readFileSync(join(a.wt, ".git"), "utf8")).toBe(`gitdir: ${a.gitDir}\n`);
    expect(agentGit(a.wt, "status", "--porcelain")).toBe("");
    expect(agentGit(a.wt, "branch", "--show-current")).toBe("loop/t/item/a");
    expect(agentGit(a.wt, "rev-parse", "main")).toBe(a.head);
    expect(agentGit(a.wt, "rev-parse", "origin/main")).toBe(a.head);
    const before = storeFiles(a.root);
    writeFileSync(join(a.wt, "LICENSE"), "MIT\n");
    agentGit(a.wt, "add", "-A");
    agentGit(a.wt, "commit", "-qm", "license");
    const made = agentGit(a.wt, "rev-parse", "HEAD");
    // Nothing of it in the repository: not its objects, not its branch.
    expect(storeFiles(a.root)).toEqual(before);
    expect(git(a.root, "for-each-ref", "--format=%(refname)")).toBe("refs/heads/main");
    expect(readdirSync(join(a.gitDir, "objects")).filter((f) => /^[0-9a-f]{2}$/.test(f)).length).toBeGreaterThan(0);
    expect(made).not.toBe(a.head);
  });

  test("a link or a folder at the checkout's .git is replaced, not followed", () => {
    const a = attempt();
    const victim = join(a.dir, "victim");
    writeFileSync(victim, "keep\n");
    rmSync(join(a.wt, ".git"));
    symlinkSync(victim, join(a.wt, ".git"));
    makeAttemptGitDir({ repo: a.root, gitDir: join(a.dir, "session", "git2"), worktree: a.wt, branch: "loop/t/item/a", head: a.head, refs: {}, excludes: [] });
    expect(readFileSync(victim, "utf8")).toBe("keep\n");
    expect(lstatSync(join(a.wt, ".git")).isFile()).toBe(true);
  });

  test("made whole or not at all: one cut short leaves no folder at its place, and a half-made one left behind is replaced", () => {
    const a = attempt();
    const gitDir = join(a.dir, "session", "git3");
    // read-tree, the last step, fails: what was written before it never stands at the attempt's place.
    expect(() => makeAttemptGitDir({ repo: a.root, gitDir, worktree: a.wt, branch: "loop/t/item/a", head: "0".repeat(40), refs: {}, excludes: [] })).toThrow();
    expect(existsSync(gitDir)).toBe(false);
    expect(existsSync(`${gitDir}.making`)).toBe(true);
    makeAttemptGitDir({ repo: a.root, gitDir, worktree: a.wt, branch: "loop/t/item/a", head: a.head, refs: {}, excludes: [] });
    expect(existsSync(`${gitDir}.making`)).toBe(false);
    expect(git(a.wt, "rev-parse", "--absolute-git-dir")).toBe(gitDir);
    expect(git(a.wt, "status", "--porcelain")).toBe("");
  });
});

describe("importObjects", () => {
  test("the attempt's loose objects and packs (any name) come in once each is proven", async () => {
    const a = attempt();
    writeFileSync(join(a.wt, "LICENSE"), "MIT\n");
    agentGit(a.wt, "add", "-A");
    agentGit(a.wt, "commit", "-qm", "license");
    writeFileSync(join(a.wt, "more.txt"), "more\n");
    agentGit(a.wt, "add", "-A");
    agentGit(a.wt, "commit", "-qm", "more");
    const head = agentGit(a.wt, "rev-parse", "HEAD");
    // One commit packed under a name that is not pack-<hex>.
    const packed = Bun.spawnSync(["git", "pack-objects", "--revs", join(a.dir, "p")], {
      cwd: a.wt,
      stdin: Buffer.from(`${head}\n^${head}~1\n`),
      stdout: "pipe",
    })
      .stdout.toString()
      .trim();
    mkdirSync(join(a.gitDir, "objects", "pack"), { recursive: true });
    Bun.spawnSync(["cp", join(a.dir, `p-${packed}.pack`), join(a.gitDir, "objects", "pack", "evil.pack")]);
    const r = await importObjects({ repo: a.root, from: join(a.gitDir, "objects") });
    expect(r.refused).toEqual([]);
    expect(r.imported).toBeGreaterThan(0);
    expect(git(a.root, "cat-file", "-t", head)).toBe("commit");
    expect(git(a.root, "rev-list", "--objects", head).length).toBeGreaterThan(0);
  });

  test("an object file holding other bytes than its name says, a link, a FIFO: refused, named, not imported, nothing hangs", async () => {
    const a = attempt();
    const objects = join(a.gitDir, "objects");
    const blob = git(a.root, "rev-parse", "HEAD:tests/check.sh");
    // The protected test's blob id, holding "exit 0".
    mkdirSync(join(objects, blob.slice(0, 2)), { recursive: true });
    writeFileSync(join(objects, blob.slice(0, 2), blob.slice(2)), deflateSync(Buffer.from("blob 7\0exit 0\n")));
    const other = "ab".repeat(20);
    mkdirSync(join(objects, "ab"), { recursive: true });
    symlinkSync("/etc/passwd", join(objects, "ab", other.slice(2)));
    const fifo = "cd".repeat(20);
    mkdirSync(join(objects, "cd"), { recursive: true });
    Bun.spawnSync(["mkfifo", join(objects, "cd", fifo.slice(2))]);
    Bun.spawnSync(["mkfifo", join(objects, "pack", "x.pack")]);
    symlinkSync("/dev/zero", join(objects, "pack", "zero.pack"));
    const r = await importObjects({ repo: a.root, from: objects });
    expect(r.imported).toBe(0);
    expect(r.refused.map((x) => [x.kind, x.path]).sort()).toEqual(
      [
        ["mismatch", `objects/${blob.slice(0, 2)}/${blob.slice(2)}`],
        ["not_regular", `objects/ab/${other.slice(2)}`],
        ["not_regular", `objects/cd/${fifo.slice(2)}`],
        ["not_regular", "objects/pack/x.pack"],
        ["not_regular", "objects/pack/zero.pack"],
      ].sort(),
    );
    // The repository's own object is untouched.
    expect(git(a.root, "cat-file", "blob", blob)).toBe("test -f LICENSE");
  });

  test("an object larger than the bound is refused from its header, unread; in a pack, after indexing, before it joins the store", async () => {
    const a = attempt();
    const objects = join(a.gitDir, "objects");
    // A loose blob of 4 MiB against a 1 MiB bound: a few KiB of zeros on disk.
    const size = 4 * 2 ** 20;
    const body = Buffer.concat([Buffer.from(`blob ${size}\0`), Buffer.alloc(size)]);
    const id = new Bun.CryptoHasher("sha1").update(body).digest("hex");
    mkdirSync(join(objects, id.slice(0, 2)), { recursive: true });
    writeFileSync(join(objects, id.slice(0, 2), id.slice(2)), deflateSync(body));
    const small = await importObjects({ repo: a.root, from: objects, max: 1024 * 1024 });
    expect(small.refused.map((r) => r.kind)).toEqual(["too_large"]);
    // The same as a pack, with a small bound so the test stays small.
    rmSync(join(objects, id.slice(0, 2)), { recursive: true });
    writeFileSync(join(a.wt, "big.bin"), Buffer.alloc(2 * 1024 * 1024));
    agentGit(a.wt, "add", "-A");
    agentGit(a.wt, "commit", "-qm", "big");
    agentGit(a.wt, "repack", "-adq");
    const r = await importObjects({ repo: a.root, from: objects, max: 1024 * 1024 });
    expect(r.refused.map((x) => x.kind)).toEqual(["too_large"]);
    expect(r.refused[0]!.detail).toContain("over the 1 MiB bound");
    expect(
      existsSync(join(a.root, ".git", "objects", "pack")) ? readdirSync(join(a.root, ".git", "objects", "pack")).filter((f) => f.endsWith(".pack")) : [],
    ).toEqual([]);
  });
});
