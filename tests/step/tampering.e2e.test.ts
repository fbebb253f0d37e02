// Attacks a red-team review found (docs/threat-model.md): each test plays a hostile agent (a
// shell-script command runner) through the real entry point, real git and, where named, the real
// bwrap sandbox, and asserts the guarantee the threat model claims. Each failed before its fix.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, type Project, scenario } from "../helpers/project.ts";

const T = 120_000;
/** The protected check the verify runs: it fails until someone changes it (which is protected). */
const FILES = { "README.md": "# project\n", "tests/check.sh": "exit 1\n" };

/** One item "x", run by the shell script `script` (cwd: its worktree); verify: the protected tests/check.sh. */
function scripted(p: Project, script: string, o: { sandbox?: boolean; landing?: "none" | "merge" } = {}) {
  return demoDefinition([{ id: "x", prompt: "x", verify: "sh tests/check.sh" }], {
    defaults: { runner: "agent", landing: o.landing ?? "none", maxAttempts: 1, ...(o.sandbox ? { sandbox: "bwrap" } : {}) },
    runners: { agent: { command: ["sh", "-c", script] } },
    protect: ["tests/**"],
  });
}

describe.each([["without the sandbox", false], ["with the sandbox", true]] as const)("%s", (_name, sandbox) => {
  // The item branch's ref file is writable by the agent (in the sandbox too: its folder is bound
  // writable). Written as `ref: refs/heads/main` it is a symbolic ref: loop's own commit of the
  // leftovers would follow it onto the operator's branch, and the protected-path check would then
  // diff main against main. checkWorktree refuses a symbolic item branch (and a launch refuses one).
  test.concurrent(
    "an item branch rewritten as a symbolic ref to main: loop never commits onto main (worktree_replaced), and the item does not pass",
    () =>
      scenario(
        (p) => scripted(p, `echo 'exit 0' > tests/check.sh; printf 'ref: refs/heads/main\\n' > "$(git rev-parse --git-common-dir)/refs/heads/loop/t/item/x"`, { sandbox }),
        { files: FILES },
        async (p) => {
          const mainBefore = git(p.root, "rev-parse", "main");
          await p.runToDrain({ codes: [0, 1] });
          expect(git(p.root, "show", "main:tests/check.sh")).toBe("exit 1");
          expect(git(p.root, "rev-parse", "main")).toBe(mainBefore);
          expect(p.projection().items.x!.status).not.toBe("passed");
        },
      ),
    T,
  );

  // The worktree's index is the agent's (writable in the sandbox). With the skip-worktree bit set,
  // `git add -A` would ignore the edit of a protected file, so the branch would not carry it, while
  // the verify runs in that worktree on the edited file. commitLeftovers rebuilds the index first.
  test.concurrent(
    "a protected file marked skip-worktree and edited: loop rebuilds the index before it commits, so the edit is committed and caught (protected_path_changed)",
    () =>
      scenario(
        (p) => scripted(p, `git update-index --skip-worktree tests/check.sh && echo 'exit 0' > tests/check.sh && echo work > work.txt`, { sandbox }),
        { files: FILES },
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          // loop rebuilds the index before it commits the leftovers: the edit is committed, and caught.
          const x = p.projection().items.x!;
          expect(x.status).toBe("failed");
          expect(x.attempts.map((a) => a.verify?.code)).toContain("protected_path_changed");
        },
      ),
    T,
  );
});

describe("a branch planted for a later item", () => {
  // The folder of the item branches is the agent's: it can make the next item's branch, before it
  // exists, a symbolic ref to main. Checked out as it is, the next agent's commits would land on main.
  test.concurrent(
    "the next item's branch made a symbolic ref to main: its launch is refused (branch_replaced, the loop paused, the fix named), main untouched",
    () =>
      scenario(
        (p) =>
          demoDefinition(
            [
              { id: "x", prompt: "x", runner: "agent" },
              { id: "y", prompt: "y\n@demo write y.txt y\n@demo commit y" },
            ],
            { runners: { agent: { command: ["sh", "-c", `mkdir -p "$(git rev-parse --git-common-dir)/refs/heads/loop/t/item" && printf 'ref: refs/heads/main\\n' > "$(git rev-parse --git-common-dir)/refs/heads/loop/t/item/y"; echo x > x.txt`] } } },
          ),
        { files: FILES },
        async (p) => {
          const mainBefore = git(p.root, "rev-parse", "main");
          const paused = await p.runUntil((r) => r.action === "paused", { what: "the pause", codes: [0, 1] });
          expect(paused.item).toBe("y");
          expect(paused.loop.reason).toContain("branch_replaced: refs/heads/loop/t/item/y is a symbolic ref to refs/heads/main");
          expect(paused.loop.reason).toContain("git symbolic-ref --delete refs/heads/loop/t/item/y");
          expect(git(p.root, "rev-parse", "main")).toBe(mainBefore);
          expect(p.projection().items.x!.status).toBe("passed");
          // Removed as said, resumed: y runs on a branch of its own.
          git(p.root, "symbolic-ref", "--delete", "refs/heads/loop/t/item/y");
          expect((await p.ctl(["resume"])).code).toBe(0);
          await p.runToDrain();
          expect(p.projection().items.y!.status).toBe("passed");
          expect(git(p.root, "rev-parse", "main")).toBe(mainBefore);
        },
      ),
    T,
  );
});

describe("with the sandbox", () => {
  // The repository's object store is read-only in the sandbox: the session's git writes to a
  // private object folder (its session folder's objects/, the store its alternate), which loop
  // imports, each object hashed against its name, when the session ends (lib/repo/object-import.ts).
  // The agent tries to replace the loose object of main's tests/check.sh; it cannot, and its own
  // commit still lands.
  test.concurrent(
    "main's blob cannot be rewritten: the shared object store is read-only; the agent's own objects are imported, proven, and its commit is the branch's",
    () =>
      scenario(
        (p) =>
          scripted(
            p,
            [
              "O=$(git rev-parse --git-common-dir)/objects",
              "b=$(git rev-parse HEAD:tests/check.sh); e=$(printf 'exit 0\\n' | git hash-object -w --stdin)",
              "pb=$O/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-)",
              "if (rm -f $pb && printf x > $pb) 2>/dev/null; then echo rewritten > outcome.txt; else echo refused > outcome.txt; fi",
              "head -c 3000000 /dev/urandom > zz.bin; git add outcome.txt zz.bin; git commit -qm big",
            ].join("\n"),
            { sandbox: true },
          ),
        { files: FILES },
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          // The verify ran (check.sh still says exit 1, as main has it): failed on its own merits, not tampered.
          const v = p.eventsOf("verify_finished", "x")[0]!.payload;
          expect({ passed: v.passed, exitCode: v.exitCode }).toEqual({ passed: false, exitCode: 1 });
          expect(git(p.root, "show", "loop/t/item/x:outcome.txt")).toBe("refused");
          expect(git(p.root, "show", "main:tests/check.sh")).toBe("exit 1");
          // Every object of the branch is in the repository's own store, and the store is whole.
          expect(git(p.root, "cat-file", "-e", "loop/t/item/x:zz.bin")).toBe("");
          expect(git(p.root, "fsck", "--full", "--no-dangling")).toBe("");
          expect(p.eventsOf("environment_fault")).toEqual([]);
        },
      ),
    T,
  );

  test.concurrent(
    "an object the session wrote under another object's name is never imported: the attempt fails objects_refused, unverified",
    () =>
      scenario(
        (p) =>
          scripted(
            p,
            [
              "set -e",
              "echo work > work.txt; git add work.txt; git commit -qm work",
              // The private folder is the agent's to write: a file named as main's blob, holding another blob.
              "b=$(git rev-parse main:tests/check.sh); e=$(printf 'exit 0\\n' | git hash-object -w --stdin)",
              "O=$GIT_OBJECT_DIRECTORY; mkdir -p $O/$(echo $b | cut -c1-2); cp $O/$(echo $e | cut -c1-2)/$(echo $e | cut -c3-) $O/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-)",
            ].join("\n"),
            { sandbox: true },
          ),
        { files: FILES },
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          const v = p.eventsOf("verify_finished", "x")[0]!.payload;
          expect(v).toMatchObject({ passed: false, code: "objects_refused" });
          // Its reason names the object refused and what it holds, for people.
          expect(v.reason).toMatch(/objects\/[0-9a-f]{2}\/[0-9a-f]+ \(holds [0-9a-f]{12}…, not the object its name says\)/);
          expect(p.eventsOf("verify_started", "x")).toEqual([]);
          expect(git(p.root, "show", "main:tests/check.sh")).toBe("exit 1");
        },
      ),
    T,
  );
});

describe("without the sandbox", () => {
  // A driver named `a=b`: as `-c filter.a=b.clean=`, git split the pair at its first '=' and the
  // driver stayed enabled, so its clean command ran inside loop's own `git add -A` with loop's
  // environment. The overrides now reach git as GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n>, taken whole.
  test.concurrent(
    "a filter driver whose name holds '=' is disabled like any other: it never runs inside loop's git add -A",
    () =>
      scenario(
        (p) =>
          scripted(
            p,
            `printf '[filter "a=b"]\\n\\tclean = "env > ${join(p.aux, "ran-in-loop")}; cat"\\n' >> "$(git rev-parse --git-common-dir)/config"; echo '* filter=a=b' > .gitattributes; echo work > work.txt`,
          ),
        { files: FILES, env: { LOOP_ALLOW_AUTO_MERGE: "1" } },
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          expect(existsSync(join(p.aux, "ran-in-loop"))).toBe(false);
        },
      ),
    T,
  );
});
