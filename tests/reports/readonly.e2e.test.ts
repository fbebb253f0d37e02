// Read verbs never write (docs/state.md, read-only guarantee): `loop status` and `loop replay`, in process and as real
// processes, leave every byte, size and mtime under the state root as they found it, with and
// without a -wal left behind by a killed writer.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readlinkSync, renameSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { replayReport } from "../../lib/reports/replay.ts";
import { statusReport } from "../../lib/reports/status.ts";
import { Store } from "../../lib/log/store.ts";
import { dbPath } from "../../lib/log/snapshot.ts";
import { snapshotTree, TempDirs } from "../helpers/fs.ts";
import { buildStore, realisticDrafts } from "../helpers/store.ts";
import { REPO, runLoopSync } from "../helpers/cli.ts";
import { testEnv } from "../helpers/env.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

const cli = (args: string[], cwd: string) => runLoopSync(args, { cwd });

/** Run every read path against the state root: in process, then as processes (JSON and text). */
async function readEverything(stateRoot: string, cwd: string) {
  const status = statusReport(stateRoot);
  const replay = await replayReport(stateRoot);
  // The hash chain checked in a worker thread, on its own connection to the same snapshot.
  expect(await replayReport(stateRoot, { worker: true })).toEqual(replay);
  const statusCli = cli(["status", "--json", "--state-root", stateRoot], cwd);
  const replayCli = cli(["replay", "--json", "--state-root", stateRoot], cwd);
  const statusText = cli(["status", "--text", "--state-root", stateRoot], cwd);
  const replayText = cli(["replay", "--text", "--state-root", stateRoot], cwd);
  return { status, replay, statusCli, replayCli, statusText, replayText };
}

/** A writer that appends one event (a reply on item "a") and is SIGKILLed before it closes: its -wal stays. */
function killWriterAfterOneAppend(root: string) {
  const script = join(temp.make(), "killed-writer.ts");
  writeFileSync(
    script,
    `import { Store } from ${JSON.stringify(join(REPO, "lib", "log", "store.ts"))};
import { materialize } from ${JSON.stringify(join(REPO, "lib", "log", "materialize.ts"))};
const s = Store.open(process.argv[2]);
s.append([{ type: "control_recorded", item: "a", actor: "killed", payload: { verb: "reply", text: "last words" } }]);
materialize(process.argv[2], s);
process.kill(process.pid, "SIGKILL");
`,
  );
  const child = Bun.spawnSync([process.execPath, script, root], { env: testEnv(), stderr: "pipe" });
  expect(child.exitCode).toBeNull();
  expect(child.signalCode).toBe("SIGKILL");
}

const STACK = /^\s+at .+[:(]/m;

describe("status and replay leave the state root byte-identical", () => {
  test("after a clean close (no -wal)", async () => {
    const root = temp.make();
    const cwd = temp.make();
    buildStore(root, realisticDrafts());
    const names = readdirSync(root);
    expect(names).toContain("loop.db");
    expect(names).not.toContain("loop.db-wal");
    expect(names).not.toContain("loop.db-shm");
    const before = snapshotTree(root);

    const r = await readEverything(root, cwd);
    expect(r.status.healthy).toBe(true);
    expect(r.status.loop.logSeq).toBe(27);
    expect(r.replay.ok).toBe(true);
    expect(r.replay.events).toBe(27);
    expect(r.statusCli.code).toBe(0);
    expect(r.statusCli.stderr).toBe("");
    const s = JSON.parse(r.statusCli.stdout);
    expect([s.schema, s.healthy, s.loop.logSeq, s.loop.state]).toEqual(["loop/status@1", true, 27, "drained"]);
    expect(r.replayCli.code).toBe(0);
    const rp = JSON.parse(r.replayCli.stdout);
    expect([rp.schema, rp.ok, rp.events, rp.head.seq]).toEqual(["loop/replay@1", true, 27, 27]);
    expect([r.statusText.code, r.replayText.code]).toEqual([0, 0]);
    expect(r.statusText.stdout).toContain("drained");

    expect(snapshotTree(root)).toEqual(before);
  });

  test("when a killed writer left a -wal behind, readers see its events and still change nothing", async () => {
    const root = temp.make();
    const cwd = temp.make();
    buildStore(root, realisticDrafts());
    killWriterAfterOneAppend(root);
    expect(existsSync(`${dbPath(root)}-wal`)).toBe(true);
    expect(statSync(`${dbPath(root)}-wal`).size).toBeGreaterThan(0);
    const before = snapshotTree(root);

    const r = await readEverything(root, cwd);
    expect(r.status.loop.logSeq).toBe(28);
    expect(r.status.loop.seq).toBe(28);
    expect(r.status.healthy).toBe(true);
    expect(r.status.items.find((i) => i.id === "a")).toBeDefined();
    expect(r.replay.head.seq).toBe(28);
    expect(r.replay.events).toBe(28);
    expect(r.replay.ok).toBe(true);
    expect(r.statusCli.code).toBe(0);
    expect(JSON.parse(r.statusCli.stdout).loop.logSeq).toBe(28);
    expect(r.replayCli.code).toBe(0);
    const rp = JSON.parse(r.replayCli.stdout);
    expect([rp.ok, rp.events, rp.head.seq]).toEqual([true, 28, 28]);
    expect([r.statusText.code, r.replayText.code]).toEqual([0, 0]);

    expect(snapshotTree(root)).toEqual(before);

    // The event really is committed: a writer recovers it from the -wal.
    const s = Store.open(root);
    try {
      expect(s.head().seq).toBe(28);
      expect(s.projection().items.a!.control.at(-1)).toMatchObject({ actor: "killed", text: "last words" });
    } finally {
      s.close();
    }
  });
});

test("a state root whose loop.db is a symlink: the -wal beside the real file is read too", async () => {
  const real = temp.make();
  const root = temp.make();
  buildStore(root, realisticDrafts());
  renameSync(dbPath(root), join(real, "loop.db"));
  symlinkSync(join(real, "loop.db"), dbPath(root));
  killWriterAfterOneAppend(root);
  expect(existsSync(join(real, "loop.db-wal"))).toBe(true);
  expect(existsSync(`${dbPath(root)}-wal`)).toBe(false);
  const before = [snapshotTree(root), snapshotTree(real)];
  const r = await readEverything(root, temp.make());
  expect([r.status.loop.logSeq, r.replay.events, r.replay.ok]).toEqual([28, 28, true]);
  expect(JSON.parse(r.replayCli.stdout).events).toBe(28);
  expect([snapshotTree(root), snapshotTree(real)]).toEqual(before);
});

test("a reader that copies the store removes the copies dead readers of its pid namespace left in $TMPDIR, and only those", () => {
  const root = temp.make();
  buildStore(root, realisticDrafts());
  killWriterAfterOneAppend(root);
  const tmp = temp.make();
  const ns = /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))![1]!;
  const dayAgo = new Date(Date.now() - 25 * 3_600_000);
  const now = new Date();
  const entries: [string, "kept" | "swept", Date][] = [
    [`loop-snapshot-${ns}-2147483646-dead`, "swept", now], // its reader is gone: at once
    [`loop-snapshot-${ns}-${process.pid}-live`, "kept", dayAgo],
    ["loop-snapshot-1-2147483645-elsewhere", "kept", now], // another namespace: its pid means nothing here
    ["loop-snapshot-1-2147483644-oldelsewhere", "swept", dayAgo], // ...until it is a day old
    ["loop-snapshot-other", "kept", now], // another form (an older loop's copy): by age alone
    ["loop-snapshot-Ab12Cd", "swept", dayAgo],
  ];
  for (const [name, , at] of entries) {
    mkdirSync(join(tmp, name));
    writeFileSync(join(tmp, name, "loop.db"), "copy");
    utimesSync(join(tmp, name), at, at);
  }
  // A symlink with a dead reader's name is never followed, nor removed.
  const victim = temp.make();
  writeFileSync(join(victim, "keep"), "x");
  symlinkSync(victim, join(tmp, `loop-snapshot-${ns}-2147483643-link`));
  const r = runLoopSync(["status", "--json", "--state-root", root], { env: { TMPDIR: tmp } });
  expect(r.code).toBe(0);
  expect(readdirSync(tmp).sort()).toEqual([...entries.filter(([, fate]) => fate === "kept").map(([n]) => n), `loop-snapshot-${ns}-2147483643-link`].sort());
  expect(readdirSync(victim)).toEqual(["keep"]);
});

describe("a store that cannot be read", () => {
  test("missing store: exit 2, missing_store on stderr, nothing on stdout, nothing created", async () => {
    const root = temp.make();
    const cwd = temp.make();
    const absent = join(root, "never-created");
    for (const stateRoot of [root, absent]) {
      for (const tool of ["status", "replay"]) {
        const r = cli([tool, "--json", "--state-root", stateRoot], cwd);
        expect(r.code).toBe(2);
        expect(r.stdout).toBe("");
        expect(r.stderr).toContain("missing_store");
        expect(JSON.parse(r.stderr).error.code).toBe("missing_store");
        expect(r.stderr).not.toMatch(STACK);
      }
    }
    expect(readdirSync(root)).toEqual([]);
    expect(readdirSync(cwd)).toEqual([]);
    for (const fn of [statusReport, replayReport]) await expect((async () => fn(root))()).rejects.toMatchObject({ name: "StoreError", code: "missing_store" });
  });

  test("corrupt store (random bytes in loop.db): exit 2, corrupt_store, no stack trace, file untouched", async () => {
    const root = temp.make();
    const cwd = temp.make();
    let bytes = randomBytes(16_384);
    while (bytes.subarray(0, 16).toString("latin1").startsWith("SQLite format")) bytes = randomBytes(16_384);
    writeFileSync(dbPath(root), bytes);
    const before = snapshotTree(root);
    for (const tool of ["status", "replay"]) {
      const r = cli([tool, "--json", "--state-root", root], cwd);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(JSON.parse(r.stderr).error.code).toBe("corrupt_store");
      expect(r.stderr).not.toMatch(STACK);
      expect(r.stderr).not.toContain("internal error");
      const t = cli([tool, "--text", "--state-root", root], cwd);
      expect(t.code).toBe(2);
      expect(t.stdout).toBe("");
      expect(t.stderr).not.toMatch(STACK);
    }
    for (const fn of [statusReport, replayReport]) await expect((async () => fn(root))()).rejects.toMatchObject({ name: "StoreError", code: "corrupt_store" });
    expect(snapshotTree(root)).toEqual(before);
  });
});
