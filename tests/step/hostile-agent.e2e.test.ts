// A determined agent against "done is proven" (docs/threat-model.md#what-the-verify-runs), through
// the real entry point with shell-script agents: each attack gets a named verdict and nothing of it
// lands. The set-up of the reproductions: the base holds tests/check.sh, verify runs it, tests/** is
// protected, landing merge (local), one attempt.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, Project, scenario } from "../helpers/project.ts";

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
        demoDefinition([{ id: "a", prompt: "@demo write a.txt a\n@demo commit a" }, { id: "b", prompt: "wipe", runner: "wipe", dependsOn: ["a"] }], {
          defaults: { maxAttempts: 1 },
          runners: { wipe: shell("rm -f ../../loop.db ../../loop.db-wal ../../loop.db-shm; exit 1") },
        }),
        async (p: Project) => {
          await p.run(); // the first step creates the store and launches a
          // Step until b's agent has run (it exits at once after deleting the store).
          for (let i = 0; i < 60 && existsSync(join(p.stateRoot, "loop.db")); i++) {
            await p.run([0, 1]);
            await Bun.sleep(100);
          }
          expect(existsSync(join(p.stateRoot, "loop.db"))).toBe(false);
          const sessions = readdirSync(join(p.stateRoot, "sessions")).sort();
          const branches = git(p.root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/");
          for (const args of [["run", "--json"], ["run", "--json"], ["status", "--json"], ["ctl", "pause", "--json"]]) {
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
