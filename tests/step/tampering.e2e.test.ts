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
          expect(x.reason).toContain("protected_path_changed");
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
  // The object store is shared and writable in the sandbox (git needs it to commit). The agent
  // replaces the loose object of main's tests/check.sh with the bytes of another blob and checks the
  // file out again so that git trusts the index's stat: for git nothing differs, and main's file now
  // reads `exit 0` for the operator too. lib/repo/object-store.ts proves the rewrite (the object no
  // longer hashes to its name) before the verify.
  test.concurrent(
    "main's blob rewritten in the shared object store: the object no longer hashes to its name, the attempt fails unverified (object_store_tampered) and the loop pauses",
    () =>
      scenario(
        (p) =>
          scripted(
            p,
            [
              "set -e",
              "head -c 30000000 /dev/urandom > zz.bin; git add zz.bin; git commit -qm big",
              "O=$(git rev-parse --git-common-dir)/objects",
              "b=$(git rev-parse HEAD:tests/check.sh); e=$(printf 'exit 0\\n' | git hash-object -w --stdin)",
              "pb=$O/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-); pe=$O/$(echo $e | cut -c1-2)/$(echo $e | cut -c3-)",
              "rm -f $pb; cp $pe $pb",
              "for i in 1 2 3 4 5 6; do rm -f tests/check.sh zz.bin; while [ $(date +%N | cut -c1-3) -lt 985 ]; do :; done; git checkout -- tests/check.sh zz.bin; [ -z \"$(git diff-files --name-only)\" ] && break; done",
              "cat tests/check.sh",
            ].join("\n"),
            { sandbox: true },
          ),
        { files: FILES },
        async (p) => {
          // loop cannot undo what the agent did to the store, but it proves it: the object file no
          // longer hashes to its name. The attempt fails unverified and the loop pauses, saying so.
          const paused = await p.runUntil((r) => r.action === "paused", { what: "the pause", codes: [0, 1] });
          expect(paused.loop.reason).toStartWith("environment fault: the repository's object store was rewritten during x's attempt 1: objects/");
          expect(paused.loop.reason).toContain("does not hold the object its name says");
          expect(paused.loop.reason).toContain("git fsck --full");
          const v = p.eventsOf("verify_finished", "x")[0]!.payload;
          expect({ passed: v.passed, reason: v.reason }).toMatchObject({ passed: false, reason: expect.stringContaining("object_store_tampered: objects/") });
          expect(p.eventsOf("verify_started", "x")).toEqual([]);
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
