// The trash (lib/shared/trash.ts, docs/state.md#the-trash): a folder moved aside by one rename, and
// deleted a bounded piece per sweep, never following a link, whatever an agent did to its modes.
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { moveToTrash, sweepTrash, trashOf, trashReport } from "../../lib/shared/trash.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A worktrees folder with one checkout of `files` files in 10 folders. */
function checkout(files: number): { parent: string; wt: string } {
  const parent = mkdtempSync(join(tmpdir(), "loop-trash-"));
  dirs.push(parent);
  const wt = join(parent, "item");
  for (let i = 0; i < files; i++) {
    mkdirSync(join(wt, "node_modules", `p${i % 10}`), { recursive: true });
    writeFileSync(join(wt, "node_modules", `p${i % 10}`, `f${i}.js`), "x");
  }
  return { parent, wt };
}

const forever = () => ({ deadline: Number.POSITIVE_INFINITY, budget: Number.POSITIVE_INFINITY });

describe("the trash", () => {
  test("a checkout is moved by a rename, counted by status with the size given, and swept to nothing", () => {
    const { parent, wt } = checkout(30);
    const trash = trashOf(parent);
    expect(moveToTrash(wt, trash, "item", 1234)).toBe(true);
    expect(existsSync(wt)).toBe(false);
    expect(trashReport(trash)).toEqual({ entries: 1, bytes: 1234, unknown: 0 });
    // Nothing there: nothing to move, and nothing counted twice.
    expect(moveToTrash(wt, trash, "item", 5)).toBe(true);
    expect(trashReport(trash).entries).toBe(1);
    const r = sweepTrash(trash, forever());
    expect(r).toEqual({ deleted: 30 + 10 + 2, done: true });
    // The empty trash goes too, and reads as nothing waiting.
    expect(existsSync(trash)).toBe(false);
    expect(trashReport(trash)).toEqual({ entries: 0, bytes: 0, unknown: 0 });
  });

  test("a sweep stops at its budget, and the next ones finish what it left", () => {
    const { parent, wt } = checkout(50);
    const trash = trashOf(parent);
    moveToTrash(wt, trash, "item", null);
    expect(trashReport(trash)).toEqual({ entries: 1, bytes: 0, unknown: 1 });
    const first = sweepTrash(trash, { deadline: Number.POSITIVE_INFINITY, budget: 20 });
    expect(first).toEqual({ deleted: 20, done: false });
    expect(trashReport(trash).entries).toBe(1);
    let rounds = 1;
    while (!sweepTrash(trash, { deadline: Number.POSITIVE_INFINITY, budget: 20 }).done) rounds++;
    expect(rounds).toBe(3); // 62 entries, 20 a sweep
    expect(existsSync(trash)).toBe(false);
  });

  test("a sweep whose deadline has passed deletes nothing", () => {
    const { parent, wt } = checkout(5);
    const trash = trashOf(parent);
    moveToTrash(wt, trash, "item", 10);
    expect(sweepTrash(trash, { deadline: 0, budget: 1000 })).toEqual({ deleted: 0, done: false });
    expect(readdirSync(join(trash))).toHaveLength(2);
  });

  test("a link in the trash is removed, never followed; folders an agent locked are deleted all the same", () => {
    const { parent, wt } = checkout(3);
    const outside = join(parent, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "keep.txt"), "mine");
    symlinkSync(outside, join(wt, "node_modules", "link"));
    symlinkSync(join(outside, "keep.txt"), join(wt, "file-link"));
    mkdirSync(join(wt, "locked", "inner"), { recursive: true });
    writeFileSync(join(wt, "locked", "inner", "f"), "x");
    chmodSync(join(wt, "locked", "inner"), 0o000);
    chmodSync(join(wt, "locked"), 0o500);
    const trash = trashOf(parent);
    moveToTrash(wt, trash, "item", 0);
    expect(sweepTrash(trash, forever()).done).toBe(true);
    expect(existsSync(trash)).toBe(false);
    expect(readdirSync(outside)).toEqual(["keep.txt"]);
  });

  test("nothing in the trash: a sweep is done at once", () => {
    const parent = mkdtempSync(join(tmpdir(), "loop-trash-"));
    dirs.push(parent);
    expect(sweepTrash(trashOf(parent), forever())).toEqual({ deleted: 0, done: true });
  });
});
