// `loop status` reports from the state document: read from state.json when the file hashes to the
// projection's `state_sha`, rendered from the projection tables otherwise. Both routes must give the
// same report; a file that differs is a finding and never what status reports. And the store-layout
// upgrade that changed the document: read verbs refuse an older store, writers upgrade it.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { materialize } from "../../lib/log/materialize.ts";
import { compareProjection, replayReport } from "../../lib/reports/replay.ts";
import { statusReport } from "../../lib/reports/status.ts";
import { renderStatus } from "../../lib/reports/render.ts";
import { rowToEvent, Store } from "../../lib/log/store.ts";
import { SCHEMA_VERSION } from "../../lib/log/snapshot.ts";
import { StoreError } from "../../lib/shared/errors.ts";
import { canonicalJson, sha256Hex } from "../../lib/log/canonical.ts";
import { fold } from "../../lib/log/reducer.ts";
import type { EventRow } from "../../lib/log/integrity.ts";
import { TempDirs } from "../helpers/fs.ts";
import { buildStore, realisticDrafts, tamper } from "../helpers/store.ts";
import { launch, started } from "../helpers/events.ts";
import { runInProcess } from "../helpers/cli.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

/** The realistic history, not drained, with item c's first session running (its pid long gone). */
function midRun(): string {
  const root = temp.make();
  const drafts = realisticDrafts({ drain: false }).filter((d) => !(d.item === "c"));
  buildStore(root, [...drafts, launch({ item: "c", attempt: 1 }), started({ item: "c", attempt: 1 })]);
  return root;
}

/** A tool in process (tests/helpers/cli.ts): exit code, stdout, stderr. */
const cli = (args: string[]) => runInProcess(args);

describe("the state document status reports from", () => {
  test("state.json and the projection tables give the same report", async () => {
    const root = midRun();
    const fromFile = statusReport(root);
    expect(fromFile.healthy).toBe(true);
    const c = fromFile.items.find((it) => it.id === "c")!;
    expect(c.status).toBe("running");
    expect(c.session).toMatchObject({ attempt: 1, runner: "demo", closed: null, alive: false });
    const b = fromFile.items.find((it) => it.id === "b")!;
    expect(Object.keys(b.session?.closed ?? {})).toEqual(["at", "how", "reason"]);
    // Same values in another layout: the hash no longer matches, so status renders from the tables.
    const path = join(root, "state.json");
    writeFileSync(path, JSON.stringify(JSON.parse(readFileSync(path, "utf8"))));
    const fromTables = statusReport(root);
    expect(fromTables).toEqual(fromFile);
    expect(JSON.stringify(fromTables)).toBe(JSON.stringify(fromFile));
  });

  test("an edited state.json is a finding, and status reports the projection, not the file", async () => {
    const root = midRun();
    const path = join(root, "state.json");
    const doc = JSON.parse(readFileSync(path, "utf8"));
    doc.items.find((it: { id: string }) => it.id === "a").status = "failed";
    writeFileSync(path, JSON.stringify(doc, null, 2) + "\n");
    const r = statusReport(root);
    expect(r.healthy).toBe(false);
    expect(r.findings).toEqual([{ code: "state_field_mismatch", message: "state.json items[0].status differs from the log" }]);
    expect(r.items.find((it) => it.id === "a")!.status).toBe("passed");
  });

  test("a verified state.json is read instead of the item tables (replay still checks those)", async () => {
    const root = midRun();
    tamper(root, (db) => db.run("DELETE FROM proj_sessions"));
    const r = statusReport(root);
    expect(r.healthy).toBe(true);
    expect(r.items.find((it) => it.id === "c")!.session?.attempt).toBe(1);
    const replay = await replayReport(root);
    expect(replay.checks.projection).toBe("failed");
    expect(replay.findings.some((f) => f.code === "projection_mismatch" && f.message.includes("proj_sessions[c]"))).toBe(true);
  });

  test("a state.json that cannot be read is unreadable_state_file (not missing), and status reports the projection", async () => {
    const root = midRun();
    const path = join(root, "state.json");
    rmSync(path);
    mkdirSync(path); // a directory where the file should be: EISDIR
    const r = statusReport(root);
    expect(r.findings.map((f) => f.code)).toEqual(["unreadable_state_file"]);
    expect(r.findings[0]!.message).toContain("cannot be read");
    expect(r.items.map((it) => it.id)).toEqual(["a", "b", "c"]);
  });

  test("a state.json that is a link is never followed: neither status nor replay shows a word of its target (docs/cli/loop-serve.md#security-model)", async () => {
    const root = midRun();
    const path = join(root, "state.json");
    const secret = join(root, "..", `secret-${Date.now()}.json`);
    writeFileSync(secret, JSON.stringify({ AWS_SECRET_ACCESS_KEY: "hunter2-xyzzy" }));
    rmSync(path);
    symlinkSync(secret, path);
    const r = statusReport(root);
    expect(r.findings.map((f) => f.code)).toEqual(["unreadable_state_file"]);
    expect(r.findings[0]!.message).toContain("symbolic link");
    const replay = await replayReport(root);
    const shown = JSON.stringify([r, replay]);
    expect(shown).not.toContain("AWS_SECRET");
    expect(shown).not.toContain("hunter2");
    expect(replay.findings.map((f) => f.code)).toContain("unreadable_state_file");
    rmSync(secret);
  });

  test("a missing, an empty, a non-UTF-8 and a BOM-prefixed state.json are each reported, never read as the document", async () => {
    const root = midRun();
    const path = join(root, "state.json");
    const good = statusReport(root).items;
    const text = readFileSync(path, "utf8");
    rmSync(path);
    expect(statusReport(root).findings.map((f) => f.code)).toEqual(["state_file_missing"]);
    writeFileSync(path, "");
    const empty = statusReport(root);
    expect(empty.findings.map((f) => f.code)).toEqual(["unreadable_state_file"]);
    expect(empty.findings[0]!.message).toContain("not valid JSON");
    expect(empty.items).toEqual(good);
    writeFileSync(path, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
    const binary = statusReport(root);
    expect(binary.findings.map((f) => f.code)).toEqual(["unreadable_state_file"]);
    expect(binary.items).toEqual(good);
    // Other readers' JSON.parse fails on a byte-order mark, so status must not look past one.
    writeFileSync(path, "\ufeff" + text);
    expect(statusReport(root).findings.map((f) => f.code)).toEqual(["unreadable_state_file"]);
  });

  test("text output escapes what a state.json (verified by its hash) holds: no raw escape, no line of its own", () => {
    const root = midRun();
    const path = join(root, "state.json");
    const doc = JSON.parse(readFileSync(path, "utf8"));
    doc.loop.name = "demo\u001b[31mRED\nhealthy: forged";
    doc.loop.revision = "1\u001b[31m\nhealthy: forged too";
    doc.items[0].branch = "b\u202eevil";
    doc.items[0].attempts = "2\u0007";
    const text = JSON.stringify(doc);
    writeFileSync(path, text);
    tamper(root, (db) => db.run("UPDATE proj_loop SET state_sha = ?", [sha256Hex(text)]));
    const out = renderStatus(statusReport(root), false);
    expect(out).not.toMatch(/[\u001b\u202e]/);
    expect(out.split("\n").filter((l) => l.startsWith("healthy: forged"))).toEqual([]);
    expect(out).toContain("demo\\u001b[31mRED\\nhealthy: forged");
    // A value of another type than expected is printed, not a crash.
    doc.loop.name = 5;
    const five = JSON.stringify(doc);
    writeFileSync(path, five);
    tamper(root, (db) => db.run("UPDATE proj_loop SET state_sha = ?", [sha256Hex(five)]));
    expect(renderStatus(statusReport(root), false)).toStartWith("loop 5 · ");
  });

  test("where the time went, in text: what a log holds (a fate, a phase's name) is printed escaped; durations as people read them", () => {
    const report = statusReport(midRun());
    const at = "2025-01-01T00:00:00.000Z";
    const phase = (name: string, ms: number, to: string | null = at) => ({ phase: name as never, from: at, to, ms });
    const attempt = { attempt: 1, from: at, to: at, agentMs: 0, setupMs: 0, verifyMs: 0, unaccountedMs: 250 };
    report.items[0]!.times = {
      attempts: [
        {
          ...attempt,
          fate: "passed\u001b[31m\nhealthy: forged",
          wallMs: 61_500,
          ownMs: 61_500,
          phases: [phase("launching\u202e", 500), phase("step", 61_000)],
        },
        { ...attempt, attempt: 2, fate: null, to: null, wallMs: 3_725_000, ownMs: 0, unaccountedMs: 0, phases: [phase("agent", 3_725_000, null)] },
      ],
      wallMs: 0,
      agentMs: 0,
      setupMs: 0,
      verifyMs: 0,
      ownMs: 0,
    };
    const out = renderStatus(report, false, { allAttempts: true });
    expect(out).not.toMatch(/[\u001b\u202e]/);
    expect(out.split("\n").filter((l) => l.startsWith("healthy: forged"))).toEqual([]);
    const rows = out.split("\n").filter((l) => l.startsWith(`  ${report.items[0]!.id} `));
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain("passed\\u001b[31m\\nhealthy: forged");
    expect(rows[0]).toMatch(/1 min 1 s +1 min 1 s +launching\\u202e 0\.50 s · waiting for a step 1 min 1 s · unaccounted 0\.25 s$/);
    expect(rows[1]).toMatch(/in flight +1 h 2 min +0\.00 s +agent 1 h 2 min…$/);
    expect(out).toContain(`own per item, its attempts together: ${report.items[0]!.id} 0.00 s so far`);
    // Without --times, an item's latest attempt only.
    const latest = renderStatus(report, false)
      .split("\n")
      .filter((l) => l.startsWith(`  ${report.items[0]!.id} `));
    expect(latest).toHaveLength(1);
    expect(latest[0]).toMatch(/ 2 +in flight /);
  });

  test("--work-item selects from the document, in the order given", async () => {
    const root = midRun();
    const r = statusReport(root, ["c", "github:acme/api#7"]);
    expect(r.items.map((it) => it.id)).toEqual(["c", "b"]);
  });
});

describe("a store written by an older loop (schema 1)", () => {
  /** What a schema-1 store looked like: its state.json had no session model or conversation id,
   *  `closed` was a boolean, and proj_loop.state_sha hashed that text. */
  function schemaOneStore(): string {
    const root = midRun();
    const path = join(root, "state.json");
    const doc = JSON.parse(readFileSync(path, "utf8"));
    for (const it of doc.items)
      if (it.session) {
        const { model: _m, conversationId: _c, closed, ...rest } = it.session;
        it.session = { ...rest, closed: closed !== null };
      }
    const oldText = JSON.stringify(doc, null, 2) + "\n";
    writeFileSync(path, oldText);
    tamper(root, (db) => {
      db.run("UPDATE meta SET value = '1' WHERE key = 'schema'");
      db.run("UPDATE proj_loop SET state_sha = ? WHERE id = 1", [sha256Hex(oldText)]);
    });
    return root;
  }

  test("status and replay refuse it with outdated_store (exit 2) and change nothing", async () => {
    const root = schemaOneStore();
    const before = readFileSync(join(root, "loop.db"));
    expect(() => statusReport(root)).toThrow(StoreError);
    for (const verb of ["status", "replay"]) {
      const r = await cli([verb, "--json", "--state-root", root]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      const err = JSON.parse(r.stderr).error;
      expect(err.code).toBe("outdated_store");
      expect(err.message).toContain("schema 1");
      expect(err.message).toContain("`loop run`");
    }
    expect(readFileSync(join(root, "loop.db")).equals(before)).toBe(true);
  });

  test("a writer upgrades it on open; the next materialization rewrites state.json; replay is clean", async () => {
    const root = schemaOneStore();
    const store = Store.open(root);
    expect((store.db.query("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string }).value).toBe(String(SCHEMA_VERSION));
    expect(materialize(root, store)).toContain("state.json");
    store.close();
    const doc = JSON.parse(readFileSync(join(root, "state.json"), "utf8"));
    expect(doc.items.find((it: { id: string }) => it.id === "c").session).toMatchObject({ model: null, conversationId: null, closed: null });
    expect(statusReport(root).healthy).toBe(true);
    expect((await replayReport(root)).ok).toBe(true);
    // Opening again is a no-op: nothing left to upgrade.
    Store.open(root).close();
    expect((await replayReport(root)).ok).toBe(true);
  });
});

describe("a store of schema 3: rows in the layout before the tables were a plain cache", () => {
  /** Rows as schema 3 wrote them: no `reset`/`forge` keys on items that had none, no `verifyRun`
   *  on attempts without one, no `fault`/`notified` on the loop, no indexes, state_sha of the file. */
  function schemaThreeStore(): string {
    const root = midRun();
    tamper(root, (db) => {
      db.run("UPDATE meta SET value = '3' WHERE key = 'schema'");
      for (const index of ["proj_items_status", "proj_items_landing", "proj_sessions_open"]) db.run(`DROP INDEX ${index}`);
      for (const [item, body] of db.query("SELECT item, body FROM proj_items").values() as [string, string][]) {
        const { reset, ...rest } = JSON.parse(body);
        db.run("UPDATE proj_items SET body = ? WHERE item = ?", [canonicalJson(reset ? { ...rest, reset } : rest), item]);
      }
      for (const [item, body] of db.query("SELECT item, body FROM proj_ledgers").values() as [string, string][]) {
        const { forge, attempts, ...rest } = JSON.parse(body);
        const old = attempts.map(({ verifyRun, ...a }: { verifyRun: unknown }) => (verifyRun ? { ...a, verifyRun } : a));
        db.run("UPDATE proj_ledgers SET body = ? WHERE item = ?", [canonicalJson({ ...rest, attempts: old, ...(forge ? { forge } : {}) }), item]);
      }
      const {
        loop: { fault, notified, ...loop },
        order,
      } = JSON.parse((db.query("SELECT body FROM proj_loop").get() as { body: string }).body);
      // Its state.json: items with neither forge nor reset unless they had one; state_sha its hash.
      const doc = JSON.parse(readFileSync(join(root, "state.json"), "utf8"));
      doc.items = doc.items.map(({ forge, reset, ...it }: { forge: unknown; reset: unknown }) => ({
        ...it,
        ...(forge ? { forge } : {}),
        ...(reset ? { reset } : {}),
      }));
      const text = JSON.stringify(doc) + "\n";
      writeFileSync(join(root, "state.json"), text);
      db.run("UPDATE proj_loop SET body = ?, state_sha = ?", [canonicalJson({ loop, order }), sha256Hex(text)]);
    });
    return root;
  }

  test("read verbs refuse it; a writer folds the log again and rewrites every table; replay is clean", async () => {
    const root = schemaThreeStore();
    expect(() => statusReport(root)).toThrow(
      new StoreError(
        "outdated_store",
        `store under ${root} has schema 3 from an older loop; \`loop run\` or \`loop ctl\` upgrades it (read verbs never write)`,
      ),
    );
    const store = Store.open(root);
    try {
      expect((store.db.query("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string }).value).toBe(String(SCHEMA_VERSION));
      const events = store.db.query("SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events ORDER BY seq").all() as EventRow[];
      expect(compareProjection(store.db, fold(events.map(rowToEvent)))).toEqual([]);
      expect(store.db.query("SELECT state_sha FROM proj_loop").get()).toEqual({ state_sha: "" });
      expect(
        (store.db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'proj_%' ORDER BY name").values() as string[][]).flat(),
      ).toEqual(["proj_items_budget", "proj_items_landing", "proj_items_status", "proj_sessions_open"]);
      // The next materialization writes the new layout (forge and reset on every item) and records its hash.
      expect(materialize(root, store)).toContain("state.json");
      const text = readFileSync(join(root, "state.json"), "utf8");
      expect(JSON.parse(text).items.every((it: object) => "forge" in it && "reset" in it)).toBe(true);
      expect(store.db.query("SELECT state_sha FROM proj_loop").get()).toEqual({ state_sha: sha256Hex(text) });
    } finally {
      store.close();
    }
    expect(statusReport(root).healthy).toBe(true);
    expect((await replayReport(root)).ok).toBe(true);
  });
});

describe("state_sha: the hash of state.json as written from the projection", () => {
  test("an append clears it until state.json is written again; a recorded hash that names another text is a replay finding", async () => {
    const root = midRun();
    const store = Store.open(root);
    try {
      const sha = () => (store.db.query("SELECT state_sha FROM proj_loop").get() as { state_sha: string }).state_sha;
      expect(sha()).toBe(sha256Hex(readFileSync(join(root, "state.json"), "utf8")));
      store.append([{ type: "control_recorded", item: "a", payload: { verb: "stop", text: null } }]);
      expect(sha()).toBe("");
      // Until then status finds the file does not prove itself, renders from the tables, and reports the difference.
      expect(statusReport(root).findings.map((f) => f.code)).toContain("state_field_mismatch");
      expect(new Set((await replayReport(root)).findings.map((f) => f.code))).toEqual(new Set(["state_field_mismatch"]));
      expect(materialize(root, store)).toEqual(["state.json"]);
      expect(sha()).toBe(sha256Hex(readFileSync(join(root, "state.json"), "utf8")));
      expect(statusReport(root).healthy).toBe(true);
    } finally {
      store.close();
    }
    tamper(root, (db) => db.run("UPDATE proj_loop SET state_sha = ?", [sha256Hex("another text\n")]));
    const r = await replayReport(root);
    expect(r.findings).toEqual([{ code: "projection_mismatch", message: expect.stringContaining("proj_loop.state_sha is ") }]);
  });
});

describe("a store written by a newer loop", () => {
  test("every command refuses it with corrupt_store naming both schemas, and nothing changes", async () => {
    const root = midRun();
    tamper(root, (db) => db.run("UPDATE meta SET value = ? WHERE key = 'schema'", [String(SCHEMA_VERSION + 1)]));
    const before = readFileSync(join(root, "loop.db"));
    const message = `store under ${root} has schema ${SCHEMA_VERSION + 1}, from a newer loop than this one (schema ${SCHEMA_VERSION})`;
    for (const open of [() => statusReport(root), () => Store.open(root)]) expect(open).toThrow(new StoreError("corrupt_store", message));
    await expect(replayReport(root)).rejects.toMatchObject({ name: "StoreError", code: "corrupt_store", message });
    for (const verb of ["status", "replay"]) {
      const r = await cli([verb, "--json", "--state-root", root]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(JSON.parse(r.stderr).error).toEqual({ code: "corrupt_store", message });
    }
    expect(readFileSync(join(root, "loop.db")).equals(before)).toBe(true);
  });
});

// A cold `loop status` pays for every module it evaluates (bench/README.md): the read side of the
// store (lib/log/snapshot.ts) must not pull in the writer, the event schemas or valibot.
describe("what a read verb loads", () => {
  test("status imports neither the writer nor the event schemas", async () => {
    const r = await Bun.build({ entrypoints: [join(import.meta.dir, "..", "..", "lib", "reports", "status.ts")], target: "bun", metafile: true });
    const inputs = Object.keys(r.metafile!.inputs);
    expect(inputs).toContain("lib/log/snapshot.ts");
    // Nor the files' writing side (lib/log/materialize.ts): status renders documents only to compare.
    for (const heavy of ["lib/log/store.ts", "lib/log/events.ts", "lib/log/schema-check.ts", "lib/log/materialize.ts"]) expect(inputs).not.toContain(heavy);
    expect(inputs.filter((p) => p.includes("node_modules/"))).toEqual([]);
  });
});
