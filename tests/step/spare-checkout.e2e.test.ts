// The spare checkout (docs/state.md#the-spare-checkout): a passed item's checkout is kept, by a
// rename, for the next item's launch, which then writes only what differs and takes what setup made
// with it. It is trusted as a retry's checkout is, never more: what a verify (repository code, here
// without a sandbox) left in it — a tracked file rewritten with its size and time put back, a link,
// a FIFO, a nested repository, an attribute file, a changed product — is written again, removed, or
// makes loop drop the spare. A step killed between the folder's rename and its records strands
// nothing that is later trusted.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, type Project, scenario } from "../helpers/project.ts";
import { countRun, killAt, reusedFrom, setupLog, setupRuns } from "../helpers/setup-once.ts";

const FILES = { "README.md": "# project\n", "package-lock.json": '{"lockfileVersion":3}\n', "src/a.txt": "a\n" };

/** Counts its runs outside the checkout; makes a dependency folder of 50 files. */
const setupOf = (p: Project) => `${countRun(p)} && mkdir -p deps && for i in $(seq 1 50); do echo $i > deps/f$i.js; done`;

/** What every item's verify requires: its own file, the commit's README, setup's products whole, and nothing of another verify's. */
const clean = (file: string) =>
  `test -s ${file} && test "$(cat README.md)" = "# project" && test "$(cat deps/f1.js)" = 1 && test "$(ls deps | wc -l)" = 50 && ` +
  'test "$(cat src/a.txt)" = a && test ! -e locked && test ! -e planted && test ! -e fifo && test ! -e nested && test ! -e .gitattributes && test ! -e made-by-verify';

const item = (id: string, verifyExtra = "") => ({
  id,
  prompt: `@demo write ${id}.txt ${id}\n@demo commit ${id}`,
  verify: `${clean(`${id}.txt`)}${verifyExtra ? ` && ${verifyExtra}` : ""}`,
});

/**
 * What a hostile verify leaves behind once it passed: README rewritten (the same size, its time set
 * back), a link out of the checkout, a FIFO, a nested repository, conversion attributes, a file of its
 * own, a folder of its own and a tracked one made unreadable.
 */
const PLANT = [
  "printf '# PWNED!\\n' > r.tmp && touch -r README.md r.tmp && mv r.tmp README.md",
  "ln -s /etc/passwd planted",
  "mkfifo fifo",
  "mkdir -p nested && git -C nested init -q",
  "printf '* filter=evil\\n' > .gitattributes",
  "echo x > made-by-verify",
  "mkdir -p locked && touch locked/x && chmod 000 locked",
  "chmod 000 src",
].join(" && ");

const definition =
  (items: unknown[]) =>
  (p: Project): Record<string, unknown> =>
    demoDefinition(items, { defaults: { landing: "merge", maxAttempts: 1 }, workspace: { setup: setupOf(p) } });

const sparesIn = (p: Project) => readdirSync(p.worktrees).filter((n) => n.startsWith(".spare-"));

describe("the spare checkout", () => {
  test.concurrent(
    "the next item takes the passed item's checkout: setup runs once, and nothing a hostile verify left there reaches it",
    () =>
      scenario(definition([item("one", PLANT), item("two"), item("three")]), { files: FILES }, async (p) => {
        expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
        // Setup ran for one; two took one's checkout, three took two's (their verifies checked the files).
        expect(setupRuns(p)).toBe(1);
        expect(reusedFrom(p, "two")).toBe("one");
        expect(reusedFrom(p, "three")).toBe("two");
        expect(setupLog(p, "two")).toContain("the one one passed in");
        // Three's checkout holds what one and two landed (landing merge: its start point is the target).
        for (const id of ["two", "three"]) expect(p.projection().items[id]!.status).toBe("passed");
        // Drained: the last spare went to the trash, and the sweep deleted it.
        expect(sparesIn(p)).toEqual([]);
        expect(existsSync(join(p.stateRoot, "trees", ".spare.json"))).toBe(false);
      }),
    180_000,
  );

  test.concurrent(
    "the verify on the base passes its checkout to the first item: setup runs once in all, there",
    () =>
      scenario(
        (p) => ({ ...definition([item("one"), item("two")])(p), workspace: { setup: setupOf(p), baseVerify: true } }),
        { files: FILES },
        async (p) => {
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          expect(p.eventsOf("base_verify_finished").map((e) => e.payload.code)).toEqual(["passed"]);
          expect(setupRuns(p)).toBe(1);
          expect([reusedFrom(p, "one"), reusedFrom(p, "two")]).toEqual(["_base", "one"]);
          expect(setupLog(p, "one")).toContain("the one the verify on the base ran in");
          expect(existsSync(join(p.worktrees, "_base"))).toBe(false);
        },
      ),
    180_000,
  );

  test.concurrent(
    "a spare whose products a verify changed is not taken: the next item gets the kept copy, whole",
    () =>
      scenario(definition([item("one", "echo hacked > deps/f1.js"), item("two")]), { files: FILES }, async (p) => {
        expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
        expect(setupRuns(p)).toBe(1);
        // From loop's own copy, made before one's agent ran, not from one's checkout.
        expect(reusedFrom(p, "two")).toBe("one");
        expect(setupLog(p, "two")).toContain("what it made for one");
        expect(setupLog(p, "two")).not.toContain("passed in");
      }),
    180_000,
  );

  test.concurrent(
    "a step killed after the spare's folder moved, before its records did, leaves a spare that is never taken",
    () =>
      scenario(definition([item("one"), item("two")]), { files: FILES }, async (p) => {
        await killAt(p, "spare:after_move");
        expect(sparesIn(p)).toEqual([".spare-one"]);
        expect(existsSync(join(p.stateRoot, "trees", ".spare.json"))).toBe(false);
        expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
        expect(setupRuns(p)).toBe(1);
        // Two got the kept copy (the spare had no records); the recordless spare went to the trash.
        expect(setupLog(p, "two")).toContain("what it made for one");
        expect(sparesIn(p)).toEqual([]);
      }),
    180_000,
  );

  test.concurrent(
    "a step killed after the records moved to the next item, before its folder did, leaves nothing trusted",
    () =>
      scenario(definition([item("one"), item("two")]), { files: FILES }, async (p) => {
        await killAt(p, "spare:after_records");
        // Two's records, no folder at two's place; the spare's folder without records.
        expect(existsSync(join(p.stateRoot, "trees", "two.json"))).toBe(true);
        expect(existsSync(join(p.worktrees, "two"))).toBe(false);
        expect(sparesIn(p)).toEqual([".spare-one"]);
        expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
        expect(setupRuns(p)).toBe(1);
        expect(reusedFrom(p, "two")).toBe("one");
        expect(setupLog(p, "two")).toContain("what it made for one");
        expect(sparesIn(p)).toEqual([]);
      }),
    180_000,
  );

  test.concurrent(
    "the spare waits while the loop waits for a start, and a reset of the item whose checkout it is drops it",
    () =>
      scenario(
        (p) => ({ ...definition([item("one"), item("two")])(p), control: { requireStartCommand: true } }),
        { files: FILES },
        async (p) => {
          // The first step imports the definition; nothing is started, so nothing launches.
          expect((await p.loop(["run", "--json"])).code).toBeLessThan(2);
          const started = await p.loop(["ctl", "start", "--work-item", "one"]);
          expect(started.code, started.stderr).toBe(0);
          // Two is not started: the loop idles with one passed, its checkout kept as the spare.
          await p.runUntil((r, q) => r.action === "idle" && q.projection().items.one?.status === "passed", { what: "one passed, the loop idle" });
          expect(sparesIn(p)).toEqual([".spare-one"]);
          expect(existsSync(join(p.stateRoot, "trees", ".spare.json"))).toBe(true);
          expect((await p.loop(["reset", "--work-item", "one", "--yes"])).code).toBe(0);
          expect(sparesIn(p)).toEqual([]);
          expect(existsSync(join(p.stateRoot, "trees", ".spare.json"))).toBe(false);
        },
      ),
    180_000,
  );
});
