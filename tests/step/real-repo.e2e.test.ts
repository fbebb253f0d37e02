// On a real repository (docs/operations.md#on-a-real-repository): a small generated Node project
// whose verify needs a dependency that only workspace.setup installs (a local `file:` package, no
// registry); worktrees outside the repository's tree, so the main checkout's node_modules is out of
// reach and a tool that walks the tree finds no checkout of loop's; a setup that fails pauses the
// loop and spends nothing; stacked backlogs build each item on the one before.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, gitOk, Project, scenario } from "../helpers/project.ts";

const NODE_FILES: Record<string, string> = {
  ".gitignore": ".loop/\nnode_modules/\n",
  "package.json": JSON.stringify({ name: "app", version: "1.0.0", private: true, dependencies: { dep: "file:./vendor/dep" } }, null, 2) + "\n",
  "vendor/dep/package.json": JSON.stringify({ name: "dep", version: "1.0.0", main: "index.js" }) + "\n",
  "vendor/dep/index.js": "module.exports = 42;\n",
  // The item's file must be there, and the dependency resolvable from the checkout.
  "test.js": 'const dep = require("dep");\nif (dep !== 42) process.exit(3);\nrequire("fs").accessSync(process.argv[2]);\n',
};

/** `npm ci` against the fixture's lockfile, offline, with a cache of the test's own. */
const setupOf = (p: Project) => `npm_config_cache=${join(p.aux, "npm-cache")} npm ci --offline --no-audit --no-fund`;

function nodeProject(o: { setup: boolean; env?: Record<string, string>; landing?: string }): Project {
  const p = new Project(
    (q) =>
      demoDefinition(
        [
          { id: "one", prompt: "@demo write one.txt 1\n@demo commit one", verify: "node test.js one.txt" },
          { id: "two", prompt: "@demo write two.txt 2\n@demo commit two", verify: "node test.js two.txt" },
        ],
        { defaults: { landing: o.landing ?? "merge", maxAttempts: 1 }, ...(o.setup ? { workspace: { setup: setupOf(q) } } : {}) },
      ),
    { files: NODE_FILES, env: o.env ?? {} },
  );
  // The main checkout has its dependencies installed, as a developer's has; the lockfile committed.
  const r = Bun.spawnSync(["npm", "install", "--offline", "--no-audit", "--no-fund"], {
    cwd: p.root,
    env: { ...process.env, npm_config_cache: join(p.aux, "npm-cache") },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`npm install: ${r.stderr.toString()}`);
  gitOk(p.root, "add", "package-lock.json");
  gitOk(p.root, "commit", "-q", "-m", "lockfile");
  return p;
}

/** Every folder under `dir` holding a `.git` (a checkout), walked as a tool that reads no .gitignore would. */
function checkoutsUnder(dir: string, top = dir): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === ".git") {
      if (dir !== top) out.push(dir);
      continue;
    }
    if (lstatSync(path).isDirectory()) out.push(...checkoutsUnder(path, top));
  }
  return out;
}

const projects: Project[] = [];
afterAll(() => projects.forEach((p) => p.dispose()));

describe("on a real repository", () => {
  test.concurrent("a verify that needs what workspace.setup installs passes with it; without it, it fails: the main checkout's node_modules is out of a worktree's reach; after the drain the repository's tree holds no checkout", async () => {
    const withSetup = nodeProject({ setup: true });
    const without = nodeProject({ setup: false });
    // The old place, inside the repository: Node finds the main checkout's node_modules by accident.
    const inside = nodeProject({ setup: false, env: {} });
    inside.env.LOOP_WORKTREES = join(inside.stateRoot, "workspaces");
    projects.push(withSetup, without, inside);
    const [a, b, c] = await Promise.all([withSetup.runToDrain(), without.runToDrain(), inside.runToDrain()]);
    expect(a.reason).toBe("Succeeded");
    const prepared = withSetup.events().filter((e) => e.type === "workspace_prepared");
    expect(prepared.map((e) => [e.item, (e.payload.setup as { log: string } | null)?.log])).toEqual([
      ["one", join(withSetup.sessionDir("one", 1), "setup.log")],
      ["two", join(withSetup.sessionDir("two", 1), "setup.log")],
    ]);
    expect(b.reason).toBe("Failed");
    expect(without.projection().items.one!.status).toBe("failed");
    // For the reason that matters: the worktree cannot see the main checkout's node_modules.
    expect(without.projection().items.one!.attempts[0]!.verify!.tail).toContain("Cannot find module 'dep'");
    expect(c.reason).toBe("Succeeded");
    // Worktrees and the landing checkout lived outside the repository, and the walk finds none in it.
    expect(withSetup.worktrees.startsWith(withSetup.root)).toBe(false);
    expect(existsSync(join(withSetup.worktrees, "_landing", ".git"))).toBe(true);
    for (const p of [withSetup, without]) expect(checkoutsUnder(p.root)).toEqual([]);
    // What the old place left in the tree, for the record: the landing checkout inside it.
    expect(checkoutsUnder(inside.root)).toContain(join(inside.stateRoot, "workspaces", "_landing"));
    // loop status names the place.
    const st = JSON.parse((await withSetup.loop(["status", "--json"])).stdout);
    expect(st.loop.worktrees).toBe(withSetup.worktrees);
    await withSetup.finish();
  }, 240_000);

  test.concurrent(
    "a setup that fails pauses the loop (setup_failed) and spends no attempt; loop logs --setup shows its output; fixed and resumed, the setup runs again and the item passes",
    () =>
      scenario(
        demoDefinition([{ id: "a", prompt: "@demo write a.txt a\n@demo commit a", verify: "test -s a.txt && test -s prepared.txt" }], {
          workspace: { setup: "echo preparing; exit 7" },
        }),
        {},
        async (p) => {
          const r = await p.runUntil((x) => x.action === "paused", { codes: [0, 1], what: "paused" });
          const fault = p.events().find((e) => e.type === "environment_fault")!;
          expect(fault.payload).toMatchObject({ kind: "setup_failed", attempt: 1 });
          expect(String(fault.payload.reason)).toContain("workspace.setup exited 7: preparing");
          expect(r.reason).toContain("loop logs --setup --work-item a");
          expect(p.projection().items.a).toMatchObject({ status: "pending", failures: 0 });
          const logs = await p.loop(["logs", "a", "--setup"]);
          expect(logs.stdout).toBe("preparing\n");
          const def = JSON.parse(readFileSync(join(p.root, "loop.json"), "utf8"));
          def.workspace.setup = "echo ready > prepared.txt";
          writeFileSync(join(p.root, "loop.json"), JSON.stringify(def));
          // The next step imports it and says it may be the fix, naming the way on (not only the fault's old words).
          const seen = await p.run([1]);
          expect(seen.warnings).toContain(
            "loop.json changed (revision 2) since the loop was paused by an environment fault (setup_failed); if the change fixes it, run `loop ctl resume`",
          );
          await p.ctl(["resume"]);
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          // Attempt 1 was given back; attempt 2 ran the setup again in the worktree attempt 1 made.
          expect(p.projection().items.a!.attempts.map((x) => x.outcome)).toEqual(["requeued: environment fault (setup_failed)", "passed"]);
          expect(readFileSync(join(p.sessionDir("a", 2), "setup.log"), "utf8")).toBe("");
        },
      ),
    240_000,
  );

  test.concurrent("under an `npm run` of the main checkout (its node_modules/.bin on PATH, npm's variables set), the verify's bare `tool` is the checkout's node_modules/.bin's and no npm variable reaches it", async () => {
    const tool = (says: string) =>
      `mkdir -p node_modules/.bin && printf '#!/bin/sh\\necho ${says}\\n' > node_modules/.bin/tool && chmod +x node_modules/.bin/tool`;
    const p = new Project(
      demoDefinition([{ id: "a", prompt: "@demo write a.txt a\n@demo commit a", verify: 'test "$(tool)" = own && test -z "$npm_package_json$INIT_CWD"' }], {
        defaults: { landing: "none", maxAttempts: 1 },
        workspace: { setup: tool("own") },
      }),
      { files: { ".gitignore": ".loop/\nnode_modules/\n", "package.json": '{ "name": "app", "version": "1.0.0" }\n' }, env: {} },
    );
    projects.push(p);
    expect(Bun.spawnSync(["sh", "-c", tool("main")], { cwd: p.root }).exitCode).toBe(0);
    Object.assign(p.env, {
      PATH: `${p.root}/node_modules/.bin:/usr/bin:/bin`,
      npm_package_json: join(p.root, "package.json"),
      INIT_CWD: p.root,
      npm_lifecycle_event: "loop",
    });
    expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
    const logs = await p.loop(["logs", "a", "--verify"]);
    expect(logs.stderr).toContain(`taken off PATH: ${p.root}/node_modules/.bin`);
    expect(logs.stderr).toContain("npm_package_json (npm_run)");
    await p.finish();
  }, 240_000);

  test.concurrent(
    "resuming after a fixed setup whose loop.json was committed (the base moved) moves nothing aside: the branch loop made at the old base, with no session's commit on it, starts again at the new base, silently",
    () =>
      scenario(
        demoDefinition([{ id: "a", prompt: "@demo write a.txt a\n@demo commit a", verify: "test -s a.txt && test -s prepared.txt" }], {
          workspace: { setup: "echo 'ERROR: No matching distribution found for nosuch'; echo 'See above for output.'; exit 1" },
        }),
        {},
        async (p) => {
          const oldBase = git(p.root, "rev-parse", "main");
          await p.runUntil((x) => x.action === "paused", { codes: [0, 1], what: "paused" });
          const fault = p.eventsOf("environment_fault")[0]!;
          // The line that says what failed, then the last lines.
          expect(String(fault.payload.reason)).toContain("workspace.setup exited 1: ERROR: No matching distribution found for nosuch / See above for output.");
          expect(git(p.root, "rev-parse", "loop/t/item/a")).toBe(oldBase);
          const def = JSON.parse(readFileSync(join(p.root, "loop.json"), "utf8"));
          def.workspace.setup = "echo ready > prepared.txt";
          writeFileSync(join(p.root, "loop.json"), JSON.stringify(def));
          gitOk(p.root, "commit", "-q", "-am", "fix the setup");
          const newBase = git(p.root, "rev-parse", "main");
          await p.ctl(["resume"]);
          const stderr: string[] = [];
          for (let i = 0; i < 150; i++) {
            const r = await p.run();
            stderr.push(r.stderr);
            if (r.action === "drained") break;
            await Bun.sleep(150);
          }
          expect(p.projection().items.a!.status).toBe("passed");
          expect(stderr.join("")).not.toContain("moved to");
          expect(git(p.root, "for-each-ref", "--format=%(refname)", "refs/heads/loop/t/aside")).toBe("");
          const started = p.eventsOf("session_started", "a").at(-1)!;
          expect(started.payload).toMatchObject({ start: newBase, branchAside: null });
          expect(git(p.root, "rev-parse", "loop/t/item/a^")).toBe(newBase);
        },
      ),
    240_000,
  );

  for (const landing of ["none", "merge"])
    test.concurrent(`a 10-item stacked backlog with landing ${landing} builds each item on the one before`, () => {
      const ids = Array.from({ length: 10 }, (_, i) => `s${i}`);
      const items = ids.map((id, i) => ({
        id,
        prompt: `@demo write ${id}.txt ${id}\n@demo commit ${id}`,
        verify: ids
          .slice(0, i + 1)
          .map((x) => `test -s ${x}.txt`)
          .join(" && "),
      }));
      return scenario(demoDefinition(items, { defaults: { landing }, workspace: { stacked: true } }), {}, async (p) => {
        expect((await p.runToDrain({ maxPolls: 400 })).reason).toBe("Succeeded");
        const st = JSON.parse((await p.loop(["status", "--json"])).stdout);
        const built = st.items.map((it: { builtOn: { ref: string; commit: string } }) => it.builtOn);
        expect(built[0]).toEqual({ ref: "main", commit: git(p.root, "rev-parse", "main") });
        const proj = p.projection();
        for (let i = 1; i < ids.length; i++) {
          const prev = proj.items[ids[i - 1]!]!;
          if (landing === "none") expect(built[i]).toEqual({ ref: `loop/t/item/${ids[i - 1]}`, commit: git(p.root, "rev-parse", `loop/t/item/${ids[i - 1]}`) });
          else expect(built[i]).toEqual({ ref: "loop/t/landed", commit: prev.landing!.commit });
          // And it depends on it.
          expect(st.items[i].dependsOn).toEqual([ids[i - 1]]);
        }
        // The last branch holds every item's file.
        const files = git(p.root, "ls-tree", "--name-only", `loop/t/item/${ids[9]}`).split("\n");
        for (const id of ids) expect(files).toContain(`${id}.txt`);
      });
    }, 300_000);

  test.concurrent("what setup made, force-added by a failed attempt, fails every later attempt too (setup_output_committed is judged on the branch since loop made it); nothing of it lands", () => {
    const agent = 'if [ "$LOOP_ATTEMPT" = 1 ]; then git add -f deps && git commit -qm deps; else echo ok > ok.txt && git add ok.txt && git commit -qm ok; fi';
    return scenario(
      demoDefinition([{ id: "x", prompt: "x", runner: "forcer", verify: "true", maxAttempts: 2 }], {
        defaults: { landing: "merge" },
        runners: { forcer: { command: ["sh", "-c", agent] } },
        workspace: { setup: "mkdir -p deps && echo made > deps/lib.txt" },
      }),
      {},
      async (p) => {
        await p.runToDrain({ codes: [0, 1] });
        expect(p.eventsOf("verify_finished", "x").map((e) => [e.payload.code, e.payload.reason])).toEqual([
          ["setup_output_committed", expect.stringContaining("deps/lib.txt")],
          ["setup_output_committed", expect.stringContaining("deps/lib.txt")],
        ]);
        expect(p.projection().items.x!.status).toBe("failed");
        expect(gitOk(p.root, "rev-parse", "--verify", "-q", "loop/t/landed")).toBe(false);
      },
    );
  }, 120_000);
});
