// One loop as the server reads it: the history caught up event by event as the log grows, and folded
// again from the start when the store under it is another log (a restored backup, a replaced file).
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { LoopSource } from "../../lib/serve/source.ts";
import { Store } from "../../lib/log/store.ts";
import { materialize } from "../../lib/log/materialize.ts";
import { buildStore, realisticDrafts } from "../helpers/store.ts";
import { TempDirs } from "../helpers/fs.ts";
import { control } from "../helpers/events.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

describe("LoopSource", () => {
  test("follows the log: nothing to do while the files are still, each new event folded once", () => {
    const root = temp.make();
    const stateRoot = join(root, ".loop");
    buildStore(stateRoot, realisticDrafts({ drain: false }));
    const s = new LoopSource({ root, stateRoot });
    s.open();
    expect(s.name).toBe("test");
    const seq = s.history.seq;
    expect(s.refresh()).toBe(false);
    const store = Store.open(stateRoot);
    store.append([control("a", "reply", "hello", "bob")]);
    materialize(stateRoot, store);
    store.close();
    expect(s.refresh()).toBe(true);
    expect(s.history.seq).toBe(seq + 1);
    expect(s.history.items.get("a")!.controls).toEqual([{ at: expect.any(Number), actor: "bob", verb: "reply" }]);
    expect(s.refresh()).toBe(false);
  });

  test("another log in its place is folded from the start", () => {
    const root = temp.make();
    const stateRoot = join(root, ".loop");
    buildStore(stateRoot, realisticDrafts());
    const s = new LoopSource({ root, stateRoot });
    s.open();
    const before = s.history.seq;
    // A different store (not drained: shorter), copied over this one as a restore would.
    const other = join(temp.make(), ".loop");
    buildStore(other, realisticDrafts({ drain: false }));
    rmSync(join(stateRoot, "loop.db"));
    copyFileSync(join(other, "loop.db"), join(stateRoot, "loop.db"));
    expect(s.refresh()).toBe(true);
    expect(s.history.seq).toBe(before - 1);
    expect(s.history.hash).not.toBe("");
    // Every attempt once, not twice.
    expect(s.history.attempts).toBe(3);
  });
});
