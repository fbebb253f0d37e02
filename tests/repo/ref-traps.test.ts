// What loop's own ref writes could be turned into (lib/repo/ref-traps.ts): a link, a FIFO or a hard
// link where git writes a ref's lock or log, and a link on the way to it, are removed before git
// writes; nothing they point to is touched.
import { afterAll, describe, expect, test } from "bun:test";
import { linkSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { disarmRefTraps } from "../../lib/repo/ref-traps.ts";
import { ensureBranch } from "../../lib/repo/workspace.ts";
import { git, makeRepo } from "../helpers/repo.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("loop's ref writes through what an agent planted in the repository's git folder", () => {
  test("a link and a hard link at the new branch's reflog, a link on the way to it: removed, their targets untouched, the branch made", () => {
    const { dir, root } = makeRepo("loop-traps-");
    dirs.push(dir);
    const victim = join(dir, "loop.json");
    const db = join(dir, "loop.db");
    writeFileSync(victim, "{}\n");
    writeFileSync(db, "sqlite\n");
    const logs = join(root, ".git", "logs", "refs", "heads", "loop", "t", "item");
    mkdirSync(logs, { recursive: true });
    symlinkSync(victim, join(logs, "b"));
    linkSync(db, join(logs, "c"));
    const elsewhere = join(dir, "elsewhere");
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(root, ".git", "logs", "refs", "heads", "other"));
    for (const b of ["loop/t/item/b", "loop/t/item/c", "other/d"]) ensureBranch({ repo: root, branch: b, startPoint: "main", aside: "loop/t/aside" });
    expect(readFileSync(victim, "utf8")).toBe("{}\n");
    expect(readFileSync(db, "utf8")).toBe("sqlite\n");
    expect(git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads/loop/t/item/", "refs/heads/other/")).toBe(
      "loop/t/item/b\nloop/t/item/c\nother/d",
    );
    expect(readFileSync(join(logs, "b"), "utf8")).toContain("loop: the item branch, at its start point");
  });

  test("a branch of a name on the way (refs/heads/loop/t/reset/b before loop/t/reset/b/e0) is no trap: nothing removed, and git's refusal is what is said", () => {
    const { dir, root } = makeRepo("loop-traps-");
    dirs.push(dir);
    git(root, "branch", "loop/t/reset/b", "main");
    expect(disarmRefTraps({ commonDir: join(root, ".git"), refs: ["refs/heads/loop/t/reset/b/e0"] })).toEqual([]);
    expect(git(root, "rev-parse", "loop/t/reset/b")).toBe(git(root, "rev-parse", "main"));
  });
});
