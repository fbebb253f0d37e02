// Worktrees a loop made under <state root>/workspaces/ (inside the repository) move out on the next
// step (docs/state.md#where-worktrees-live): `git worktree move`, worktree_moved recorded, nothing
// lost; a step killed after the move, or around the record, is finished by the next one.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { checkoutBranch } from "../../lib/repo/workspace.ts";
import { demoDefinition, git, type Project, scenario } from "../helpers/project.ts";

/** A loop as an older version left it: a failed item's worktree (with a file of its own) and the landing checkout under .loop/workspaces. */
async function oldLayout(p: Project): Promise<string> {
  const old = join(p.stateRoot, "workspaces");
  p.env.LOOP_WORKTREES = old;
  expect((await p.runToDrain()).reason).toBe("Failed");
  expect(existsSync(join(old, "bad", ".git"))).toBe(true);
  expect(existsSync(join(old, "_landing", ".git"))).toBe(true);
  delete p.env.LOOP_WORKTREES;
  return old;
}

const definition = demoDefinition(
  [
    { id: "good", prompt: "@demo write good.txt g\n@demo commit good", verify: "test -s good.txt" },
    { id: "bad", prompt: "@demo write bad.txt b\n@demo write notes.txt mine", verify: "false", maxAttempts: 1 },
  ],
  { defaults: { landing: "merge" } },
);

function expectMoved(p: Project, old: string): void {
  const moved = p.events().filter((e) => e.type === "worktree_moved");
  // Once each (in the order of their names, or the one a killed step left first).
  expect(moved.map((e) => [e.item, e.payload.from, e.payload.to]).sort((a, b) => String(a[1]).localeCompare(String(b[1])))).toEqual(
    [
      [null, join(old, "_landing"), join(p.worktrees, "_landing")],
      ["bad", join(old, "bad"), join(p.worktrees, "bad")],
    ].sort((a, b) => String(a[1]).localeCompare(String(b[1]))),
  );
  expect(existsSync(old)).toBe(false);
  // Nothing lost: the failed attempt's files are in the moved checkout, its .git still naming the
  // attempt's git folder (a checkout is no linked worktree of the repository any more).
  expect(readFileSync(join(p.worktrees, "bad", "notes.txt"), "utf8")).toBe("mine\n");
  expect(checkoutBranch(join(p.worktrees, "bad"))).toBe(p.projection().items.bad!.workspace!.branch);
  expect(git(p.root, "worktree", "list", "--porcelain")).not.toContain(old);
  expect(git(join(p.worktrees, "_landing"), "rev-parse", "--abbrev-ref", "HEAD")).toBe("loop/t/landed");
  expect(p.projection().items.bad!.workspace!.worktree).toBe(join(p.worktrees, "bad"));
}

describe("worktrees move out of the repository's tree", () => {
  test.concurrent(
    "the next step moves each one left under .loop/workspaces and records it; status then names the new place",
    () =>
      scenario(definition, { env: {} }, async (p) => {
        const old = await oldLayout(p);
        await p.run();
        expectMoved(p, old);
        const st = JSON.parse((await p.loop(["status", "--json"])).stdout);
        expect(st.items.find((i: { id: string }) => i.id === "bad").worktree).toBe(join(p.worktrees, "bad"));
      }),
    120_000,
  );

  for (const fp of ["relocate:after_move", "relocate:before_commit", "relocate:after_commit"])
    test.concurrent(
      `a step killed at ${fp} is finished by the next one`,
      () =>
        scenario(definition, { env: {} }, async (p) => {
          const old = await oldLayout(p);
          const killed = await p.loop(["run", "--json"], { LOOP_FAILPOINT: fp });
          expect(killed.code).toBe(137);
          await p.run();
          expectMoved(p, old);
        }),
      120_000,
    );
});
