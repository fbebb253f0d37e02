// `loop replay` on real stores: a clean realistic history replays clean, and every kind of
// tampering is detected and named at the right seq.
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { canonicalJson } from "../../lib/log/canonical.ts";
import type { EventDraft } from "../../lib/log/events.ts";
import { jsonText, stateDocument, terminalDocument } from "../../lib/log/documents.ts";
import { statePaths } from "../../lib/shared/paths.ts";
import { materialize } from "../../lib/log/materialize.ts";
import { statusReport } from "../../lib/reports/status.ts";
import { renderReplay } from "../../lib/reports/render.ts";
import { fold } from "../../lib/log/reducer.ts";
import { foldAndCheck, replayReport as replayReportIn } from "../../lib/reports/replay.ts";
import { rowToEvent, Store } from "../../lib/log/store.ts";
import { dbPath } from "../../lib/log/snapshot.ts";
import type { EventRow } from "../../lib/log/integrity.ts";
import { rechain, seal, started } from "../helpers/events.ts";
import { TempDirs } from "../helpers/fs.ts";
import { buildStore, readRows, realisticDrafts, tamper } from "../helpers/store.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

import { runInProcess } from "../helpers/cli.ts";

// Seqs of the realistic history (tests/helpers/store.ts): 1 store_opened, 2 definition_imported,
// 3 loop_started, 4..10 item a passes, 11..16 item b fails, 17 b reset, 18..24 b passes,
// 25..26 c skipped, 27 loop_drained.
const SEQ = { aSettled: 9, bStarted: 12, bEnded: 13, drained: 27, last: 27 };

function drainedStore(): string {
  const root = temp.make();
  buildStore(root, realisticDrafts());
  return root;
}
function openStore(): string {
  const root = temp.make();
  buildStore(root, realisticDrafts({ drain: false }));
  return root;
}

/** `loop replay --json` in process (tests/helpers/cli.ts): its exit code and document. */
const replayCli = (stateRoot: string) => runInProcess(["replay", "--json", "--state-root", stateRoot], { cwd: stateRoot });

/** Edit tables other than events on a raw connection, leaving no -wal behind. */
function withRaw(stateRoot: string, fn: (db: Database) => void) {
  const db = new Database(dbPath(stateRoot));
  try {
    fn(db);
    db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
}

function insertRows(db: Database, rows: EventRow[]) {
  for (const r of rows)
    db.run("INSERT INTO events(seq, id, ts, type, actor, item, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?)", [
      r.seq,
      r.id,
      r.ts,
      r.type,
      r.actor,
      r.item,
      r.payload,
      r.prev_hash,
      r.hash,
    ]);
}

/** Every replay here runs twice, with the hash chain checked on this thread and in a worker
 * thread beside the fold (as on large logs); both must give the same report. */
async function replayReport(root: string) {
  const inline = await replayReportIn(root, { worker: false });
  const threaded = await replayReportIn(root, { worker: true });
  expect(threaded).toEqual(inline);
  return inline;
}

const codes = (r: { findings: { code: string }[] }) => r.findings.map((f) => f.code);
const CHAIN = ["event_chain_broken", "event_sequence_gap"];

describe("a clean store replays clean", () => {
  test("realistic history: definition, attempts, landing, close, reset, skip, drain", async () => {
    const root = drainedStore();
    const r = await replayReport(root);
    expect(r.findings).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.events).toBe(SEQ.last);
    expect(r.foldedTo).toBe(SEQ.last);
    expect(r.checks).toEqual({ chain: "ok", legality: "ok", determinism: "ok", projection: "ok", files: "ok" });
    const cli = await replayCli(root);
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ schema: "loop/replay@1", ok: true, events: SEQ.last });
  });

  test("the history means what it says", async () => {
    const root = drainedStore();
    const s = Store.open(root);
    try {
      const p = s.projection();
      expect(p.loop.state).toBe("drained");
      expect(p.loop.outcome).toBe("Succeeded");
      expect(p.loop.drainedSeq).toBe(SEQ.drained);
      expect(Object.fromEntries(p.order.map((id) => [id, [p.items[id]!.status, p.items[id]!.epoch]]))).toEqual({
        a: ["passed", 0],
        b: ["passed", 1],
        c: ["skipped", 0],
      });
      expect(p.items.b!.attempts).toHaveLength(1); // the failed attempt went with the reset
    } finally {
      s.close();
    }
  });

  test("state.json written from the stored projection is the text the fold expects", async () => {
    // The stored projection comes back from canonical (key-sorted) rows; the fold keeps reducer
    // key order. Both must render the same state.json text.
    const root = drainedStore();
    const s = Store.open(root);
    try {
      const fromTables = s.projection();
      const folded = fold(readRows(root).map(rowToEvent));
      expect(fromTables.items.a!.landing).not.toBeNull();
      expect(jsonText(stateDocument(fromTables))).toBe(jsonText(stateDocument(folded)));
      expect(jsonText(terminalDocument(fromTables))).toBe(jsonText(terminalDocument(folded)));
      expect(readFileSync(statePaths(root).stateJson, "utf8")).toBe(jsonText(stateDocument(folded)));
    } finally {
      s.close();
    }
  });
});

describe("tampering with the log", () => {
  test("a payload byte changed behind the triggers' back: event_chain_broken at that seq", async () => {
    const root = drainedStore();
    const before = readRows(root)[SEQ.aSettled - 1]!;
    expect(before.payload).toContain("verify passed");
    tamper(root, (db) => db.run("UPDATE events SET payload = replace(payload, 'verify passed', 'verify passeD') WHERE seq = ?", [SEQ.aSettled]));
    const after = readRows(root)[SEQ.aSettled - 1]!;
    expect(after.payload.length).toBe(before.payload.length);
    expect(after.payload).not.toBe(before.payload);
    // The triggers are back in place.
    withRaw(root, (db) => expect(() => db.run("DELETE FROM events WHERE seq = 1")).toThrow(/append-only/));

    const r = await replayReport(root);
    expect(r.ok).toBe(false);
    expect(r.checks.chain).toBe("failed");
    const chain = r.findings.filter((f) => CHAIN.includes(f.code));
    expect(chain).toHaveLength(1);
    expect(chain[0]).toMatchObject({ code: "event_chain_broken", seq: SEQ.aSettled });
    expect((await replayCli(root)).code).toBe(1);
  });

  test("text output: a tampered event cannot print a line of its own (its line breaks are escaped)", async () => {
    const root = drainedStore();
    tamper(root, (db) =>
      db.run("UPDATE events SET type = 'loop_paused' || char(10) || 'ok: the log, the projection and the files agree' WHERE seq = ?", [SEQ.aSettled]),
    );
    const r = await replayReport(root);
    expect(r.ok).toBe(false);
    const lines = renderReplay(r).split("\n");
    expect(lines.filter((l) => l.startsWith("ok:"))).toEqual([]);
    expect(lines.some((l) => l.includes("loop_paused\\nok: the log"))).toBe(true);
  });

  test("a changed row whose own hash was recomputed breaks the link at the next seq", async () => {
    const root = drainedStore();
    const rows = readRows(root);
    const victim = rows[SEQ.aSettled - 1]!;
    const forged = seal({ ...victim }, { ...JSON.parse(victim.payload), reason: "forged" });
    tamper(root, (db) => db.run("UPDATE events SET payload = ?, hash = ? WHERE seq = ?", [canonicalJson(forged.payload), forged.hash, victim.seq]));
    const r = await replayReport(root);
    const chain = r.findings.filter((f) => CHAIN.includes(f.code));
    expect(chain).toHaveLength(1);
    expect(chain[0]).toMatchObject({ code: "event_chain_broken", seq: SEQ.aSettled + 1 });
  });

  test("a row deleted from the middle: named at the seq after the hole", async () => {
    const root = drainedStore();
    tamper(root, (db) => db.run("DELETE FROM events WHERE seq = ?", [SEQ.bStarted]));
    expect(readRows(root).map((r) => r.seq)).not.toContain(SEQ.bStarted);
    const r = await replayReport(root);
    expect(r.ok).toBe(false);
    const chain = r.findings.filter((f) => CHAIN.includes(f.code));
    expect(chain.length).toBeGreaterThan(0);
    for (const f of chain) expect(f.seq).toBe(SEQ.bStarted + 1);
    expect(codes(r)).toContain("event_sequence_gap");
    // The reducer's own seq rule would name the same hole again; it is not repeated.
    expect(codes(r)).not.toContain("illegal_event_sequence");
    expect(r.findings.every((f) => f.seq === undefined || f.seq >= SEQ.bStarted + 1)).toBe(true);
    expect(r.foldedTo).toBeNull();
    const cli = await replayCli(root);
    expect(cli.code).toBe(1);
    expect(JSON.parse(cli.stdout).findings.map((f: { code: string }) => f.code)).toContain("event_sequence_gap");
  });

  test("two rows swapped (contents swapped, seqs kept): event_chain_broken at the first of them", async () => {
    const root = drainedStore();
    const rows = readRows(root);
    const x = rows[SEQ.bStarted - 1]!;
    const y = rows[SEQ.bEnded - 1]!;
    tamper(root, (db) => {
      db.run("DELETE FROM events WHERE seq IN (?, ?)", [x.seq, y.seq]);
      insertRows(db, [
        { ...y, seq: x.seq },
        { ...x, seq: y.seq },
      ]);
    });
    const swapped = readRows(root);
    expect(swapped[SEQ.bStarted - 1]!.type).toBe("session_ended");
    expect(swapped[SEQ.bEnded - 1]!.type).toBe("session_started");
    const r = await replayReport(root);
    const chain = r.findings.filter((f) => CHAIN.includes(f.code));
    expect(chain[0]).toMatchObject({ code: "event_chain_broken", seq: SEQ.bStarted });
    expect(r.findings.every((f) => f.seq === undefined || f.seq >= SEQ.bStarted)).toBe(true);
  });

  test("an illegal event inserted with a valid hash chain: illegal_event_sequence at its seq", async () => {
    const root = drainedStore();
    const rows = readRows(root);
    const at = 4; // after loop_started: item c "starts a session" it never reserved
    const probe = started({ item: "c", attempt: 1 });
    const list = rows.map((r) => ({ id: r.id, ts: r.ts, type: r.type, actor: r.actor, item: r.item, payload: JSON.parse(r.payload) }));
    list.splice(at - 1, 0, { id: "inserted", ts: rows[at - 1]!.ts, type: probe.type, actor: "mallory", item: "c", payload: probe.payload });
    const chained = rechain(list).map((e) => ({ ...e, payload: canonicalJson(e.payload) }));
    expect(chained.slice(0, at - 1).map((e) => e.hash)).toEqual(rows.slice(0, at - 1).map((r) => r.hash));
    tamper(root, (db) => {
      db.run("DELETE FROM events");
      insertRows(db, chained);
    });
    const r = await replayReport(root);
    expect(r.findings).toHaveLength(1);
    expect(r.findings[0]).toMatchObject({ code: "illegal_event_sequence", seq: at });
    expect(r.findings[0]!.message).toContain("item_status");
    expect(r.checks.chain).toBe("ok");
    expect(r.checks.legality).toBe("failed");
    expect(r.foldedTo).toBeNull();
    expect(r.events).toBe(SEQ.last + 1);
  });
});

describe("tampering with what is derived from the log", () => {
  test("a projection row edited: projection_mismatch", async () => {
    const root = drainedStore();
    withRaw(root, (db) => {
      const body = (db.query("SELECT body FROM proj_items WHERE item = 'a'").get() as { body: string }).body;
      expect(body).toContain('"status":"passed"');
      db.run("UPDATE proj_items SET body = ? WHERE item = 'a'", [body.replace('"status":"passed"', '"status":"failed"')]);
    });
    const r = await replayReport(root);
    expect(codes(r)).toEqual(["projection_mismatch"]);
    expect(r.findings[0]!.message).toContain("proj_items[a]");
    expect(r.findings[0]!.message).toContain("status");
    expect(r.checks).toMatchObject({ chain: "ok", legality: "ok", projection: "failed", files: "ok" });
  });

  test("the loop row deleted, and a payload edited: both reported (exit 1), not a store that cannot be read", async () => {
    const root = drainedStore();
    withRaw(root, (db) => db.run("DELETE FROM proj_loop"));
    tamper(root, (db) => db.run("UPDATE events SET payload = replace(payload, 'verify passed', 'verify passeD') WHERE seq = ?", [SEQ.aSettled]));
    const r = await replayReport(root);
    expect(r.findings.find((f) => f.code === "event_chain_broken")).toMatchObject({ seq: SEQ.aSettled });
    expect(r.findings).toContainEqual({ code: "projection_mismatch", message: "proj_loop has no row; the fold has one" });
    expect((await replayCli(root)).code).toBe(1);
  });

  test("a projection row deleted or added: projection_mismatch", async () => {
    const root = drainedStore();
    withRaw(root, (db) => {
      db.run("DELETE FROM proj_ledgers WHERE item = 'c'");
      db.run("INSERT INTO proj_sessions(item, body) VALUES ('c', '{}')");
    });
    const r = await replayReport(root);
    expect(codes(r)).toEqual(["projection_mismatch", "projection_mismatch"]);
    expect(r.findings.map((f) => f.message).join("\n")).toMatch(/proj_ledgers\[c\] is missing/);
    expect(r.findings.map((f) => f.message).join("\n")).toMatch(/proj_sessions\[c\] exists/);
  });

  test("a state.json field edited: state_field_mismatch naming the field", async () => {
    const root = drainedStore();
    const path = statePaths(root).stateJson;
    const doc = JSON.parse(readFileSync(path, "utf8"));
    expect(doc.items[1].id).toBe("b");
    doc.items[1].status = "failed";
    doc.loop.state = "running";
    writeFileSync(path, jsonText(doc));
    const r = await replayReport(root);
    expect(new Set(codes(r))).toEqual(new Set(["state_field_mismatch"]));
    const messages = r.findings.map((f) => f.message).join("\n");
    expect(messages).toContain("items[1].status");
    expect(messages).toContain("loop.state");
    expect(r.findings).toHaveLength(2);
  });

  test("state.json whose bytes differ but decode to the same text (an invalid byte for a U+FFFD the document holds): state_field_mismatch", async () => {
    const root = drainedStore();
    const s = Store.open(root);
    try {
      s.append([{ type: "loop_paused", payload: { reason: "bad byte \ufffd here" } }]);
      materialize(root, s);
    } finally {
      s.close();
    }
    expect((await replayReport(root)).ok).toBe(true);
    const path = statePaths(root).stateJson;
    const bytes = readFileSync(path);
    const at = bytes.indexOf(Buffer.from("\ufffd"));
    expect(at).toBeGreaterThan(0);
    writeFileSync(path, Buffer.concat([bytes.subarray(0, at), Buffer.from([0xff]), bytes.subarray(at + 3)]));
    expect(readFileSync(path, "utf8")).toBe(bytes.toString("utf8"));
    const r = await replayReport(root);
    expect(r.findings).toEqual([
      { code: "state_field_mismatch", message: "state.json has the right values but not the exact bytes of the canonical document" },
    ]);
    // status compares values (another layout of the same values is healthy there, by design).
    expect(statusReport(root).healthy).toBe(true);
  });

  test("state.json that is not an object, or a FIFO in place of a file: findings with plain messages, never a hang", async () => {
    const root = drainedStore();
    const path = statePaths(root).stateJson;
    for (const text of ["null", "[]", "5"]) {
      writeFileSync(path, text);
      const r = await replayReport(root);
      expect(r.findings).toHaveLength(1);
      expect(r.findings[0]!.code).toBe("state_field_mismatch");
      expect(r.findings[0]!.message).toStartWith(`state.json <root>: ${text} on file, {`);
    }
    for (const target of [path, statePaths(root).terminal]) {
      rmSync(target, { force: true });
      expect(Bun.spawnSync(["mkfifo", target]).exitCode).toBe(0);
    }
    const r = await replayReport(root);
    expect(codes(r)).toEqual(["unreadable_state_file", "unreadable_terminal_file"]);
    expect(r.findings[0]!.message).toContain("not a regular file");
    expect(statusReport(root).findings.map((f) => f.code)).toEqual(["unreadable_state_file"]);
  });

  test("terminal_state.json present while not drained: desynced_terminal_window", async () => {
    const root = openStore();
    const term = statePaths(root).terminal;
    expect((await replayReport(root)).ok).toBe(true);
    writeFileSync(term, jsonText({ schema: "loop/terminal@1", outcome: "Succeeded", drainedSeq: 26, drainedAt: "x", counts: {}, items: [] }));
    const r = await replayReport(root);
    expect(codes(r)).toEqual(["desynced_terminal_window"]);
    expect(r.findings[0]!.message).toContain("running");
  });

  test("terminal_state.json absent while drained: desynced_terminal_window at the drain's seq", async () => {
    const root = drainedStore();
    rmSync(statePaths(root).terminal);
    const r = await replayReport(root);
    expect(r.findings).toHaveLength(1);
    expect(r.findings[0]).toMatchObject({ code: "desynced_terminal_window", seq: SEQ.drained });
  });

  test("garbage terminal_state.json is unreadable_terminal_file, never treated as absent", async () => {
    for (const root of [drainedStore(), openStore()]) {
      writeFileSync(statePaths(root).terminal, "{ not json \u0000");
      const r = await replayReport(root);
      expect(codes(r)).toEqual(["unreadable_terminal_file"]);
    }
    // A directory in its place cannot be read either; that is not "absent".
    for (const root of [drainedStore(), openStore()]) {
      rmSync(statePaths(root).terminal, { force: true });
      mkdirSync(statePaths(root).terminal);
      const r = await replayReport(root);
      expect(codes(r)).toEqual(["unreadable_terminal_file"]);
    }
  });

  test("an edited terminal_state.json: terminal_state_mismatch", async () => {
    const root = drainedStore();
    const path = statePaths(root).terminal;
    const doc = JSON.parse(readFileSync(path, "utf8"));
    expect(doc.outcome).toBe("Succeeded");
    doc.outcome = "Failed";
    writeFileSync(path, jsonText(doc));
    const r = await replayReport(root);
    expect(codes(r)).toEqual(["terminal_state_mismatch"]);
    expect(r.findings[0]!.message).toContain("outcome");
  });

  test("foldAndCheck on a clean log returns the same projection as the stored one", async () => {
    const root = drainedStore();
    const s = Store.open(root);
    try {
      const check = foldAndCheck(s.db);
      expect(check.findings).toEqual([]);
      expect(check.projection).toEqual(s.projection());
    } finally {
      s.close();
    }
  });
});

describe("RUNLOG.md against the log", () => {
  const runlogOf = (root: string) => statePaths(root).runlog;
  const blockSeqs = (text: string) => [...text.matchAll(/<!-- loop:seq=(\d+) -->\n### (.*)\n/g)].map((m) => ({ seq: Number(m[1]), heading: m[2]! }));

  test("a forged block appended (a failed item shown passed) is named; the next materialization writes the file anew from the log", async () => {
    const root = drainedStore();
    const text = readFileSync(runlogOf(root), "utf8");
    const failed = blockSeqs(text).find((b) => b.heading.startsWith("b") && b.heading.endsWith("failed"))!;
    expect(failed).toBeDefined();
    const forged = `<!-- loop:seq=99 -->\n### b · attempt 1 · passed\n\n- at: 2025-06-01T09:00:00.000Z (seq 99, by cron@build)\n- reason: verify passed (exit 0)\n<!-- /loop:seq=99 -->\n\n`;
    writeFileSync(runlogOf(root), text + forged);
    const r = await replayReport(root);
    expect(r.checks.files).toBe("failed");
    expect(r.findings).toEqual([
      {
        code: "runlog_mismatch",
        seq: 99,
        message: 'RUNLOG.md has a block for seq 99 ("b · attempt 1 · passed") that is not in the log: no decision was recorded at seq 99',
      },
    ]);
    // A step's repair checks the last block against the log: not the log's, so the file is written anew.
    const s = Store.open(root);
    try {
      materialize(root, s);
    } finally {
      s.close();
    }
    expect(readFileSync(runlogOf(root), "utf8")).toBe(text);
    expect((await replayReport(root)).ok).toBe(true);
  });

  test("a block edited in the middle is named at its seq", async () => {
    const root = drainedStore();
    const text = readFileSync(runlogOf(root), "utf8");
    const failed = blockSeqs(text).find((b) => b.heading.startsWith("b") && b.heading.endsWith("failed"))!;
    writeFileSync(runlogOf(root), text.replace(`### ${failed.heading}\n`, `### ${failed.heading.replace(/failed$/, "passed")}\n`));
    const r = await replayReport(root);
    expect(r.findings).toEqual([
      {
        code: "runlog_mismatch",
        seq: failed.seq,
        message: `RUNLOG.md's block for seq ${failed.seq} ("${failed.heading.replace(/failed$/, "passed")}") is not the log's ("${failed.heading}")`,
      },
    ]);
  });

  test("text outside the blocks is named; a torn last block, missing blocks or a missing file are a crash's leftovers, not findings", async () => {
    const root = drainedStore();
    const text = readFileSync(runlogOf(root), "utf8");
    writeFileSync(runlogOf(root), text.replace(/(<!-- \/loop:seq=\d+ -->\n\n)/, "$1all passed, trust me\n\n"));
    const r = await replayReport(root);
    expect(codes(r)).toEqual(["runlog_mismatch"]);
    expect(r.findings[0]!.message).toMatch(
      /^RUNLOG\.md differs from what the log renders after byte \d+: text outside its blocks, or a block missing between two others$/,
    );
    writeFileSync(runlogOf(root), text.slice(0, text.length - 30));
    expect((await replayReport(root)).ok).toBe(true);
    rmSync(runlogOf(root));
    expect((await replayReport(root)).ok).toBe(true);
    // A FIFO in its place is named, never read (it would hang the read verb).
    Bun.spawnSync(["mkfifo", runlogOf(root)]);
    expect((await replayReport(root)).findings).toEqual([{ code: "runlog_mismatch", message: "RUNLOG.md cannot be read: not a regular file" }]);
  });
});

describe("anchoring the head outside the machine (--expect-head)", () => {
  const replayAnchored = (stateRoot: string, anchor: string) =>
    runInProcess(["replay", "--json", "--state-root", stateRoot, "--expect-head", anchor], { cwd: stateRoot });

  test("the head printed earlier is still there after more events: ok, and the text prints the head to record", async () => {
    const root = openStore();
    const before = JSON.parse((await replayCli(root)).stdout);
    const anchor = `${before.head.seq}:${before.head.hash}`;
    const s = Store.open(root);
    try {
      s.append([{ type: "loop_paused", payload: { reason: "later" } }]);
      materialize(root, s);
    } finally {
      s.close();
    }
    const r = await replayAnchored(root, anchor);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.head.seq).toBe(before.head.seq + 1);
    expect(doc.expectedHead).toEqual({ seq: before.head.seq, hash: before.head.hash, ok: true });
    const text = await runInProcess(["replay", "--text", "--state-root", root], { cwd: root });
    expect(text.stdout.split("\n")[1]).toBe(`head ${doc.head.seq}:${doc.head.hash}`);
  });

  test("a log rebuilt whole by a local writer (every hash recomputed) replays clean, and only the anchor tells", async () => {
    const root = drainedStore();
    const rows = readRows(root);
    const anchor = `${SEQ.aSettled}:${rows[SEQ.aSettled - 1]!.hash}`;
    // The writer makes a consistent store that says something else: a's passing reason, forged.
    const forged = temp.make();
    const drafts = realisticDrafts().map((d, i) => (i + 2 === SEQ.aSettled ? ({ ...d, payload: { ...d.payload, reason: "forged" } } as EventDraft) : d));
    buildStore(forged, drafts);
    for (const f of ["loop.db", "state.json", "RUNLOG.md", "terminal_state.json"]) writeFileSync(join(root, f), readFileSync(join(forged, f)));
    expect((await replayCli(root)).code).toBe(0);
    const r = await replayAnchored(root, anchor);
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    expect(doc.expectedHead.ok).toBe(false);
    expect(doc.findings).toEqual([
      {
        code: "head_mismatch",
        seq: SEQ.aSettled,
        message: expect.stringMatching(
          new RegExp(
            `^the event at seq ${SEQ.aSettled} has hash [0-9a-f]{64}, not the expected ${rows[SEQ.aSettled - 1]!.hash}: the log up to there was rewritten`,
          ),
        ),
      },
    ]);
  });

  test("an anchor past the end of the log is named; a malformed one is a usage error (exit 2)", async () => {
    const root = drainedStore();
    const r = await replayAnchored(root, `${SEQ.last + 5}:${"a".repeat(64)}`);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).findings[0]).toMatchObject({
      code: "head_mismatch",
      seq: SEQ.last + 5,
      message: expect.stringContaining(`but the log ends at seq ${SEQ.last}`),
    });
    for (const bad of ["12", "x:abc", `0:${"a".repeat(64)}`, `3:${"A".repeat(64)}`]) {
      const u = await replayAnchored(root, bad);
      expect(u.code).toBe(2);
      expect(u.stderr).toContain("--expect-head must be <seq>:<hash>");
    }
  });
});
