// Attacks a red-team review found (docs/threat-model.md): each test plays a hostile agent (a
// shell-script command runner) through the real entry point, real git and, where named, the real
// bwrap sandbox, and asserts what loop says and keeps beyond its verdict (the pause that names the
// fix, what the sandbox's object store let through). Each failed before its fix. Attacks whose whole
// claim is "a named verdict and nothing lands" are in the attack corpus (tests/attacks/corpus.ts).
import { describe, expect, test } from "bun:test";
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

describe("a branch planted for a later item", () => {
  // Without the sandbox the repository's folder of item branches is the agent's to write: it can
  // make the next item's branch, before it exists, a symbolic ref to main. Checked out as it is, the
  // next agent's commits would land on main.
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
            // Its own git folder is the attempt's alone; the repository's is the one its objects/info/alternates names.
            {
              runners: {
                agent: {
                  command: [
                    "sh",
                    "-c",
                    `G=$(dirname "$(cat "$(git rev-parse --git-dir)/objects/info/alternates")") && mkdir -p "$G/refs/heads/loop/t/item" && printf 'ref: refs/heads/main\\n' > "$G/refs/heads/loop/t/item/y"; echo x > x.txt`,
                  ],
                },
              },
            },
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
});
