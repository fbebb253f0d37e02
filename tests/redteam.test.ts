// Red-team reproductions (docs/threat-model.md): each test plays a hostile agent (a shell-script
// command runner) through the real entry point, real git and, where named, the real bwrap sandbox,
// and asserts a guarantee the threat model claims. Each FAILS on the code it was written against.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, type Project, scenario } from "./helpers/project.ts";

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
  // Guarantee 3 (and 1, 5): the item branch's ref file is writable by the agent (in the sandbox too:
  // its folder is bound writable). Written as `ref: refs/heads/main` it is a symbolic ref; checkWorktree
  // only checks the worktree's HEAD names the item branch, so loop's own `git commit` of the leftovers
  // (commitLeftovers) follows item branch → main and commits onto the operator's branch. The protected-
  // path check then diffs main against main (nothing), and the tampered check passes.
  test.concurrent(
    "symref: an item branch rewritten as a symbolic ref to main makes loop commit the agent's leftovers onto main",
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

  // Guarantees 1 and 5: the worktree's index is the agent's (writable in the sandbox). With the
  // skip-worktree bit set, `git add -A` ignores the edit of a protected file, so the branch does not
  // carry it (no protected_path_changed), but the verify runs in that worktree, on the edited file.
  test.concurrent(
    "skip-worktree: a protected file edited in the worktree only is what the verify runs; the failing check passes",
    () =>
      scenario(
        (p) => scripted(p, `git update-index --skip-worktree tests/check.sh && echo 'exit 0' > tests/check.sh && echo work > work.txt`, { sandbox }),
        { files: FILES },
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          expect(git(p.root, "show", "loop/t/item/x:tests/check.sh")).toBe("exit 1");
          expect(p.projection().items.x!.status).not.toBe("passed");
        },
      ),
    T,
  );
});

describe("with the sandbox", () => {
  // Guarantees 1, 4 and 5: the object store is shared and writable in the sandbox. The agent
  // replaces the loose object of main's tests/check.sh with the bytes of another blob, checks the file
  // out again (file and index written in different seconds, so git trusts the index's stat), and
  // nothing differs for git: the branch carries the original blob id, the verify runs `exit 0`, and
  // main's tests/check.sh now reads `exit 0` for the operator too.
  test.concurrent(
    "poisoned object: main's blob of a protected file rewritten in the shared object store; the verify passes and main reads the agent's content",
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
          await p.runToDrain({ codes: [0, 1] });
          expect(git(p.root, "show", "main:tests/check.sh")).toBe("exit 1");
          expect(p.projection().items.x!.status).not.toBe("passed");
        },
      ),
    T,
  );
});

describe("without the sandbox", () => {
  // Guarantee 4: driverOverrides disables config-defined drivers with `-c filter.<d>.clean=`, but git
  // splits a -c pair at its first '=': a driver named `a=b` yields `filter.a` = `b.clean=` and stays
  // enabled. Selected by `.gitattributes` (`filter=a=b`), its clean command runs inside loop's own
  // `git add -A` (commitLeftovers), after the session's processes were swept, with loop's environment.
  test.concurrent(
    "a filter driver whose name holds '=' escapes driverOverrides and runs inside loop's git add -A",
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
