// Worktree effects (lib/repo/workspace.ts) on real git repositories: what is found where an item's
// worktree should be is never deleted with work in it, and leftovers are committed only inside a
// checkout of its own.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkoutBranch, checkWorktree, ensureBranch, ensureWorktree, landMerge, ReplacedError } from "../../lib/repo/workspace.ts";
import { gitExecSnapshot } from "../../lib/repo/git-exec.ts";
import { git, makeRepo } from "../helpers/project.ts";
import { removeDir } from "../helpers/fs.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function repo() {
  const r = makeRepo("loop-ws-");
  dirs.push(r.dir);
  git(r.root, "config", "commit.gpgsign", "false");
  return { root: r.root, wt: join(r.dir, "state", "workspaces", "a") };
}

describe("ensureWorktree", () => {
  test("creates the worktree and branch, then leaves a worktree on the branch alone", () => {
    const { root, wt } = repo();
    expect(ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" })).toEqual({ created: true, branchCreated: true, movedAside: null });
    writeFileSync(join(wt, "wip.txt"), "work\n");
    expect(ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" })).toEqual({
      created: false,
      branchCreated: false,
      movedAside: null,
    });
    expect(readFileSync(join(wt, "wip.txt"), "utf8")).toBe("work\n");
  });

  test("a directory with something in it that is not a checkout of the branch is moved aside, not deleted", () => {
    const { root, wt } = repo();
    ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" });
    writeFileSync(join(wt, "kept.txt"), "the only copy\n");
    rmSync(join(wt, ".git")); // broken, as a checkout the close path kept
    const r = ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" });
    expect(r.created).toBe(true);
    expect(r.movedAside).toStartWith(`${wt}.aside-`);
    expect(readFileSync(join(r.movedAside!, "kept.txt"), "utf8")).toBe("the only copy\n");
    expect(git(wt, "symbolic-ref", "--short", "HEAD")).toBe("loop/t/a");
    expect(existsSync(join(wt, "kept.txt"))).toBe(false);
  });

  test("a checkout on the branch whose .git names a git folder of someone else's making is not reused: moved aside, made again", () => {
    const { root, wt } = repo();
    ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" });
    // Convincing to git (HEAD on the branch, everything else through commondir in the repository),
    // but not the git folder loop made: a sandbox built from it would mount what commondir names.
    const fake = join(wt, ".fakegit");
    mkdirSync(fake);
    writeFileSync(join(fake, "HEAD"), "ref: refs/heads/loop/t/a\n");
    writeFileSync(join(fake, "commondir"), `${join(root, ".git")}\n`);
    writeFileSync(join(wt, ".git"), `gitdir: ${fake}\n`);
    expect(git(wt, "symbolic-ref", "--short", "HEAD")).toBe("loop/t/a");
    const r = ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" });
    expect(r.movedAside).toStartWith(`${wt}.aside-`);
    expect(readFileSync(join(r.movedAside!, ".git"), "utf8")).toBe(`gitdir: ${fake}\n`);
    expect(checkWorktree({ repo: root, worktree: wt, branch: "loop/t/a" })).toMatchObject({ ok: true, gitDir: join(root, ".git", "worktrees", "a") });
  });

  test("an empty directory is simply replaced", () => {
    const { root, wt } = repo();
    mkdirSync(wt, { recursive: true });
    expect(ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" }).movedAside).toBeNull();
    expect(readdirSync(join(wt, "..")).sort()).toEqual(["a"]);
  });

  test("a branch made a symbolic ref is refused, typed branch_replaced; nothing is made", () => {
    const { root, wt } = repo();
    git(root, "symbolic-ref", "refs/heads/loop/t/a", "refs/heads/main");
    let thrown: unknown;
    try {
      ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ReplacedError);
    expect((thrown as ReplacedError).replaced).toBe("branch_replaced");
    expect(existsSync(wt)).toBe(false);
  });
});

describe("ensureBranch", () => {
  test("makes the item branch at its start point once; a symbolic one is refused, typed", () => {
    const { root } = repo();
    const main = git(root, "rev-parse", "main");
    expect(ensureBranch({ repo: root, branch: "loop/t/item/a", startPoint: "main", aside: "loop/t/aside/a/e0-a1" })).toEqual({
      created: true,
      head: main,
      movedBelow: [],
    });
    expect(ensureBranch({ repo: root, branch: "loop/t/item/a", startPoint: "main", aside: "loop/t/aside/a/e0-a1" })).toEqual({
      created: false,
      head: main,
      movedBelow: [],
    });
    git(root, "symbolic-ref", "refs/heads/loop/t/item/b", "refs/heads/main");
    expect(() => ensureBranch({ repo: root, branch: "loop/t/item/b", startPoint: "main", aside: "loop/t/aside/b/e0-a1" })).toThrow(ReplacedError);
  });

  test("refs planted below the item branch's name (which would keep it from being made) are moved aside, never built on", () => {
    const { root } = repo();
    git(root, "branch", "loop/t/item/b/x", "main");
    const r = ensureBranch({ repo: root, branch: "loop/t/item/b", startPoint: "main", aside: "loop/t/aside/b/e0-a1" });
    expect(r).toMatchObject({ created: true, movedBelow: ["loop/t/item/b/x"] });
    expect(git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads/loop/t/")).toBe("loop/t/aside/b/e0-a1/x\nloop/t/item/b");
  });
});

describe("landMerge", () => {
  test("a landing directory that is not a checkout of the target is moved aside and reported, and the merge goes on", () => {
    const { root, wt } = repo();
    ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" });
    writeFileSync(join(wt, "feature.txt"), "done\n");
    git(wt, "add", "-A");
    git(wt, "commit", "-qm", "feature");
    const landing = join(wt, "..", "_landing");
    mkdirSync(landing, { recursive: true });
    writeFileSync(join(landing, "someone.txt"), "not loop's\n");
    const aside: string[] = [];
    const r = landMerge({
      repo: root,
      landingDir: landing,
      target: "loop/t/target",
      base: "main",
      branch: "loop/t/a",
      message: "land a",
      onMovedAside: (p) => aside.push(p),
    });
    expect(r.outcome).toBe("merged");
    expect(aside).toHaveLength(1);
    expect(readFileSync(join(aside[0]!, "someone.txt"), "utf8")).toBe("not loop's\n");
    expect(git(root, "show", "loop/t/target:feature.txt")).toBe("done");
  });
});

describe("landMerge of a commit the target holds", () => {
  function landed() {
    const { root, wt } = repo();
    ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" });
    writeFileSync(join(wt, "feature.txt"), "done\n");
    git(wt, "add", "-A");
    git(wt, "commit", "-qm", "feature");
    const landing = join(wt, "..", "_landing");
    const land = (branch: string, commit: string | null = null) =>
      landMerge({ repo: root, landingDir: landing, target: "loop/t/target", base: "main", branch, commit, message: `land ${branch}` });
    const first = land("loop/t/a", git(root, "rev-parse", "loop/t/a"));
    expect(first.outcome).toBe("merged");
    return { root, land, merge: first.commit! };
  }

  test("the same commit landed again (a step killed after its merge): merged, the same merge commit, the target unmoved", () => {
    const { root, land, merge } = landed();
    expect(land("loop/t/a", git(root, "rev-parse", "loop/t/a"))).toEqual({ outcome: "merged", code: "merged", commit: merge, reason: "merged" });
    expect(git(root, "rev-parse", "loop/t/target")).toBe(merge);
  });

  test("a branch that adds nothing to the target (started from it after a reset): already_contained, nothing merged", () => {
    const { root, land, merge } = landed();
    git(root, "branch", "loop/t/a-again", "loop/t/target");
    const r = land("loop/t/a-again", git(root, "rev-parse", "loop/t/a-again"));
    expect(r).toEqual({
      outcome: "already_contained",
      code: "already_contained",
      commit: merge,
      reason: `already contained in loop/t/target (at ${merge.slice(0, 12)}): nothing was merged, nothing changed`,
    });
    expect(git(root, "rev-parse", "loop/t/target")).toBe(merge);
    // And one holding an ancestor of the target (it started from base, changed nothing).
    git(root, "branch", "loop/t/from-base", "main");
    expect(land("loop/t/from-base").outcome).toBe("already_contained");
  });
});

describe("files of the worktree's git dir the agent can write (checkWorktree, checkoutBranch, the hooks)", () => {
  test("HEAD replaced by a FIFO, a hook that is a FIFO: said as not a regular file, never a read that hangs", () => {
    const { root, wt } = repo();
    ensureWorktree({ repo: root, path: wt, branch: "loop/t/a", startPoint: "main" });
    const gitDir = git(wt, "rev-parse", "--absolute-git-dir");
    rmSync(join(gitDir, "HEAD"));
    expect(Bun.spawnSync(["mkfifo", join(gitDir, "HEAD")]).exitCode).toBe(0);
    const checked = checkWorktree({ repo: root, worktree: wt, branch: "loop/t/a" });
    expect(checked).toEqual({ ok: false, why: expect.stringContaining("HEAD: not a regular file") });
    expect(checkoutBranch(wt)).toBeNull();
    const hooks = join(git(root, "rev-parse", "--absolute-git-dir"), "hooks");
    mkdirSync(hooks, { recursive: true });
    expect(Bun.spawnSync(["mkfifo", join(hooks, "pre-commit")]).exitCode).toBe(0);
    expect(gitExecSnapshot(root).entries).toContain(`hook ${join(hooks, "pre-commit")} (not a regular file)`);
  });
});
