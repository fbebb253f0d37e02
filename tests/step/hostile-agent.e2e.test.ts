// A determined agent against "done is proven" (docs/threat-model.md#what-the-verify-runs), through
// the real entry point with shell-script agents: what loop says and records about an attack beyond
// its verdict (the refusal of every command after a lost store, a planted branch moved aside and
// named, a rework compared from the newer base). Attacks whose whole claim is "a named verdict and
// nothing lands" are in the attack corpus (tests/attacks/corpus.ts), not here. The set-up of the
// reproductions: the base holds tests/check.sh, verify runs it, tests/** is protected, landing merge
// (local), one attempt.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, gitOk, Project, scenario } from "../helpers/project.ts";

const T = 120_000;

/** A shell agent (a command runner) running `script` in its worktree. */
const shell = (script: string) => ({ command: ["sh", "-c", script] });

/** A scenario whose end has no store to check against (finish() runs status and replay). */
async function withoutFinish(def: Record<string, unknown>, body: (p: Project) => Promise<void>): Promise<void> {
  const p = new Project(def);
  try {
    await body(p);
  } finally {
    p.dispose();
  }
}

function jsonError(stderr: string): { code: string; message: string } {
  return JSON.parse(stderr.trim()).error;
}

describe("the store is the loop's memory: losing it is never a new loop", () => {
  test.concurrent(
    "an agent that deletes loop.db: the next step refuses store_missing (exit 2) and launches nothing; status says the same",
    () =>
      withoutFinish(
        demoDefinition(
          [
            { id: "a", prompt: "@demo write a.txt a\n@demo commit a" },
            { id: "b", prompt: "wipe", runner: "wipe", dependsOn: ["a"] },
          ],
          {
            defaults: { maxAttempts: 1 },
            // The state root, from the handoff's place in it (sessions/<item>/<attempt>/handoff.md).
            runners: {
              wipe: shell('r=$(dirname "$(dirname "$(dirname "$(dirname "$LOOP_HANDOFF")")")"); rm -f "$r/loop.db" "$r/loop.db-wal" "$r/loop.db-shm"; exit 1'),
            },
          },
        ),
        async (p: Project) => {
          await p.run(); // the first step creates the store and launches a
          // Step until b's agent has run (it exits at once after deleting the store).
          // The agent may delete it while a step is starting: that step is then the first refusal.
          for (let i = 0; i < 60 && existsSync(join(p.stateRoot, "loop.db")); i++) {
            const r = await p.loop(["run", "--json"]);
            if (r.code === 2) expect(jsonError(r.stderr).code).toBe("store_missing");
            else expect([0, 1]).toContain(r.code);
            await Bun.sleep(100);
          }
          expect(existsSync(join(p.stateRoot, "loop.db"))).toBe(false);
          const sessions = readdirSync(join(p.stateRoot, "sessions")).sort();
          const branches = git(p.root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/");
          for (const args of [
            ["run", "--json"],
            ["run", "--json"],
            ["status", "--json"],
            ["ctl", "pause", "--json"],
          ]) {
            const r = await p.loop(args);
            expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
            const e = jsonError(r.stderr);
            expect(e.code).toBe("store_missing");
            expect(e.message).toContain("holds a loop's files");
            expect(e.message).toContain("Restore loop.db from a backup");
          }
          // No new store, no relaunch of the passed item, no new branch or session.
          expect(readdirSync(p.stateRoot).filter((f) => f.startsWith("loop.db"))).toEqual([]);
          expect(readdirSync(join(p.stateRoot, "sessions")).sort()).toEqual(sessions);
          expect(git(p.root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")).toBe(branches);
        },
      ),
    T,
  );
});

/** The reproductions' base: "weak test" (check.sh passes always), then "the real test" (it needs LICENSE). */
const WEAK = { "README.md": "# project\n", "tests/check.sh": "echo ok\n" };
function realTest(p: Project): void {
  git(p.root, "config", "user.email", "op@test");
  git(p.root, "config", "user.name", "op");
  Bun.spawnSync(["sh", "-c", "printf 'test -f LICENSE || exit 1\\n' > tests/check.sh && git commit -qam 'the real test'"], { cwd: p.root });
}

/** One item run by a shell agent against the reproductions' set-up: verify the protected check, landing merge, one attempt. */
function attack(script: string, o: { sandbox?: boolean; maxAttempts?: number; agent2?: string } = {}) {
  return demoDefinition([{ id: "fix", prompt: "fix it", runner: "attacker", verify: "sh tests/check.sh" }], {
    defaults: { maxAttempts: o.maxAttempts ?? 1, landing: "merge", ...(o.sandbox ? { sandbox: "bwrap" } : {}) },
    runners: { attacker: shell(script) },
    protect: ["tests/**"],
  });
}

async function settled(p: Project) {
  await p.runToDrain({ codes: [0, 1] });
  return p.projection().items.fix!;
}

const landedFiles = (p: Project) =>
  git(p.root, "branch", "--list", "loop/t/landed") ? git(p.root, "ls-tree", "-r", "--name-only", "loop/t/landed").split("\n") : [];

describe("the protected paths are those of the commit loop made the branch at, never an older one", () => {
  test.concurrent(
    "a rework that merges the newer base is compared from that base: the operator's own change to a protected file is not the agent's",
    () =>
      scenario(
        (p) =>
          attack(
            // Attempt 1 fails its verify; meanwhile the operator changes the protected test on main;
            // attempt 2 merges main and adds what the new test needs.
            `if [ "$LOOP_ATTEMPT" = 1 ]; then echo x > NOTES; git add -A; git commit -qm try; else git merge -q --no-edit main && echo MIT > LICENSE && git add -A && git commit -qm fix; fi`,
            { maxAttempts: 2 },
          ),
        { files: WEAK },
        async (p) => {
          realTest(p);
          await p.runUntil(() => p.eventsOf("verify_finished", "fix").length === 1, { codes: [0, 1], what: "attempt 1 verified" });
          git(p.root, "checkout", "-q", "main");
          Bun.spawnSync(["sh", "-c", "printf 'test -f LICENSE && grep -q MIT LICENSE || exit 1\\n' > tests/check.sh && git commit -qam 'a stricter test'"], {
            cwd: p.root,
          });
          const it = await settled(p);
          expect(p.eventsOf("verify_finished", "fix").map((e) => e.payload.passed)).toEqual([false, true]);
          expect(it.status).toBe("passed");
        },
      ),
    T,
  );
});

/**
 * The repository's git folder, as an agent finds it from its own (the attempt's private git folder
 * names the repository's object store as its alternate: docs/threat-model.md#the-airlock).
 */
const REPO_GIT_DIR = 'R=$(dirname "$(cat "$(git rev-parse --git-dir)/objects/info/alternates")")';

describe("a branch no session of the item worked on is never built on", () => {
  // Item a's agent commits a backdoor and makes it b's branch, before b exists: in its own git
  // folder (which stays there), and in the repository's, by pushing to it. Without the sandbox the
  // push lands and b's launch moves it aside; in the sandbox the repository is read-only to it.
  const planter = [
    "echo evil > backdoor.sh && git add backdoor.sh && git commit -qm backdoor && git branch -f loop/t/item/b HEAD",
    REPO_GIT_DIR,
    'if git push -q "$R" HEAD:refs/heads/loop/t/item/b; then echo "plant: landed"; else echo "plant: refused"; fi',
    "exit 1",
  ].join("\n");
  for (const sandbox of [false, true])
    test.concurrent(
      sandbox
        ? "another item's agent plants the next item's branch (in the sandbox): the repository's refs are read-only to it, nothing is there to move aside, and nothing of it lands"
        : "another item's agent plants the next item's branch: it is moved aside, named in a warning and session_started, and nothing of it lands",
      () =>
        scenario(
          demoDefinition(
            [
              { id: "a", prompt: "plant", runner: "planter", verify: "false" },
              { id: "b", prompt: "@demo write b.txt b\n@demo commit b" },
            ],
            {
              defaults: { maxAttempts: 1, landing: "merge", ...(sandbox ? { sandbox: "bwrap" } : {}) },
              runners: { planter: shell(planter) },
            },
          ),
          {},
          async (p) => {
            // Every step's warnings, until the loop drains.
            const stderr: string[] = [];
            for (let i = 0; i < 150; i++) {
              const r = await p.run([0, 1]);
              stderr.push(r.stderr);
              if (r.action === "drained") break;
              await Bun.sleep(200);
            }
            expect(p.projection().items.a!.status).toBe("failed");
            expect(p.projection().items.b!.status).toBe("passed");
            // The agent did try: its own output says what became of the push.
            const said = readFileSync(join(p.sessionDir("a", 1), "output.log"), "utf8");
            expect(said).toContain(sandbox ? "plant: refused" : "plant: landed");
            const started = p.eventsOf("session_started", "b")[0]!.payload as { start?: string; branchAside?: { branch: string; commit: string } | null };
            const backdoor = git(p.root, "rev-parse", "loop/t/item/a");
            expect(git(p.root, "ls-tree", "-r", "--name-only", backdoor).split("\n")).toContain("backdoor.sh");
            if (sandbox) {
              // Nothing reached the repository's refs: b's branch was loop's to make, from main.
              expect(started.branchAside).toBeNull();
              expect(git(p.root, "for-each-ref", "--format=%(refname)", "refs/heads/loop/t/aside/")).toBe("");
              expect(stderr.join("")).not.toContain("never built on");
            } else {
              expect(started.branchAside).toEqual({ branch: "loop/t/aside/b/e0-a1", commit: backdoor });
              expect(stderr.join("")).toContain(`loop/t/item/b was at ${backdoor.slice(0, 12)}, a commit no session of b made`);
              expect(stderr.join("")).toContain("moved to loop/t/aside/b/e0-a1, never built on");
              // The planted commit is kept where it was moved.
              expect(git(p.root, "ls-tree", "-r", "--name-only", "loop/t/aside/b/e0-a1").split("\n")).toContain("backdoor.sh");
            }
            // It is on no branch loop builds on.
            for (const b of ["loop/t/item/b", "loop/t/landed", "main"])
              expect({ b, built: gitOk(p.root, "merge-base", "--is-ancestor", backdoor, b) }).toEqual({ b, built: false });
            expect(git(p.root, "ls-tree", "-r", "--name-only", "loop/t/item/b").split("\n")).not.toContain("backdoor.sh");
            expect(landedFiles(p)).toContain("b.txt");
            expect(landedFiles(p)).not.toContain("backdoor.sh");
          },
        ),
      T,
    );
});
