// Protected paths through the real entry point (docs/loop-json.md#protect): an attempt whose branch
// changes a protected path fails `protected_path_changed` before its verify runs, and the next
// attempt's handoff says so; edits, renames, deletions and mode changes count; loop.json is always
// protected. Every verify appends a line to aux/verify-runs: the file's absence proves it never ran.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, type Project, scenario } from "../helpers/project.ts";

const T = 120_000;
const FILES = {
  "README.md": "# project\n",
  "tests/check.sh": "test -f fixed.txt\n",
  "tests/data.txt": "data\n",
  "src/app.txt": "app\n",
};

/** Verify that records each run in aux/verify-runs, then runs the protected check script. */
const verify = (p: Project) => `echo "$LOOP_ATTEMPT" >> ${join(p.aux, "verify-runs")}; sh tests/check.sh`;
const verifyRuns = (p: Project) => (existsSync(join(p.aux, "verify-runs")) ? readFileSync(join(p.aux, "verify-runs"), "utf8").split("\n").filter(Boolean) : []);

/** A shell agent (a command runner) doing `script` in its worktree, then committing everything. */
function shellAgent(script: string) {
  return { command: ["sh", "-c", `${script} && git add -A && git commit -qm work`] };
}

function def(p: Project, o: { agent?: string; prompt?: string; protect?: string[]; maxAttempts?: number } = {}) {
  return demoDefinition([{ id: "fix", prompt: o.prompt ?? "fix it", verify: verify(p) }], {
    defaults: { runner: o.agent ? "sh" : "demo", maxAttempts: o.maxAttempts ?? 1 },
    ...(o.agent ? { runners: { sh: shellAgent(o.agent) } } : {}),
    protect: o.protect ?? ["tests/**"],
  });
}

async function drained(p: Project) {
  await p.runToDrain({ codes: [0, 1] });
  return p.projection().items.fix!;
}

describe("protected paths", () => {
  test.concurrent(
    "an agent that edits a protected test file fails protected_path_changed without its verify running; the next attempt is told",
    () =>
      scenario(
        (p) =>
          def(p, {
            maxAttempts: 2,
            prompt:
              "make the check pass\n@demo attempt 1 write tests/check.sh exit 0\n@demo attempt 1 write fixed.txt x\n@demo attempt 1 commit cheat\n@demo attempt 2 print nothing to do",
          }),
        { files: FILES },
        async (p) => {
          const it = await drained(p);
          expect(it.status).toBe("failed");
          const verdicts = p.eventsOf("verify_finished", "fix").map((e) => e.payload);
          expect(verdicts).toHaveLength(2);
          // The code says what; the reason names the paths, for people.
          expect(verdicts[0]).toMatchObject({
            attempt: 1,
            passed: false,
            exitCode: null,
            code: "protected_path_changed",
            reason: "protected_path_changed: tests/check.sh",
          });
          // The branch still carries the change, so attempt 2 (which restored nothing) fails the same way.
          expect(verdicts[1]).toMatchObject({ attempt: 2, passed: false, code: "protected_path_changed", reason: "protected_path_changed: tests/check.sh" });
          expect(verifyRuns(p)).toEqual([]);
          expect(p.eventsOf("verify_reserved", "fix")).toEqual([]);
          const handoff = p.handoff("fix", 2);
          expect(handoff).toContain("verify failed: protected_path_changed: tests/check.sh");
          expect(handoff).toContain("Its verify was not run. Protected files must stay as they are");
          expect(readFileSync(join(p.sessionDir("fix", 1), "verify.log"), "utf8")).toMatch(
            /^protected_path_changed: this attempt's branch loop\/t\/item\/fix changes paths the loop protects: tests\/check\.sh\./,
          );
        },
      ),
    T,
  );

  test.concurrent(
    "an agent that edits only allowed paths passes, its verify run once",
    () =>
      scenario(
        (p) => def(p, { prompt: "fix\n@demo write fixed.txt x\n@demo append src/app.txt more\n@demo commit fix" }),
        { files: FILES },
        async (p) => {
          expect((await drained(p)).status).toBe("passed");
          expect(verifyRuns(p)).toEqual(["1"]);
        },
      ),
    T,
  );

  for (const [what, script, paths] of [
    ["a rename", "git mv tests/data.txt moved.txt && touch fixed.txt", "tests/data.txt"],
    ["a deletion", "git rm -q tests/data.txt && touch fixed.txt", "tests/data.txt"],
    ["a mode change", "chmod +x tests/check.sh && touch fixed.txt", "tests/check.sh"],
    [
      "an edit left uncommitted (loop commits it, then checks)",
      "echo 'exit 0' > tests/check.sh && touch fixed.txt && git add fixed.txt && git commit -qm part && echo more >> tests/data.txt && true",
      "tests/check.sh, tests/data.txt",
    ],
  ] as const)
    test.concurrent(
      `${what} of a protected file counts as changing it`,
      () =>
        scenario(
          (p) => def(p, { agent: script.endsWith("&& true") ? script.replace(/ && true$/, "; exit 0") : script }),
          { files: FILES },
          async (p) => {
            expect((await drained(p)).status).toBe("failed");
            expect(p.eventsOf("verify_finished", "fix")[0]!.payload).toMatchObject({
              code: "protected_path_changed",
              reason: `protected_path_changed: ${paths}`,
            });
            expect(verifyRuns(p)).toEqual([]);
          },
        ),
      T,
    );

  test.concurrent(
    "loop.json is protected without being named, and `protect` adds to it",
    () =>
      scenario(
        (p) => def(p, { prompt: "fix\n@demo write fixed.txt x\n@demo append loop.json // widened\n@demo commit widen", protect: ["docs/**"] }),
        { files: FILES },
        async (p) => {
          expect((await drained(p)).status).toBe("failed");
          expect(p.eventsOf("verify_finished", "fix")[0]!.payload).toMatchObject({
            code: "protected_path_changed",
            reason: "protected_path_changed: loop.json",
          });
          expect(verifyRuns(p)).toEqual([]);
        },
      ),
    T,
  );
});
