// What a step reads (lib/step/definition.ts, lib/step/step.ts): loop.json is parsed only when its
// bytes are not the ones a step of this version last read in full, and a step with an item in flight
// reads the loop and that item, not the backlog. Both are shown by what a step does when the thing
// it should not read is broken: it does not notice.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dbPath } from "../../lib/log/snapshot.ts";
import { VERSION } from "../../lib/shared/version.ts";
import { demoDefinition, scenario } from "../helpers/project.ts";

const T = 120_000;
const sha256 = (bytes: Uint8Array | string) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

/** The store's note of the loop.json a step last read in full. */
function note(stateRoot: string): { sha256: string; hash: string; version: string; local: { notify: unknown } } {
  const db = new Database(dbPath(stateRoot), { readonly: true });
  try {
    return JSON.parse((db.query("SELECT value FROM meta WHERE key = 'definition'").get() as { value: string }).value);
  } finally {
    db.close();
  }
}

function setNote(stateRoot: string, n: object) {
  const db = new Database(dbPath(stateRoot));
  try {
    db.run("UPDATE meta SET value = ? WHERE key = 'definition'", [JSON.stringify(n)]);
    db.run("PRAGMA wal_checkpoint(PASSIVE)");
  } finally {
    db.close();
  }
}

describe("loop.json is read in full only when its bytes are new", () => {
  test.concurrent(
    "a step notes the bytes it parsed; the next one with those bytes takes the definition from the log; other bytes are parsed and validated",
    () =>
      scenario(
        demoDefinition(
          [
            { id: "a", prompt: "a" },
            { id: "b", prompt: "b", dependsOn: ["a"] },
          ],
          { notify: { command: ["true"] } },
        ),
        {},
        async (p) => {
          await p.runToDrain();
          const file = join(p.root, "loop.json");
          const first = readFileSync(file, "utf8");
          const known = note(p.stateRoot);
          expect(known).toMatchObject({ sha256: sha256(readFileSync(file)), version: VERSION, local: { notify: { command: ["true"], timeout: 30_000 } } });
          expect(known.hash).toBe(p.projection().loop.definitionHash!);
          // The note is trusted for exactly those bytes: an invalid loop.json whose hash it names is
          // not even parsed (a step of this version read those bytes and found them valid)...
          const invalid = '{ "name": "t", "items": [ { "id": "Bad Id" } ] }\n';
          writeFileSync(file, invalid);
          setNote(p.stateRoot, { ...known, sha256: sha256(invalid) });
          const skipped = await p.run();
          expect(skipped.action).toBe("drained");
          expect(skipped.transitions).toEqual([]);
          // ...and not by another version, nor for other bytes: those are parsed, refused, nothing changed.
          const head = p.head();
          setNote(p.stateRoot, { ...known, sha256: sha256(invalid), version: "0.0.0-other" });
          const refused = await p.loop(["run", "--json", "--root", p.root]);
          expect(refused.code).toBe(2);
          expect(refused.stderr).toContain("invalid_definition");
          setNote(p.stateRoot, known);
          expect((await p.loop(["run", "--json", "--root", p.root])).code).toBe(2);
          expect(p.head()).toBe(head);
          // Bytes that differ but normalize the same are parsed once, imported never, and noted.
          p.writeDefinition(JSON.stringify(JSON.parse(first), null, 4));
          const same = await p.run();
          expect(same.transitions).toEqual([]);
          expect(note(p.stateRoot)).toEqual({ ...known, sha256: sha256(readFileSync(file)) });
          // A new definition is imported, and noted.
          p.writeDefinition(
            demoDefinition([
              { id: "a", prompt: "a" },
              { id: "b", prompt: "b", dependsOn: ["a"] },
              { id: "c", prompt: "c" },
            ]),
          );
          const imported = await p.runToDrain();
          expect(p.eventsOf("definition_imported")).toHaveLength(2);
          expect(imported.loop.outcome).toBe("Succeeded");
          expect(note(p.stateRoot)).toMatchObject({ sha256: sha256(readFileSync(file)), hash: p.projection().loop.definitionHash!, local: { notify: null } });
        },
      ),
    T,
  );
});

describe("a step with an item in flight reads the loop and that item only", () => {
  test.concurrent(
    "an observing step does not read the other items (one of them damaged), where a step deciding over every item does",
    () =>
      scenario(
        demoDefinition(
          [
            { id: "a", prompt: "a" },
            { id: "b", prompt: "b" },
            { id: "c", prompt: "c" },
          ],
          {
            runners: { sleeper: { command: ["sh", "-c", "echo working; sleep 600"] } },
            defaults: { runner: "sleeper" },
          },
        ),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          const raw = () => new Database(dbPath(p.stateRoot));
          const damage = (sql: string, args: string[] = []) => {
            const db = raw();
            try {
              db.run(sql, args);
              db.run("PRAGMA wal_checkpoint(PASSIVE)");
            } finally {
              db.close();
            }
          };
          const good = (() => {
            const db = raw();
            try {
              return (db.query("SELECT body FROM proj_ledgers WHERE item = 'c'").get() as { body: string }).body;
            } finally {
              db.close();
            }
          })();
          damage("UPDATE proj_ledgers SET body = 'not json' WHERE item = 'c'");
          for (let i = 0; i < 2; i++) {
            const r = await p.run();
            expect({ action: r.action, item: r.item, transitions: r.transitions }).toEqual({ action: "waiting", item: "a", transitions: [] });
          }
          // Status reads state.json (current, by its hash); replay reads everything and finds it.
          expect((await p.loop(["status", "--json", "--root", p.root])).code).toBe(0);
          const replay = JSON.parse((await p.loop(["replay", "--json", "--root", p.root])).stdout);
          expect(replay.findings.map((f: { code: string; message: string }) => `${f.code} ${f.message.split(" ")[0]}`)).toEqual([
            "projection_mismatch proj_ledgers[c]",
          ]);
          // What decides over every item reads it, and refuses the damage: `loop ctl stop` plans from the whole projection.
          const refused = await p.ctl(["stop", "--yes"]);
          expect({ code: refused.code, error: JSON.parse(refused.stderr).error.code }).toEqual({ code: 2, error: "corrupt_store" });
          damage("UPDATE proj_ledgers SET body = ? WHERE item = 'c'", [good]);
          expect((await p.ctl(["stop", "--yes"])).code).toBe(0);
        },
      ),
    T,
  );
});
