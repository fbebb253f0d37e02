// `loop backup <file>` (docs/cli/loop-backup.md): a consistent copy while a writer appends, a copy
// that replays clean, an existing target refused (exit 2, untouched), and the read-only guarantee:
// the state root is byte-identical afterwards, with and without a -wal a killed writer left.
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backupStore } from "../../lib/reports/backup.ts";
import { foldAndCheck } from "../../lib/reports/replay.ts";
import { Store } from "../../lib/log/store.ts";
import { dbPath } from "../../lib/log/snapshot.ts";
import { snapshotTree, TempDirs } from "../helpers/fs.ts";
import { buildStore, realisticDrafts } from "../helpers/store.ts";
import { cliEnv, exec, LOOP, pollUntil, REPO } from "../helpers/project.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

function cli(args: string[], cwd: string) {
  return exec([process.execPath, LOOP, ...args], { cwd, env: cliEnv({ LOOP_STATE_ROOT: undefined }) });
}

function headAt(path: string): { seq: number; hashes: Map<number, string>; check: string; findings: unknown[] } {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.query("SELECT seq, hash FROM events ORDER BY seq").all() as { seq: number; hash: string }[];
    const check = (db.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check;
    return { seq: rows.at(-1)?.seq ?? 0, hashes: new Map(rows.map((r) => [r.seq, r.hash])), check, findings: foldAndCheck(db).findings };
  } finally {
    db.close();
  }
}

/** A writer that appends a reply on item "a" every few ms until `stop` exists, in its own process. */
function startWriter(root: string, stop: string) {
  const script = join(temp.make(), "writer.ts");
  writeFileSync(
    script,
    `import { existsSync } from "node:fs";
import { Store } from ${JSON.stringify(join(REPO, "lib", "log", "store.ts"))};
const s = Store.open(process.argv[2]);
let n = 0;
while (!existsSync(process.argv[3])) {
  s.append([{ type: "control_recorded", item: "a", actor: "writer", payload: { verb: "reply", text: "reply " + n++ } }]);
  if (n % 5 === 0) s.checkpoint();
  await Bun.sleep(2);
}
s.close();
console.log(n);
`,
  );
  return Bun.spawn([process.execPath, script, root, stop], { stdout: "pipe", stderr: "pipe" });
}

describe("loop backup", () => {
  test("while a writer appends: every copy is whole, clean and a prefix of the final log", async () => {
    const root = temp.make();
    buildStore(root, realisticDrafts({ drain: false }));
    const out = temp.make();
    const stop = join(temp.make(), "stop");
    const writer = startWriter(root, stop);
    const copies: string[] = [];
    try {
      // Wait for the writer to be appending, then copy a few times under it, each copy once the
      // writer has moved past the last (conditions, not durations: a loaded machine is slow).
      await pollUntil(() => headAt(dbPath(root)).seq >= 40, "the writer appends");
      for (let i = 0; i < 6; i++) {
        const r = backupStore(root, join(out, `b${i}.db`));
        expect(r.path).toBe(join(out, `b${i}.db`));
        copies.push(r.path);
        const copied = headAt(r.path).seq;
        await pollUntil(() => headAt(dbPath(root)).seq > copied, "the writer moves on");
      }
    } finally {
      writeFileSync(stop, "");
    }
    expect(await writer.exited).toBe(0);
    const appended = Number((await new Response(writer.stdout).text()).trim());
    expect(appended).toBeGreaterThan(10);
    const final = headAt(dbPath(root));
    const seqs: number[] = [];
    for (const c of copies) {
      const h = headAt(c);
      expect({ c, check: h.check, findings: h.findings }).toEqual({ c, check: "ok", findings: [] });
      // The copy's head is an event of the final log, with the same hash: a point in its history.
      expect(final.hashes.get(h.seq)).toBe(h.hashes.get(h.seq)!);
      seqs.push(h.seq);
    }
    // The copies were taken while it grew: not all at the same point.
    expect(new Set(seqs).size).toBeGreaterThan(1);
    // Nothing but the copies is left in the target directory (no partial files).
    expect(readdirSync(out).sort()).toEqual(copies.map((c) => c.slice(out.length + 1)).sort());
  }, 60_000);

  test("the copy, put in place as loop.db, replays clean and reports as the original", async () => {
    const root = temp.make();
    const cwd = temp.make();
    buildStore(root, realisticDrafts());
    const target = join(temp.make(), "api.db");
    const r = await cli(["backup", target, "--json", "--state-root", root], cwd);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    const doc = JSON.parse(r.stdout);
    expect(doc).toEqual({
      schema: "loop/backup@1",
      path: target,
      stateRoot: root,
      bytes: readFileSync(target).length,
      seq: 27,
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const restored = temp.make();
    copyFileSync(target, join(restored, "loop.db"));
    for (const f of ["state.json", "RUNLOG.md", "terminal_state.json"]) copyFileSync(join(root, f), join(restored, f));
    const replay = await cli(["replay", "--json", "--state-root", restored], cwd);
    expect({ code: replay.code, findings: JSON.parse(replay.stdout).findings }).toEqual({ code: 0, findings: [] });
    const a = await cli(["status", "--json", "--state-root", root], cwd);
    const b = await cli(["status", "--json", "--state-root", restored], cwd);
    // The same but for where each copy's worktrees would go (one folder per state root: docs/state.md#where-worktrees-live).
    const [da, db] = [JSON.parse(a.stdout), JSON.parse(b.stdout.split(restored).join(root))];
    expect(db.loop.worktrees).not.toBe(da.loop.worktrees);
    delete da.loop.worktrees;
    delete db.loop.worktrees;
    expect(db).toEqual(da);
    // A writer opens the copy like any store (it has no WAL of its own).
    const s = Store.open(restored);
    try {
      expect(s.head().seq).toBe(27);
    } finally {
      s.close();
    }
  });

  test("an existing target is refused, exit 2, and left as it was; so is a missing directory", async () => {
    const root = temp.make();
    const cwd = temp.make();
    buildStore(root, realisticDrafts());
    const dir = temp.make();
    const target = join(dir, "taken.db");
    writeFileSync(target, "an earlier backup\n");
    const r = await cli(["backup", target, "--state-root", root], cwd);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(JSON.parse(r.stderr)).toEqual({
      error: { code: "usage", message: `${target} already exists; loop backup never overwrites a file: choose a new name, or remove it first` },
    });
    expect(readFileSync(target, "utf8")).toBe("an earlier backup\n");
    // Not even the store itself.
    const self = await cli(["backup", dbPath(root), "--state-root", root], cwd);
    expect(self.code).toBe(2);
    const missing = await cli(["backup", join(dir, "no", "such", "dir.db"), "--state-root", root], cwd);
    expect({ code: missing.code, err: JSON.parse(missing.stderr).error.message }).toEqual({
      code: 2,
      err: `the directory ${join(dir, "no", "such")} does not exist`,
    });
    const usage = await cli(["backup", "--state-root", root], cwd);
    expect(usage.code).toBe(2);
    const noStore = await cli(["backup", join(dir, "x.db"), "--state-root", temp.make()], cwd);
    expect({ code: noStore.code, code2: JSON.parse(noStore.stderr).error.code }).toEqual({ code: 2, code2: "missing_store" });
    expect(readdirSync(dir)).toEqual(["taken.db"]);
  });

  test("read-only: the state root is byte-identical afterwards, with no -wal and with one a killed writer left", async () => {
    const root = temp.make();
    const cwd = temp.make();
    buildStore(root, realisticDrafts());
    let before = snapshotTree(root);
    expect((await cli(["backup", join(temp.make(), "a.db"), "--state-root", root], cwd)).code).toBe(0);
    expect(snapshotTree(root)).toEqual(before);

    // A writer killed after one append: its event is only in the -wal, and the copy has it.
    const script = join(temp.make(), "killed.ts");
    writeFileSync(
      script,
      `import { Store } from ${JSON.stringify(join(REPO, "lib", "log", "store.ts"))};
const s = Store.open(process.argv[2]);
s.append([{ type: "control_recorded", item: "a", actor: "killed", payload: { verb: "reply", text: "last words" } }]);
process.kill(process.pid, "SIGKILL");
`,
    );
    Bun.spawnSync([process.execPath, script, root]);
    expect(existsSync(`${dbPath(root)}-wal`)).toBe(true);
    before = snapshotTree(root);
    const target = join(temp.make(), "b.db");
    const r = await cli(["backup", target, "--json", "--state-root", root], cwd);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).seq).toBe(28);
    expect(snapshotTree(root)).toEqual(before);
    expect(headAt(target)).toMatchObject({ seq: 28, check: "ok", findings: [] });
  });
});

test("text output names both files, and the copy's head", async () => {
  const root = temp.make();
  buildStore(root, realisticDrafts());
  const dir = temp.make();
  mkdirSync(join(dir, "sub"));
  const r = await cli(["backup", "sub/t.db", "--text", "--state-root", root], dir);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(new RegExp(`^backed up ${root}/loop.db to ${join(dir, "sub", "t.db")} \\(\\d+ bytes, 27 events, head [0-9a-f]{12}\\)\\n$`));
});
