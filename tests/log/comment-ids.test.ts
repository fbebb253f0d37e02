// Comment ids became the tracker's own strings (schema 10, docs/trackers.md#comment-ids). A store
// written before holds numbers in its events and its tables: a writer opening it folds the log again
// (the numbers read as decimal strings), replay then finds the tables and the fold alike, and the
// reducer's rule (each comment acted on once) holds across the old numbers and new strings.
import { afterAll, describe, expect, test } from "bun:test";
import { Store, rowToEvent } from "../../lib/log/store.ts";
import { SCHEMA_VERSION } from "../../lib/log/snapshot.ts";
import { fold } from "../../lib/log/reducer.ts";
import { compareProjection, replayReport } from "../../lib/reports/replay.ts";
import { canonicalJson } from "../../lib/log/canonical.ts";
import { materialize } from "../../lib/log/materialize.ts";
import type { EventRow } from "../../lib/log/integrity.ts";
import { TempDirs } from "../helpers/fs.ts";
import { buildStore, tamper } from "../helpers/store.ts";
import { definition, itemDef, loopStarted } from "../helpers/events.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

describe("a store of schema 9, its comment ids numbers", () => {
  function schemaNineStore(): string {
    const root = temp.make();
    buildStore(root, [
      definition(1, [itemDef("a", { ref: "github:acme/api#1" })]),
      loopStarted,
      { type: "forge_thread_baselined", item: "a", payload: { issue: 1, highWater: 99, comments: 2, through: "2026-03-01T10:00:00Z" } },
      {
        type: "forge_comment_handled",
        item: "a",
        actor: "github:alice",
        payload: { issue: 1, commentId: 100, login: "alice", action: "message", detail: "hi", createdAt: "2026-03-01T11:00:00Z" },
      },
    ]);
    // The tables as schema 9 wrote them: the ledger's ids as numbers.
    tamper(root, (db) => {
      db.run("UPDATE meta SET value = '9' WHERE key = 'schema'");
      for (const [item, body] of db.query("SELECT item, body FROM proj_ledgers").values() as [string, string][]) {
        const l = JSON.parse(body);
        if (!l.forge) continue;
        l.forge.highWater = Number(l.forge.highWater);
        l.forge.lastComment.id = Number(l.forge.lastComment.id);
        l.forge.messages = l.forge.messages.map((m: { id: string }) => ({ ...m, id: Number(m.id) }));
        db.run("UPDATE proj_ledgers SET body = ? WHERE item = ?", [canonicalJson(l), item]);
      }
    });
    return root;
  }

  test("a writer folds it again: the ids are strings, replay is clean, and a newer comment (a string) is acted on once", async () => {
    const root = schemaNineStore();
    const store = Store.open(root);
    try {
      expect((store.db.query("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string }).value).toBe(String(SCHEMA_VERSION));
      const events = store.db.query("SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events ORDER BY seq").all() as EventRow[];
      expect(compareProjection(store.db, fold(events.map(rowToEvent)))).toEqual([]);
      expect(store.projection().items.a!.forge).toMatchObject({ highWater: "100", lastComment: { id: "100" }, messages: [{ id: "100" }] });
      store.append([
        {
          type: "forge_comment_handled",
          item: "a",
          actor: "github:alice",
          payload: { issue: 1, commentId: "101", login: "alice", action: "message", detail: "again", createdAt: "2026-03-01T12:00:00Z" },
        },
      ]);
      expect(() =>
        store.append([
          {
            type: "forge_comment_handled",
            item: "a",
            actor: "github:alice",
            payload: { issue: 1, commentId: 101, login: "alice", action: "message", detail: "twice", createdAt: "2026-03-01T12:00:00Z" },
          },
        ]),
      ).toThrow();
      expect(store.projection().items.a!.forge!.highWater).toBe("101");
      materialize(root, store);
    } finally {
      store.close();
    }
    expect((await replayReport(root)).ok).toBe(true);
  });
});
