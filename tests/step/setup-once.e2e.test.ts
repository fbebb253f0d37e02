// Setup once, not per item (docs/operations.md#setup-once-per-lockfile): what an item's setup made is
// kept by loop right after it ran, and a later item whose start point has the same setup key gets a
// copy of it instead of running setup; a lockfile change runs it again; what an agent does to the
// products in its checkout never reaches the next item's copy; a step killed inside a copy leaves
// nothing that is later trusted.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, type Project, scenario } from "../helpers/project.ts";
import { countRun, killAt, setupRuns } from "../helpers/setup-once.ts";

const FILES = { "README.md": "# project\n", "package-lock.json": '{"lockfileVersion":3}\n' };

/** A setup that counts its runs in a file outside the worktree, and makes two folders (the copy has a middle). */
const setupOf = (p: Project) => `${countRun(p)} && mkdir -p cache deps && echo c > cache/x && for i in $(seq 1 50); do echo $i > deps/f$i.js; done`;

/** The item's file, and what setup made, whole and as setup made it. */
const verifyOf = (file: string) => `test -s ${file} && test "$(cat deps/f1.js)" = 1 && test "$(ls deps | wc -l)" = 50 && test -f cache/x`;

const item = (id: string, extra = "") => ({ id, prompt: `${extra}@demo write ${id}.txt ${id}\n@demo commit ${id}`, verify: verifyOf(`${id}.txt`) });

const definition =
  (items: unknown[], over: Record<string, unknown> = {}) =>
  (p: Project) =>
    demoDefinition(items, { defaults: { landing: "merge", maxAttempts: 1 }, workspace: { setup: setupOf(p) }, ...over });

const setups = (p: Project) =>
  p
    .events()
    .filter((e) => e.type === "workspace_prepared")
    .map((e) => [e.item, (e.payload.setup as { reusedFrom?: string | null } | null)?.reusedFrom]);
const kept = (p: Project) => join(p.worktrees, ".setup");

describe("setup once per setup key", () => {
  test.concurrent(
    "two items with the same lockfile run setup once: the second gets a copy, and status says so",
    () =>
      scenario(
        (p) => definition([item("one"), item("two", "@demo sleep 4\n")], { workspace: { setup: setupOf(p), keepCheckoutOnClose: true } })(p),
        { files: FILES },
        async (p) => {
          // While two's agent works, the text status names where its setup's products came from.
          await p.runUntil((_r, q) => q.projection().items.two?.status === "running", { what: "two running" });
          const text = (await p.loop(["status", "--text"])).stdout;
          expect(text).toMatch(/setup: +reused from one \(/);
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          expect(setupRuns(p)).toBe(1);
          expect(setups(p)).toEqual([
            ["one", null],
            ["two", "one"],
          ]);
          const st = JSON.parse((await p.loop(["status", "--json"])).stdout);
          const byId = Object.fromEntries(st.items.map((x: { id: string; setup: unknown }) => [x.id, x.setup]));
          expect(byId.one).toMatchObject({ reusedFrom: null });
          expect(byId.two).toMatchObject({ reusedFrom: "one" });
          // What the copy made is a copy, not the same files: no inode shared with the first checkout.
          const ino = (wt: string) => Bun.spawnSync(["stat", "-c", "%i", join(p.worktrees, wt, "deps", "f1.js")]).stdout.toString();
          expect(ino("two")).not.toBe(ino("one"));
          expect(readFileSync(join(p.sessionDir("two", 1), "setup.log"), "utf8")).toContain("what it made for one");
          // Resetting the item whose setup made the kept copy drops it (to the trash).
          expect((await p.loop(["reset", "--work-item", "one", "--yes"])).code).toBe(0);
          expect(existsSync(kept(p)) ? readdirSync(kept(p)) : []).toEqual([]);
        },
      ),
    180_000,
  );

  test.concurrent(
    "a lockfile change runs setup again; an agent that rewrites a product in its checkout does not change the next item's copy",
    () =>
      scenario(
        (p) =>
          definition([
            item("one"),
            // Rewrites what setup made (fails setup_output_changed: without the sandbox it can).
            { id: "two", prompt: "@demo write deps/f1.js hacked\n@demo write two.txt two\n@demo commit two", verify: verifyOf("two.txt") },
            item("three"),
            // Changes the lockfile: the next item's setup key differs.
            { id: "four", prompt: '@demo write package-lock.json {"lockfileVersion":3,"x":1}\n@demo commit lock', verify: "true" },
            item("five"),
          ])(p),
        { files: FILES },
        async (p) => {
          await p.runToDrain();
          const items = p.projection().items;
          expect(items.two!.status).toBe("failed");
          expect(JSON.stringify(items.two!.attempts[0])).toContain("setup_output_changed");
          for (const id of ["one", "three", "four", "five"]) expect(items[id]!.status, p.history()).toBe("passed");
          // Ran for one and again for five (after four changed the lockfile). Two took one's checkout,
          // kept as the spare (lib/writer/spare-checkout.ts); three, the spare gone with two, got a copy
          // of the kept products, whole as setup made them (its verify reads f1.js), not two's rewrite;
          // four took three's checkout; five's key differs, so the spare four left was not taken.
          expect(setupRuns(p)).toBe(2);
          expect(setups(p)).toEqual([
            ["one", null],
            ["two", "one"],
            ["three", "one"],
            ["four", "three"],
            ["five", null],
          ]);
        },
      ),
    180_000,
  );

  test.concurrent(
    "a step killed inside the copy that keeps setup's products leaves nothing trusted: the next item runs setup",
    () =>
      scenario(definition([item("one")]), { files: FILES }, async (p) => {
        await killAt(p, "setup:during_copy");
        // Part of it copied (cache, not deps), and no record names it.
        const left = readdirSync(kept(p));
        expect(left).toHaveLength(1);
        expect(readdirSync(join(kept(p), left[0]!)).sort()).toEqual(["cache"]);
        expect(existsSync(join(p.stateRoot, "trees", "setup-products.json"))).toBe(false);
        // No spare checkout (one's is kept at its place): two has only the kept copy to look at.
        p.writeDefinition(definition([item("one"), item("two")], { workspace: { setup: setupOf(p), keepCheckoutOnClose: true } })(p));
        expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
        // One's relaunch took its own checkout's products; two found no kept copy it could trust and ran setup.
        expect(setupRuns(p)).toBe(2);
        expect(setups(p)).toEqual([["two", null]]);
      }),
    180_000,
  );

  test.concurrent(
    "a step killed inside the copy into the next item's checkout leaves a part that is never trusted: the next step copies it whole",
    () =>
      scenario(definition([item("one")]), { files: FILES }, async (p) => {
        expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
        // The drained loop dropped its spare checkout: two gets a copy of the kept products.
        expect(readdirSync(p.worktrees).filter((n) => n.startsWith(".spare-"))).toEqual([]);
        p.writeDefinition(definition([item("one"), item("two")])(p));
        await killAt(p, "setup:during_copy");
        expect(readdirSync(join(p.worktrees, "two")).filter((n) => n === "cache" || n === "deps")).toEqual(["cache"]);
        expect(existsSync(join(p.stateRoot, "trees", "two.products.json"))).toBe(false);
        // The next steps start over from the start point's files and copy it whole; the verify checks it is.
        expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
        expect(setupRuns(p)).toBe(1);
        expect(setups(p)).toEqual([
          ["one", null],
          ["two", "one"],
        ]);
      }),
    180_000,
  );
});
