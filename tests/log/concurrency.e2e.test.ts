// Many `loop run` processes on one root (docs/cli/loop-run.md, step 2): the lease gives exactly one of them the
// step, the others exit 75 having appended nothing; a store that does not exist yet is created once;
// a lease left by a dead step is taken over (and the takeover recorded), a live one is respected.
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readdirSync, readlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { dbPath, SCHEMA_VERSION } from "../../lib/log/snapshot.ts";
import {
  checkDrained,
  cleanupDir,
  countingRunner,
  finish,
  loop,
  LoopUnderTest,
  makeRepo,
  readEvents,
  sleep,
  spawnLoop,
  writeLoopJson,
} from "../helpers/project.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) cleanupDir(d);
});

const RACERS = 8;
const TIMEOUTS = { launch: "2m", stall: "30m", verify: "2m" };

function project(opts: { requireStart: boolean; prompt?: string }) {
  const { dir, root } = makeRepo("loop-race-");
  dirs.push(dir);
  const l = new LoopUnderTest(dir, root);
  writeLoopJson(root, {
    name: "race",
    defaults: { runner: "counted", timeouts: TIMEOUTS },
    runners: { counted: countingRunner(l.launchLog) },
    control: { requireStartCommand: opts.requireStart },
    items: [{ id: "only", prompt: opts.prompt ?? "Plain work.\n@demo write O.md o", verify: "test -s O.md" }],
  });
  return { dir, root, l };
}

/** Processes (by pid) that have the store open. */
function holdsDb(pid: number, db: string): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === db;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

function leaseRow(stateRoot: string): any {
  const db = new Database(dbPath(stateRoot), { readonly: true });
  try {
    return db.query("SELECT owner, pid, host, started, expires FROM lease WHERE id = 1").get();
  } finally {
    db.close();
  }
}

function putLease(stateRoot: string, lease: { owner: string; pid: number; host: string; expiresInMs: number }) {
  const db = new Database(dbPath(stateRoot));
  try {
    db.run("PRAGMA busy_timeout = 10000");
    const now = Date.now();
    db.run("INSERT OR REPLACE INTO lease(id, owner, pid, host, started, expires) VALUES (1,?,?,?,?,?)", [
      lease.owner,
      lease.pid,
      lease.host,
      new Date(now - 1000).toISOString(),
      new Date(now + lease.expiresInMs).toISOString(),
    ]);
  } finally {
    db.close();
  }
}

const TEST_TIMEOUT = 180_000; // a bound for real processes on 2 cores, not an expectation

describe("concurrent steps", () => {
  test(
    `${RACERS} \`loop run\` at once on a store with a runnable item: one step launches, the others exit 75 and append nothing`,
    async () => {
      const { root, l } = project({ requireStart: true });
      // The store exists with the loop imported and started; `ctl start` makes the item runnable.
      const idle = await l.step();
      expect(idle.action).toBe("idle");
      await l.ctl(["start", "--work-item", "only"]);
      const before = readEvents(l.stateRoot).length;

      // Widen the winner's step: its `git worktree add` goes through this shim, which waits before
      // running the real git, so the lease stays held while the other processes are still arriving
      // (a wider window, not a timed expectation). A hook cannot do it: loop runs git with hooks off.
      const shims = join(root, "..", "shims");
      mkdirSync(shims, { recursive: true });
      const realGit = spawnSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).stdout.trim();
      writeFileSync(join(shims, "git"), `#!/bin/sh\ncase " $* " in *" worktree add "*) sleep 2;; esac\nexec ${realGit} "$@"\n`);
      chmodSync(join(shims, "git"), 0o755);
      const racerEnv = (i: number) => ({ LOOP_ACTOR: `racer-${i}`, PATH: `${shims}:${process.env.PATH}` });

      // Barrier: hold the write lock until every racer has the store open, then let them all go.
      const path = dbPath(l.stateRoot);
      const gate = new Database(path);
      gate.run("PRAGMA busy_timeout = 10000");
      gate.run("BEGIN IMMEDIATE");
      const procs = Array.from({ length: RACERS }, (_, i) => spawnLoop(["run", "--json", "--root", root], { env: racerEnv(i) }));
      const deadline = Date.now() + 8_000;
      while (Date.now() < deadline && !procs.every((p) => holdsDb(p.pid, path) || p.exitCode !== null)) await sleep(20);
      gate.run("COMMIT");
      gate.close();
      const results = await Promise.all(procs.map(finish));

      const codes = results.map((r) => r.code);
      const winners = results.map((r, i) => ({ r, i })).filter(({ r }) => r.code === 0);
      expect(winners.length, `exit codes ${codes.join(",")}`).toBe(1);
      expect(winners[0]!.r.json.action).toBe("launched");
      expect(codes.filter((c) => c === 75).length).toBe(RACERS - 1);
      for (const r of results) if (r.code === 75) expect(r.stderr).toContain("holds the lease");

      const rows = readEvents(l.stateRoot);
      const added = rows.slice(before);
      const winner = `racer-${winners[0]!.i}`;
      expect(added.length).toBeGreaterThan(0);
      expect(added.filter((e) => e.actor !== winner)).toEqual([]);
      expect(rows.filter((e) => e.type === "launch_reserved").length).toBe(1);
      expect(rows.filter((e) => e.type === "lease_taken_over")).toEqual([]);

      await l.untilDrained();
      await checkDrained(l, { outcome: "Succeeded", items: { only: "passed" } });
    },
    TEST_TIMEOUT,
  );

  test(
    `${RACERS} \`loop run\` at once with no store yet: the schema is created once, all exit 0 or 75, replay clean`,
    async () => {
      const { root, l } = project({ requireStart: false, prompt: "Works a little.\n@demo sleep 1\n@demo write O.md o" });
      const procs = Array.from({ length: RACERS }, (_, i) => spawnLoop(["run", "--json", "--root", root], { env: { LOOP_ACTOR: `racer-${i}` } }));
      const results = await Promise.all(procs.map(finish));
      for (const r of results) expect(r.code === 0 || r.code === 75, `exit ${r.code}: ${r.stderr}`).toBe(true);
      expect(results.some((r) => r.code === 0)).toBe(true);

      const rows = readEvents(l.stateRoot);
      expect(rows.filter((e) => e.type === "store_opened").length).toBe(1);
      expect(rows[0]!.type).toBe("store_opened");
      expect(rows.filter((e) => e.type === "definition_imported").length).toBe(1);
      expect(rows.filter((e) => e.type === "loop_started").length).toBe(1);
      expect(rows.filter((e) => e.type === "launch_reserved").length).toBe(1);
      const db = new Database(dbPath(l.stateRoot), { readonly: true });
      try {
        expect(db.query("SELECT key, value FROM meta WHERE key = 'schema'").all()).toEqual([{ key: "schema", value: String(SCHEMA_VERSION) }]);
      } finally {
        db.close();
      }
      const replay = await loop(["replay", "--json", "--root", root]);
      expect(replay.code, replay.stdout + replay.stderr).toBe(0);

      await l.untilDrained();
      await checkDrained(l, { outcome: "Succeeded", items: { only: "passed" } });
    },
    TEST_TIMEOUT,
  );

  test(
    "a lease left by a dead step is taken over and recorded; a live or foreign unexpired lease means exit 75",
    async () => {
      const { root, l } = project({ requireStart: true });
      expect((await l.step()).action).toBe("idle");

      // A step that died: its pid is gone on this host.
      const dead = spawnSync("true").pid!;
      putLease(l.stateRoot, { owner: "dead-step", pid: dead, host: hostname(), expiresInMs: 3_600_000 });
      const n0 = readEvents(l.stateRoot).length;
      const r1 = await l.cmd(["run", "--json"]);
      expect(r1.json.action).toBe("idle");
      const took = readEvents(l.stateRoot)
        .slice(n0)
        .filter((e) => e.type === "lease_taken_over")
        .map((e) => JSON.parse(e.payload));
      expect(took.length).toBe(1);
      expect(took[0].why).toBe("dead");
      expect(took[0].previous.pid).toBe(dead);
      expect(took[0].previous.owner).toBe("dead-step");
      expect(leaseRow(l.stateRoot)).toBeNull(); // released at the end of the step

      // A live step holds an unexpired lease: busy, nothing appended, the lease untouched.
      const live = spawn("sleep", ["600"], { stdio: "ignore" });
      try {
        putLease(l.stateRoot, { owner: "live-step", pid: live.pid!, host: hostname(), expiresInMs: 3_600_000 });
        const held = leaseRow(l.stateRoot);
        const n1 = readEvents(l.stateRoot).length;
        const r2 = await l.cmd(["run", "--json"], [75]);
        expect(r2.stderr).toContain("holds the lease");
        expect(r2.stdout).toBe("");
        const c2 = await l.cmd(["ctl", "pause", "--json"], [75]);
        expect(c2.stdout).toBe("");
        expect(readEvents(l.stateRoot).length).toBe(n1);
        expect(leaseRow(l.stateRoot)).toEqual(held);

        // The same live owner on another host cannot be probed: unexpired means busy too.
        putLease(l.stateRoot, { owner: "remote-step", pid: dead, host: `not-${hostname()}`, expiresInMs: 3_600_000 });
        await l.cmd(["run", "--json"], [75]);
        expect(readEvents(l.stateRoot).length).toBe(n1);

        // An expired lease is taken over even while its owner lives.
        putLease(l.stateRoot, { owner: "slow-step", pid: live.pid!, host: hostname(), expiresInMs: -1000 });
        const r3 = await l.cmd(["run", "--json"]);
        expect(r3.json.action).toBe("idle");
        const took2 = readEvents(l.stateRoot)
          .slice(n1)
          .filter((e) => e.type === "lease_taken_over")
          .map((e) => JSON.parse(e.payload));
        expect(took2.map((t) => [t.why, t.previous.owner])).toEqual([["expired", "slow-step"]]);
      } finally {
        live.kill("SIGKILL");
      }
      const replay = await loop(["replay", "--json", "--root", root]);
      expect(replay.code, replay.stdout).toBe(0);
      const status = await loop(["status", "--json", "--root", root]);
      expect(status.code, status.stdout).toBe(0);
    },
    TEST_TIMEOUT,
  );
});
