// Litestream beside a loop (docs/operations.md#litestream), with the real binary of the pinned npm
// package: it replicates loop.db to a file:// replica while a demo loop runs a few dozen steps and
// reads go on under its checkpoints; then the replica is restored to a new directory and the copy is
// proven: integrity_check ok, `loop replay` clean, `loop status` equal to the original's. Also: no
// command runs the checkpoints that wait for (or pull the WAL from under) a replicator.
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { foldAndCheck } from "../../lib/reports/replay.ts";
import { headOf, withReadSnapshot } from "../../lib/log/snapshot.ts";
import { demoDefinition, pollUntil, Project, REPO } from "../helpers/project.ts";
import { initRepo } from "../helpers/repo.ts";
import { runInProcess } from "../helpers/cli.ts";
import { TempDirs } from "../helpers/fs.ts";
import { haveLitestream, LITESTREAM, LITESTREAM_PIN } from "../helpers/litestream.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

const PINNED = LITESTREAM_PIN;
if (!haveLitestream) console.warn(`skipping the Litestream tests: the pinned package installs on linux-x64 only, this is ${process.platform}-${process.arch}`);

function litestream(args: string[]) {
  const r = Bun.spawnSync([LITESTREAM, ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
}

describe("the store and a replicator", () => {
  test("over a loop's whole life no command asks SQLite for a TRUNCATE, RESTART or FULL checkpoint, nor a VACUUM in place", async () => {
    // What every command of this process says to SQLite, whatever module says it.
    const said: string[] = [];
    const proto = Database.prototype as unknown as Record<"run" | "query" | "prepare" | "exec", (sql: string, ...rest: unknown[]) => unknown>;
    const originals = { run: proto.run, query: proto.query, prepare: proto.prepare, exec: proto.exec };
    for (const name of Object.keys(originals) as (keyof typeof originals)[])
      proto[name] = function (this: unknown, sql: string, ...rest: unknown[]) {
        if (typeof sql === "string") said.push(sql);
        return originals[name]!.call(this, sql, ...rest);
      };
    try {
      const root = join(temp.make(), "repo");
      initRepo(root, {
        definition: demoDefinition([
          { id: "a", prompt: "a" },
          { id: "b", prompt: "b" },
        ]),
      });
      const cli = (args: string[]) => runInProcess([...args, "--json"], { cwd: root });
      for (let i = 0; i < 60; i++) {
        const r = await cli(["run"]);
        expect(r.code).toBe(0);
        if (JSON.parse(r.stdout).action === "drained") break;
        await Bun.sleep(100);
      }
      for (const args of [
        ["ctl", "pause"],
        ["ctl", "resume"],
        ["reset", "--all", "--yes"],
        ["run"],
        ["status"],
        ["replay"],
        ["backup", join(temp.make(), "copy.db")],
      ])
        expect({ args, code: (await cli(args)).code }).toEqual({ args, code: 0 });
    } finally {
      Object.assign(proto, originals);
    }
    const checkpoints = said.filter((s) => /wal_checkpoint/i.test(s));
    expect(checkpoints.length).toBeGreaterThan(0);
    expect(checkpoints.filter((s) => !/wal_checkpoint\s*\(\s*PASSIVE\s*\)/i.test(s))).toEqual([]);
    expect(said.filter((s) => /\bVACUUM\b/i.test(s) && !/VACUUM\s+INTO/i.test(s))).toEqual([]);
    expect(said.some((s) => /VACUUM\s+INTO/i.test(s))).toBe(true); // the backup: the spy sees every module's SQL
  }, 120_000);

  test.skipIf(!haveLitestream)("the pinned binary is the version the docs name, with the SQLite they name", () => {
    expect(JSON.parse(readFileSync(join(REPO, "node_modules", "@flydotio", "litestream-linux-x64", "package.json"), "utf8")).version).toBe(PINNED.package);
    expect(litestream(["version"]).out.trim()).toBe(PINNED.litestream);
    // Its SQLite is compiled in (mattn/go-sqlite3): the version string is in the binary. 3.42.0 is
    // older than 3.51.3, which fixed the WAL-reset bug (docs/operations.md#litestream says what that means).
    const bytes = readFileSync(LITESTREAM).toString("latin1");
    expect(bytes.includes(`\0${PINNED.sqlite}\0`) || bytes.includes(PINNED.sqlite)).toBe(true);
    const ops = readFileSync(join(REPO, "docs", "operations.md"), "utf8");
    for (const s of [PINNED.litestream, PINNED.sqlite, "3.51.3"]) expect(ops).toContain(s);
  });

  test.skipIf(!haveLitestream)(
    "replicate while a demo loop runs and reads go on; restore elsewhere: integrity ok, replay clean, status equal",
    async () => {
      // A few dozen steps: items that pass (some slowly, so steps find them still working), one that fails once and passes on its second attempt, one that fails for good.
      const PASSING = 24;
      const items = [
        ...Array.from({ length: PASSING }, (_, i) => ({ id: `pass-${i}`, prompt: i % 3 === 0 ? `item ${i}\n@demo sleep 0.3` : `item ${i}` })),
        { id: "flaky", prompt: "@demo attempt 2 write ok yes", verify: "test -f ok" },
        { id: "broken", prompt: "never done", verify: "false", maxAttempts: 2 },
      ];
      const p = new Project(demoDefinition(items));
      const work = temp.make("loop-litestream-");
      const replica = join(work, "replica");
      const config = join(work, "litestream.yml");
      const db = join(p.stateRoot, "loop.db");
      let ls: ReturnType<typeof Bun.spawn> | null = null;
      try {
        await p.run(); // creates the store (and launches the first item)
        // Checkpoints as often as it can: the reads below must stay consistent under them.
        writeFileSync(
          config,
          [
            "dbs:",
            `  - path: ${db}`,
            "    monitor-interval: 50ms",
            "    checkpoint-interval: 200ms",
            "    min-checkpoint-page-count: 1",
            "    replicas:",
            `      - url: file://${replica}`,
            "        sync-interval: 100ms",
            "",
          ].join("\n"),
        );
        const lsLog = join(work, "litestream.log");
        ls = Bun.spawn([LITESTREAM, "replicate", "-config", config], { stdout: Bun.file(lsLog), stderr: Bun.file(lsLog) });
        await pollUntil(() => existsSync(join(replica, "generations")), "litestream wrote its first generation");

        // Readers: every read snapshot folds to a clean, growing log while steps and checkpoints run.
        let stop = false;
        let reads = 0;
        let lastHead = 0;
        const problems: string[] = [];
        const reader = (async () => {
          while (!stop) {
            try {
              const r = withReadSnapshot(p.stateRoot, (s) => ({ head: headOf(s.db).seq, findings: foldAndCheck(s.db).findings }));
              if (r.findings.length) problems.push(JSON.stringify(r.findings));
              if (r.head < lastHead) problems.push(`head went back from ${lastHead} to ${r.head}`);
              lastHead = r.head;
              reads++;
            } catch (err) {
              problems.push(String(err));
            }
            await Bun.sleep(15);
          }
        })();
        let steps = 1;
        for (; steps < 120; steps++) {
          const r = await p.run([0, 1]);
          if (r.action === "drained") break;
          await Bun.sleep(60);
        }
        stop = true;
        await reader;
        expect(problems).toEqual([]);
        expect(reads).toBeGreaterThan(10);
        expect(steps).toBeGreaterThanOrEqual(PASSING);
        const proj = p.projection();
        expect(Object.fromEntries(Object.entries(proj.items).map(([id, it]) => [id, it.status]))).toEqual({
          ...Object.fromEntries(items.slice(0, PASSING).map((i) => [i.id, "passed"])),
          flaky: "passed",
          broken: "failed",
        });
        // Litestream's own tables live in loop.db beside the log, and loop does not mind them.
        const tables = withReadSnapshot(p.stateRoot, (s) =>
          (s.db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name),
        );
        expect(tables).toContain("_litestream_seq");
        expect(tables).toContain("_litestream_lock");

        // Let it ship the last frames, then stop it (never restore while it runs).
        const head = p.head();
        await Bun.sleep(1500);
        ls.kill("SIGTERM");
        const code = await ls.exited;
        // 0.3.13 may end with exit 1 when SIGTERM lands during its own checkpoint ("release read
        // lock: context canceled"): its last checkpoint is cancelled, nothing is lost (the restore
        // below proves it). Any other error is a failure.
        const errors = readFileSync(lsLog, "utf8")
          .split("\n")
          .filter((l) => l.includes("level=ERROR") && !l.includes("context canceled"));
        expect({ code: code === 0 || code === 1 ? "0|1" : code, errors }).toEqual({ code: "0|1", errors: [] });
        ls = null;

        const restoredRoot = join(work, "restored", ".loop");
        mkdirSync(restoredRoot, { recursive: true });
        const restore = litestream(["restore", "-config", config, "-o", join(restoredRoot, "loop.db"), db]);
        expect(restore).toMatchObject({ code: 0 });
        const copy = new Database(join(restoredRoot, "loop.db"), { readonly: true });
        try {
          expect(copy.query("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
          expect((copy.query("SELECT max(seq) AS n FROM events").get() as { n: number }).n).toBe(head);
        } finally {
          copy.close();
        }
        // The files are materializations of the same head: taken from the (stopped) original.
        for (const f of ["state.json", "RUNLOG.md", "terminal_state.json"]) copyFileSync(join(p.stateRoot, f), join(restoredRoot, f));
        const replay = await p.loop(["replay", "--json", "--root", p.root, "--state-root", restoredRoot]);
        expect({ code: replay.code, findings: JSON.parse(replay.stdout).findings }).toEqual({ code: 0, findings: [] });
        const original = await p.loop(["status", "--json", "--root", p.root]);
        const restored = await p.loop(["status", "--json", "--root", p.root, "--state-root", restoredRoot]);
        expect(restored.code).toBe(original.code);
        // Where worktrees would go is the state root's own (docs/state.md#where-worktrees-live): left out.
        const norm = (out: string) => {
          const doc = JSON.parse(out.split(restoredRoot).join(p.stateRoot));
          delete doc.loop.worktrees;
          return doc;
        };
        expect(norm(restored.stdout)).toEqual(norm(original.stdout));
        await p.finish();
      } finally {
        ls?.kill("SIGKILL");
        p.dispose();
      }
    },
    180_000,
  );
});
