// A state root belongs to one project (lib/log/ownership.ts, docs/state.md#ownership). Through the
// real entry point: a second repository pointed at another loop's state root (LOOP_STATE_ROOT left
// exported, the case) must not import its definition over the other loop, withdraw its items
// or end its agent; every writing command refuses (exit 2, foreign_store, nothing changed) and the
// read verbs report it. A moved or renamed project is told how to adopt its state root.
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, demoDefinition, exec, git, LOOP, pollUntil, Project } from "../helpers/project.ts";
import { findRepository, ownershipProblem, type ProjectIdentity, projectOf } from "../../lib/log/ownership.ts";
import { Store } from "../../lib/log/store.ts";
import { canonicalJson } from "../../lib/log/canonical.ts";

const T = 120_000;
const projects: Project[] = [];
const temps: string[] = [];
afterAll(() => {
  for (const p of projects) p.dispose();
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

function project(def: Record<string, unknown>): Project {
  const p = new Project(def);
  projects.push(p);
  return p;
}

function jsonError(stderr: string): { code: string; message: string } {
  return JSON.parse(stderr.trim()).error;
}

/** Every file under a directory (worktrees and the agent's own output aside) with its size and mtime: "nothing changed" is checked on this. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      // What the other loop's live agent writes as it works (its output, the usage it reports) is its own.
      if (r === "workspaces" || name === "output.log" || name === "usage.jsonl") continue;
      const st = statSync(path);
      if (st.isDirectory()) walk(path, r);
      else out[r] = `${st.size}:${st.mtimeMs}`;
    }
  };
  walk(dir, "");
  return out;
}

describe("a state root of another project is refused by every writer and reported by the readers", () => {
  test(
    "LOOP_STATE_ROOT pointing at another loop's state root: run, run --watch, ctl, init --force, reset exit 2 and change nothing; status and replay report foreign_store",
    async () => {
      const a = project(demoDefinition([{ id: "slow", prompt: "Works for a long time.\n@demo sleep 300" }], { name: "alpha" }));
      const b = project(demoDefinition([{ id: "other", prompt: "x" }], { name: "beta" }));
      expect((await a.run()).action).toBe("launched");
      await pollUntil(() => existsSync(join(a.sessionDir("slow", 1), "started.json")), "a's agent started");
      const agent = a.sessionGroups();
      expect(agent.length).toBeGreaterThan(0);
      const before = { files: snapshot(a.stateRoot), db: readFileSync(join(a.stateRoot, "loop.db")), head: a.head() };
      const bDefinition = readFileSync(join(b.root, "loop.json"), "utf8");
      const env = { LOOP_STATE_ROOT: a.stateRoot };

      for (const args of [
        ["run", "--json"],
        ["run", "--watch", "--json"],
        ["ctl", "pause", "--json"],
        ["ctl", "stop", "--yes", "--json"],
        ["ctl", "skip", "--work-item", "slow", "--dry-run", "--json"],
        ["init", "--force", "--json"],
        ["reset", "--work-item", "slow", "--yes", "--json"],
        ["reset", "--all", "--dry-run", "--json"],
      ]) {
        const r = await b.loop(args, env);
        expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
        const err = jsonError(r.stderr);
        expect(err.code).toBe("foreign_store");
        // It names whose state root it is, and how to point the command at the right one.
        expect(err.message).toContain(`the loop "alpha" at ${realpathSync(a.root)}`);
        expect(err.message).toContain("LOOP_STATE_ROOT");
        expect(err.message).toContain("nothing was done");
      }
      // Nothing changed: no event, no file (not even run.pid or a -wal), the other loop's agent alive.
      expect(a.head()).toBe(before.head);
      expect(snapshot(a.stateRoot)).toEqual(before.files);
      expect(readFileSync(join(a.stateRoot, "loop.db")).equals(before.db)).toBe(true);
      expect(agent.every((g) => a.alive(g))).toBe(true);
      expect(a.projection().items.slow!.status).toBe("running");
      expect(readFileSync(join(b.root, "loop.json"), "utf8")).toBe(bDefinition);
      expect(existsSync(b.stateRoot)).toBe(false);

      // The read verbs report it (exit 1) and still report the loop.
      for (const verb of ["status", "replay"]) {
        const r = await b.loop([verb, "--json"], env);
        expect({ verb, code: r.code }).toEqual({ verb, code: 1 });
        const doc = JSON.parse(r.stdout);
        expect(doc.findings.map((f: { code: string }) => f.code)).toEqual(["foreign_store"]);
        expect(doc.findings[0].message).toContain(realpathSync(a.root));
      }
      const st = JSON.parse((await a.loop(["status", "--json"])).stdout);
      expect(st.healthy).toBe(true);
      expect(st.loop.owner).toEqual({ repo: realpathSync(a.root), gitDir: realpathSync(join(a.root, ".git")), root: ".", name: "alpha" });

      // Its own project still controls it.
      expect((await a.ctl(["stop", "--yes"])).code).toBe(0);
      await a.finish();
    },
    T,
  );

  test(
    "another loop folder of the same repository, and a command run from outside any repository",
    async () => {
      const p = project(demoDefinition([{ id: "a", prompt: "x" }], { name: "top" }));
      mkdirSync(join(p.root, "svc"));
      writeFileSync(join(p.root, "svc", "loop.json"), JSON.stringify(demoDefinition([{ id: "s", prompt: "x" }], { name: "svc" })));
      git(p.root, "add", "-A");
      git(p.root, "commit", "-q", "-m", "svc loop");
      expect((await p.run()).action).toBe("launched");
      const head = p.head();
      const r = await p.loop(["run", "--json", "--root", join(p.root, "svc")], { LOOP_STATE_ROOT: p.stateRoot });
      expect(r.code).toBe(2);
      expect(jsonError(r.stderr)).toMatchObject({ code: "foreign_store" });
      expect(jsonError(r.stderr).message).toContain("another loop of the same repository");
      expect(jsonError(r.stderr).message).toContain(`the loop "svc" at ${join(realpathSync(p.root), "svc")}`);

      const outside = mkdtempSync(join(tmpdir(), "loop-nowhere-"));
      temps.push(outside);
      const c = await exec([BUN, LOOP, "ctl", "pause", "--json", "--state-root", p.stateRoot], { cwd: outside });
      expect(c.code).toBe(2);
      expect(jsonError(c.stderr).code).toBe("foreign_store");
      expect(jsonError(c.stderr).message).toContain("not run for a project in a git repository");
      // Read verbs from outside any repository (checking a copy) do not compare.
      const s = await exec([BUN, LOOP, "status", "--json", "--state-root", p.stateRoot], { cwd: outside });
      expect(s.code).toBe(0);
      expect(p.head()).toBe(head);
      await p.runToDrain();
      await p.finish();
    },
    T,
  );
});

describe("a moved or renamed project adopts its state root", () => {
  test(
    "moved on disk: writers say the repository is gone and name `loop init --adopt`; adopting records store_bound and the loop goes on",
    async () => {
      const p = project(
        demoDefinition(
          [
            { id: "a", prompt: "x" },
            { id: "b", prompt: "y", dependsOn: ["a"] },
          ],
          { name: "mv" },
        ),
      );
      const oldRoot = realpathSync(p.root);
      await p.runUntil((r) => r.action === "launched" && r.item === "a");
      await pollUntil(() => existsSync(join(p.sessionDir("a", 1), "exit.json")), "a's agent exited");
      await p.runUntil((r) => r.item === "b" && r.action === "launched");
      await p.runToDrain();
      const moved = join(p.base, "moved");
      renameSync(p.root, moved);
      const stateRoot = join(moved, ".loop");
      const head = Number(JSON.parse(readFileSync(join(stateRoot, "state.json"), "utf8")).seq);

      const r = await exec([BUN, LOOP, "run", "--json"], { cwd: moved });
      expect(r.code).toBe(2);
      const err = jsonError(r.stderr);
      expect(err.code).toBe("foreign_store");
      expect(err.message).toContain("is no longer there");
      expect(err.message).toContain(`If you moved or renamed it to ${realpathSync(moved)}, run \`loop init --adopt\` there`);
      expect(Number(JSON.parse(readFileSync(join(stateRoot, "state.json"), "utf8")).seq)).toBe(head);

      const adopt = await exec([BUN, LOOP, "init", "--adopt", "--json"], { cwd: moved });
      expect(adopt.code).toBe(0);
      const doc = JSON.parse(adopt.stdout);
      expect(doc).toMatchObject({
        schema: "loop/adopt@1",
        bound: true,
        stateRoot,
        previous: { repo: oldRoot, root: ".", name: "mv" },
        project: { repo: realpathSync(moved), gitDir: realpathSync(join(moved, ".git")), root: ".", name: "mv" },
      });
      // loop.json is not written.
      expect(git(moved, "status", "--porcelain")).toBe("");
      const again = await exec([BUN, LOOP, "init", "--adopt", "--text"], { cwd: moved });
      expect(again).toMatchObject({ code: 0, stdout: `${stateRoot} already belongs to the loop "mv" at ${realpathSync(moved)}; nothing to do\n` });

      for (const verb of [
        ["run", "--json"],
        ["status", "--json"],
        ["replay", "--json"],
      ]) {
        const x = await exec([BUN, LOOP, ...verb], { cwd: moved });
        expect({ verb, code: x.code, err: x.stderr }).toEqual({ verb, code: 0, err: "" });
      }
      const events = new Database(join(stateRoot, "loop.db"), { readonly: true });
      try {
        const bound = (
          events.query("SELECT seq, actor, payload FROM events WHERE type = 'store_bound' ORDER BY seq").all() as {
            seq: number;
            actor: string;
            payload: string;
          }[]
        ).map((e) => ({ ...e, payload: JSON.parse(e.payload) }));
        expect(bound.map((e) => e.payload.reason)).toEqual(["a new store", "adopted with `loop init --adopt`"]);
        expect(bound[1]!.payload.previous).toEqual(bound[0]!.payload.project);
        expect(bound[1]!.actor).toBe("cron@test");
      } finally {
        events.close();
      }
    },
    T,
  );

  test(
    "restored at another path while the original is still there (a copied checkout, a restore beside it): the refusal names `loop init --adopt` as well as --state-root; adopting lets the copy go on",
    async () => {
      const p = project(demoDefinition([{ id: "a", prompt: "x" }], { name: "cp" }));
      await p.runToDrain();
      const copy = join(p.base, "restored");
      const cp = Bun.spawnSync(["cp", "-a", p.root, copy]);
      expect(cp.exitCode).toBe(0);
      const r = await exec([BUN, LOOP, "run", "--json"], { cwd: copy });
      expect(r.code).toBe(2);
      const err = jsonError(r.stderr);
      expect(err.code).toBe("foreign_store");
      expect(err.message).toContain(`not to the loop "cp" at ${realpathSync(copy)}; nothing was done. Point --state-root`);
      expect(err.message).toContain("moved or restored here, run `loop init --adopt` here to bind the state root to it");
      expect((await exec([BUN, LOOP, "init", "--adopt", "--json"], { cwd: copy })).code).toBe(0);
      const after = await exec([BUN, LOOP, "run", "--json"], { cwd: copy });
      expect([after.code, JSON.parse(after.stdout).action]).toEqual([0, "drained"]);
    },
    T,
  );

  test(
    "the loop renamed in loop.json: run and ctl refuse naming the rename; init --adopt binds the new name",
    async () => {
      const p = project(demoDefinition([{ id: "a", prompt: "x" }], { name: "first" }));
      expect((await p.run()).action).toBe("launched");
      const head = p.head();
      p.writeDefinition(demoDefinition([{ id: "a", prompt: "x" }], { name: "second" }));
      for (const args of [
        ["run", "--json"],
        ["ctl", "pause", "--json"],
      ]) {
        const r = await p.loop(args);
        expect({ args, code: r.code }).toEqual({ args, code: 2 });
        expect(jsonError(r.stderr).message).toContain(`belongs to the loop "first" at ${realpathSync(p.root)}, but loop.json here names the loop "second"`);
        expect(jsonError(r.stderr).message).toContain("If you renamed the loop, run `loop init --adopt`");
      }
      expect(p.head()).toBe(head);
      // A loop.json that cannot be read does not stop a pause: only the repository and folder are compared.
      writeFileSync(join(p.root, "loop.json"), "{ not json");
      expect((await p.ctl(["pause"])).code).toBe(0);
      expect((await p.ctl(["resume"])).code).toBe(0);
      p.writeDefinition(demoDefinition([{ id: "a", prompt: "x" }], { name: "second" }));
      const adopt = await p.loop(["init", "--adopt", "--json"]);
      expect(adopt.code).toBe(0);
      expect(JSON.parse(adopt.stdout)).toMatchObject({ bound: true, previous: { name: "first" }, project: { name: "second" } });
      await p.runToDrain();
      await p.finish();
    },
    T,
  );

  test(
    "loop init, then the name edited in loop.json before anything ran: a rename the next step records, not another project",
    async () => {
      // Given a fresh `loop init` (bound to the folder's name) and loop.json edited to another name
      const p = project(demoDefinition([{ id: "a", prompt: "x" }], { name: "first" }));
      expect((await p.loop(["init", "--force", "--json"])).code).toBe(0);
      p.writeDefinition(demoDefinition([{ id: "a", prompt: "x" }], { name: "renamed" }));
      // When status reads it, and a step runs
      const status = await p.loop(["status", "--json"]);
      // Then status finds no foreign store, the step runs, and the rebinding is recorded once
      expect(JSON.parse(status.stdout).findings).toEqual([]);
      expect((await p.run()).action).toBe("launched");
      const bound = p.eventsOf("store_bound");
      expect(bound.at(-1)!.payload).toMatchObject({ project: { name: "renamed" }, previous: { name: "repo" } });
      expect(String(bound.at(-1)!.payload.reason)).toContain('to "renamed" before anything ran');
      // Once work has run, a rename is refused as before (see the test above).
      p.writeDefinition(demoDefinition([{ id: "a", prompt: "x" }], { name: "third" }));
      const r = await p.loop(["run", "--json"]);
      expect(r.code).toBe(2);
      expect(jsonError(r.stderr).message).toContain('but loop.json here names the loop "third"');
      p.writeDefinition(demoDefinition([{ id: "a", prompt: "x" }], { name: "renamed" }));
      await p.runToDrain();
      await p.finish();
    },
    T,
  );

  test("--adopt with --force is a usage error; --adopt with no store is missing_store; both change nothing", async () => {
    const p = project(demoDefinition([{ id: "a", prompt: "x" }]));
    const r = await p.loop(["init", "--adopt", "--force", "--json"]);
    expect([r.code, jsonError(r.stderr).code]).toEqual([2, "usage"]);
    const m = await p.loop(["init", "--adopt", "--json"]);
    expect([m.code, jsonError(m.stderr).code]).toEqual([2, "missing_store"]);
    expect(existsSync(p.stateRoot)).toBe(false);
  });
});

describe("a store from before ownership was recorded", () => {
  test(
    "schema 2, no owner: upgraded on open, bound by the first write with a store_bound event saying so; from then on another project is refused",
    async () => {
      const p = project(demoDefinition([{ id: "a", prompt: "x" }], { name: "old" }));
      // What an older loop left: its store, with no project recorded, at schema 2.
      Store.open(p.stateRoot, { create: true }).close();
      const db = new Database(join(p.stateRoot, "loop.db"));
      try {
        const row = db.query("SELECT body FROM proj_loop WHERE id = 1").get() as { body: string };
        const body = JSON.parse(row.body);
        delete body.loop.owner;
        db.run("UPDATE proj_loop SET body = ? WHERE id = 1", [canonicalJson(body)]);
        db.run("UPDATE meta SET value = '2' WHERE key = 'schema'");
      } finally {
        db.close();
      }
      expect((await p.run()).action).toBe("launched");
      const bound = p.eventsOf("store_bound");
      expect(bound).toHaveLength(1);
      expect(bound[0]!.seq).toBe(2);
      expect(bound[0]!.payload).toEqual({
        project: { repo: realpathSync(p.root), gitDir: realpathSync(join(p.root, ".git")), root: ".", name: "old" },
        previous: null,
        reason: "the store had no project recorded (made by an older loop); bound on its first write",
      });
      const other = project(demoDefinition([{ id: "z", prompt: "x" }], { name: "old" }));
      const r = await other.loop(["run", "--json"], { LOOP_STATE_ROOT: p.stateRoot });
      expect([r.code, jsonError(r.stderr).code]).toEqual([2, "foreign_store"]);
      await p.runToDrain();
      await p.finish();
    },
    T,
  );
});

describe("ownershipProblem and the repository found on disk", () => {
  // The recorded git dir exists (a repository that is still there), unless the case says it moved.
  const base = (): ProjectIdentity => ({ repo: "/srv/api", gitDir: tmpdir(), root: ".", name: "api" });
  const cases: [string, ProjectIdentity | null, ProjectIdentity | null, string | null][] = [
    ["a store bound to nothing is anyone's", null, base(), null],
    ["the same project", base(), base(), null],
    ["an unknown name is not compared", base(), { ...base(), name: null }, null],
    ["a recorded name null is not compared", { ...base(), name: null }, base(), null],
    ["a linked worktree of the same repository is the same project", base(), { ...base(), repo: "/srv/api-wt" }, null],
    [
      "another repository",
      base(),
      { ...base(), repo: "/srv/web", gitDir: "/srv/web/.git" },
      'belongs to the loop "api" at /srv/api, not to the loop "api" at /srv/web; nothing was done. Point --state-root',
    ],
    [
      "another repository, with the fix for a project restored elsewhere",
      base(),
      { ...base(), repo: "/srv/web", gitDir: "/srv/web/.git" },
      "If this project is the one the state root was made for, moved or restored here, run `loop init --adopt` here",
    ],
    [
      "a repository no longer where it was",
      { ...base(), gitDir: "/nonexistent/.git" },
      { ...base(), repo: "/srv/moved", gitDir: "/srv/moved/.git" },
      "is no longer there (/nonexistent/.git is gone); nothing was done. If you moved or renamed it to /srv/moved, run `loop init --adopt` there",
    ],
    ["another folder", base(), { ...base(), root: "svc" }, 'another loop of the same repository, not to the loop "api" at /srv/api/svc'],
    ["another name", base(), { ...base(), name: "web" }, 'loop.json here names the loop "web"'],
    ["no project at all", base(), null, "not run for a project in a git repository"],
  ];
  test.each(cases)("%s", (_name, recorded, current, expected) => {
    const got = ownershipProblem(recorded, current, "/srv/api/.loop");
    if (expected === null) expect(got).toBeNull();
    else expect(got).toContain(expected);
  });

  test("a linked worktree and a subfolder resolve to the main repository's common git dir; no repository is null", () => {
    const p = project(demoDefinition([{ id: "a", prompt: "x" }]));
    const wt = join(p.base, "wt");
    git(p.root, "worktree", "add", "-q", wt, "-b", "side");
    mkdirSync(join(wt, "deep", "er"), { recursive: true });
    const main = findRepository(p.root)!;
    expect(main).toEqual({ repo: realpathSync(p.root), gitDir: realpathSync(join(p.root, ".git")) });
    expect(findRepository(join(wt, "deep", "er"))).toEqual({ repo: realpathSync(wt), gitDir: main.gitDir });
    expect(projectOf(join(wt, "deep"), "n")).toEqual({ repo: realpathSync(wt), gitDir: main.gitDir, root: "deep", name: "n" });
    const none = mkdtempSync(join(tmpdir(), "loop-norepo-"));
    temps.push(none);
    expect(projectOf(none, "n")).toBeNull();
  });
});
