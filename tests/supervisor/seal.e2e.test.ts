// The seal (lib/supervisor/seal.ts): what the agent left, committed on the agent's side, with the
// real git and the real bwrap. What the agent planted in its checkout and git folder (a nested
// repository's filter driver, a FIFO) runs or blocks there, never with loop's rights or keys, and
// never past the deadline.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeAttemptGitDir } from "../../lib/repo/attempt-git.ts";
import { syncTree } from "../../lib/repo/tree-sync.ts";
import { probeSandbox } from "../../lib/supervisor/sandbox.ts";
import { sealAttempt } from "../../lib/supervisor/seal.ts";
import { testEnv } from "../helpers/env.ts";
import { git, makeRepo } from "../helpers/repo.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const probe = probeSandbox(process.env.PATH ?? "");
const bwrap = probe.ok ? probe.bwrap : null;

function attempt() {
  const { dir, root } = makeRepo({ prefix: "loop-seal-", files: { "README.md": "# r\n" } });
  dirs.push(dir);
  const head = git(root, "rev-parse", "HEAD");
  const wt = join(dir, "worktrees", "a");
  const sessionDir = join(dir, "state", "sessions", "a", "1");
  mkdirSync(wt, { recursive: true });
  mkdirSync(sessionDir, { recursive: true });
  syncTree({ repo: root, dir: wt, commit: head, keep: [], stampsFile: join(dir, "stamps.json"), untracked: "remove" });
  const gitDir = join(sessionDir, "git");
  makeAttemptGitDir({ repo: root, gitDir, worktree: wt, branch: "loop/t/item/a", head, refs: {}, excludes: [] });
  const common = join(root, ".git");
  const request = (box: string) => ({
    bwrap: box,
    worktree: wt,
    stateRoot: join(dir, "state"),
    worktrees: join(dir, "worktrees"),
    commonDir: common,
    gitDir: { path: gitDir, writable: true },
    readOnly: [],
    writable: [],
    homes: [],
    programs: [],
    env: testEnv(),
  });
  return { dir, root, wt, gitDir, sessionDir, head, request };
}

/** A nested repository whose filter driver writes a marker (and the key it can see) to `marker` when git cleans `f`. */
function plantFilter(wt: string, marker: string): void {
  const sub = join(wt, "sub");
  mkdirSync(sub);
  Bun.spawnSync(["git", "init", "-q"], { cwd: sub, env: testEnv() });
  writeFileSync(join(sub, "payload.sh"), `echo "ran key=$ANTHROPIC_API_KEY" >> ${marker}; cat\n`);
  writeFileSync(join(sub, ".gitattributes"), "f filter=evil\n");
  Bun.spawnSync(["git", "config", "filter.evil.clean", "sh payload.sh"], { cwd: sub, env: testEnv() });
  writeFileSync(join(sub, "f"), "1\n");
  Bun.spawnSync(["sh", "-c", "git add -A && git -c user.email=a@b -c user.name=a commit -qm s"], { cwd: sub, env: testEnv() });
  // Committed in the checkout as a gitlink, then touched: the next `git add -A` asks the submodule.
  Bun.spawnSync(["sh", "-c", "git add sub && git -c user.email=a@b -c user.name=a commit -qm gitlink && echo 2 > sub/f"], { cwd: wt, env: testEnv() });
  rmSync(marker, { force: true }); // the commits above ran it, outside any seal
}

describe("sealAttempt", () => {
  test("commits what was left on the attempt's branch, never what setup made; nothing left: the head as it was", async () => {
    const a = attempt();
    writeFileSync(join(a.wt, "LICENSE"), "MIT\n");
    mkdirSync(join(a.wt, ".venv"));
    writeFileSync(join(a.wt, ".venv", "pyvenv.cfg"), "home=/usr\n");
    const r = await sealAttempt({
      worktree: a.wt,
      gitDir: a.gitDir,
      exclude: [".venv"],
      message: "loop: leftovers",
      sandbox: null,
      env: testEnv(),
      attempt: {},
    });
    expect(r.ok && r.committed).toBe(true);
    const head = r.ok ? r.head : "";
    const files = Bun.spawnSync(["git", "--git-dir", a.gitDir, "ls-tree", "-r", "--name-only", head], { env: testEnv() }).stdout.toString().trim().split("\n");
    expect(files.sort()).toEqual(["LICENSE", "README.md"]);
    expect(await sealAttempt({ worktree: a.wt, gitDir: a.gitDir, exclude: [".venv"], message: "again", sandbox: null, env: testEnv(), attempt: {} })).toEqual({
      ok: true,
      committed: false,
      head,
    });
  });

  test("what setup made that git ignores (the project's .gitignore, the attempt's info/exclude) is left out too, and a stale lock of a killed git is cleared", async () => {
    const a = attempt();
    writeFileSync(join(a.wt, ".gitignore"), "node_modules/\n");
    mkdirSync(join(a.wt, "node_modules", "dep"), { recursive: true });
    writeFileSync(join(a.wt, "node_modules", "dep", "index.js"), "module.exports = 42;\n");
    writeFileSync(join(a.gitDir, "info", "exclude"), "/prepared.txt\n");
    writeFileSync(join(a.wt, "prepared.txt"), "ready\n");
    mkdirSync(join(a.wt, "build"));
    writeFileSync(join(a.wt, "build", "out"), "made\n");
    writeFileSync(join(a.wt, "src.txt"), "the agent's\n");
    // The agent's git was killed while it moved the branch: its lock is left in the attempt's git folder.
    writeFileSync(join(a.gitDir, "refs", "heads", "loop", "t", "item", "a.lock"), "");
    const r = await sealAttempt({
      worktree: a.wt,
      gitDir: a.gitDir,
      exclude: ["node_modules", "prepared.txt", "build"],
      message: "m",
      sandbox: null,
      env: testEnv(),
      attempt: {},
    });
    expect(r).toMatchObject({ ok: true, committed: true });
    const files = git(a.root, "--git-dir", a.gitDir, "ls-tree", "-r", "--name-only", r.ok ? r.head : "HEAD").split("\n");
    expect(files.sort()).toEqual([".gitignore", "README.md", "src.txt"]);
  });

  test("without the sandbox it runs as the agent ran: a planted filter driver runs, but with none of loop's keys", async () => {
    const a = attempt();
    const marker = join(a.dir, "ran.txt");
    plantFilter(a.wt, marker);
    const r = await sealAttempt({
      worktree: a.wt,
      gitDir: a.gitDir,
      exclude: [],
      message: "m",
      sandbox: null,
      env: { ...testEnv(), ANTHROPIC_API_KEY: "canary-seal-key" },
      attempt: {},
    });
    expect(r.ok).toBe(true);
    expect(readFileSync(marker, "utf8")).toContain("ran key=\n");
  });

  test.skipIf(!bwrap)("in the sandbox a planted filter driver cannot write outside the checkout, reach the network, or read a key", async () => {
    const a = attempt();
    const marker = join(a.dir, "ran.txt");
    plantFilter(a.wt, marker);
    const r = await sealAttempt({
      worktree: a.wt,
      gitDir: a.gitDir,
      exclude: [],
      message: "m",
      sandbox: { request: a.request(bwrap!), sessionDir: a.sessionDir },
      env: { ...testEnv(), ANTHROPIC_API_KEY: "canary-seal-key" },
      attempt: {},
    });
    expect(r.ok).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });

  test("links, hard links and FIFOs the agent planted in its git folder are removed before git writes there, never written through", async () => {
    const a = attempt();
    const victim = join(a.dir, "victim.txt");
    const hard = join(a.dir, "hard.txt");
    writeFileSync(victim, "keep\n");
    writeFileSync(hard, "keep too\n");
    symlinkSync(victim, join(a.gitDir, "COMMIT_EDITMSG"));
    mkdirSync(join(a.gitDir, "logs", "refs", "heads", "loop", "t", "item"), { recursive: true });
    linkSync(hard, join(a.gitDir, "logs", "refs", "heads", "loop", "t", "item", "a"));
    Bun.spawnSync(["mkfifo", join(a.gitDir, "logs", "HEAD")]);
    writeFileSync(join(a.wt, "LICENSE"), "MIT\n");
    const r = await sealAttempt({ worktree: a.wt, gitDir: a.gitDir, exclude: [], message: "m", sandbox: null, env: testEnv(), attempt: {}, timeoutMs: 20_000 });
    expect(r).toMatchObject({ ok: true, committed: true });
    expect(readFileSync(victim, "utf8")).toBe("keep\n");
    expect(readFileSync(hard, "utf8")).toBe("keep too\n");
  });

  test("a filter that never ends (a FIFO, a sleep) is ended at the deadline, with its whole group, and said", async () => {
    const a = attempt();
    writeFileSync(join(a.wt, ".gitattributes"), "slow filter=slow\n");
    writeFileSync(join(a.wt, "slow"), "x\n");
    // A duration no other test sleeps, so that what is found is this filter's.
    writeFileSync(join(a.gitDir, "config"), readFileSync(join(a.gitDir, "config"), "utf8") + '[filter "slow"]\n\tclean = sleep 300.25\n');
    for (const sandbox of [null, ...(bwrap ? [{ request: a.request(bwrap), sessionDir: a.sessionDir }] : [])]) {
      const r = await sealAttempt({ worktree: a.wt, gitDir: a.gitDir, exclude: [], message: "m", sandbox, env: testEnv(), attempt: {}, timeoutMs: 1500 });
      expect(r).toMatchObject({ ok: false, timedOut: true });
      // Killed, they are gone once the kernel has run them (a loaded machine may take a moment).
      let left = "";
      for (let i = 0; i < 100; i++) {
        left = Bun.spawnSync(["pgrep", "-f", "sleep 300.25"]).stdout.toString().trim();
        if (left === "") break;
        await Bun.sleep(100);
      }
      expect(left).toBe("");
    }
  });
});
