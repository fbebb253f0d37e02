// Canonical JSON is the byte form every event hash is computed over; if it ever changes, every
// existing log stops verifying. These golden vectors were computed once (and the hashes checked
// against an independent sha256 over the UTF-8 bytes) and are frozen here as literals.
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { canonicalJson, GENESIS_HASH, sha256Hex } from "../../lib/log/canonical.ts";
import { CanonicalJsonError } from "../../lib/shared/errors.ts";
import { checkIntegrity, hashInput } from "../../lib/log/integrity.ts";
import { Store } from "../../lib/log/store.ts";
import { TempDirs } from "../helpers/fs.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

// name -> [input, frozen canonical text, frozen sha256 hex]. Source is kept ASCII: every non-ASCII
// or control character is written as a \u escape so the expected bytes are unambiguous.
const GOLDEN: Record<string, [unknown, string, string]> = {
  "nested objects, unsorted keys": [
    { b: { z: 1, a: [3, 2, 1], m: { y: "y", x: "x" } }, a: { y: null, x: true }, "": 0, B: false },
    '{"":0,"B":false,"a":{"x":true,"y":null},"b":{"a":[3,2,1],"m":{"x":"x","y":"y"},"z":1}}',
    "19f1c7b72ef99c8aca14b164a25e209f24145189e2d3d927f41f38e8e310e0ca",
  ],
  "arrays (order kept, nested, empty)": [
    [[], {}, [1, [2, [3, []]]], "x", [null]],
    '[[],{},[1,[2,[3,[]]]],"x",[null]]',
    "2dad6692e35bf06b6e68f26ab405d145d2415d61f125ed9983b4e4b06c292dae",
  ],
  "null and booleans": [[null, true, false], "[null,true,false]", "37257214f22b92121c5ff4d7e29ed2d31b3f1129ee698e96e581ec05cb2e3cf7"],
  "top-level null": [null, "null", "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"],
  "top-level true": [true, "true", "b5bea41b6c623f7c09f1bf24dcae58ebab3c0cdd90ad966bc43a45b44867e12b"],
  "integers incl. negative and +-(2^53-1)": [
    [0, -1, 42, -42, 9007199254740991, -9007199254740991],
    "[0,-1,42,-42,9007199254740991,-9007199254740991]",
    "026741fe9483e05a00d4329fe66eb3fd23165c73b9673c3c3310b770e1998a10",
  ],
  "quotes, backslashes and control characters": [
    'q"uote b\\ack \u0000 nl\n us\u001f tab\t cr\r bs\b ff\f del\u007f /',
    '"q\\"uote b\\\\ack \\u0000 nl\\n us\\u001f tab\\t cr\\r bs\\b ff\\f del\u007f /"',
    "8cc9fd119bf30a0827b8a1eadff5af4668cef0c6b03d076fb3e1e37ac68a1fac",
  ],
  "non-ASCII kept raw (e-acute, CJK, emoji as a surrogate pair)": [
    { "\u00e9": "caf\u00e9", "\u65e5\u672c\u8a9e": "\u65e5\u672c\u8a9e", emoji: "\ud83d\ude00 grin" },
    '{"emoji":"\ud83d\ude00 grin","\u00e9":"caf\u00e9","\u65e5\u672c\u8a9e":"\u65e5\u672c\u8a9e"}',
    "7b9f8477417e2bde3d5c286db98d7e04244fdc05d6b8a6c3e00330ccab9fc108",
  ],
  "keys sorted by UTF-16 code units (emoji before U+FFFF, '10' before '2')": [
    { z: 1, "\uffff": 2, "\ud83d\ude00": 3, "\u00e9": 4, "10": 5, "2": 6, A: 7, a: 8 },
    '{"10":5,"2":6,"A":7,"a":8,"z":1,"\u00e9":4,"\ud83d\ude00":3,"\uffff":2}',
    "ee79deca49601b082d1f84314f643a0791d04cda602819646628164dbea012bd",
  ],
  "U+2028 and U+2029 kept raw": ["a\u2028b\u2029c", '"a\u2028b\u2029c"', "18c6bee2c10cadf5dec772e4b216f9060a21814a302ce989e183178afcf43e1a"],
  "undefined properties are absent": [
    { keep: 1, drop: undefined, nested: { gone: undefined } },
    '{"keep":1,"nested":{}}',
    "1ef8c4e84cb90fcc53cd6f4c50ee54c0ede7760a3dbba05bf648ac6ea3380b9f",
  ],
};

describe("canonicalJson golden vectors", () => {
  for (const [name, [input, text, hash]] of Object.entries(GOLDEN)) {
    test(name, () => {
      const out = canonicalJson(input);
      expect(out).toBe(text);
      expect(sha256Hex(out)).toBe(hash);
      // sha256Hex hashes the UTF-8 bytes: an independent implementation agrees.
      expect(createHash("sha256").update(Buffer.from(out, "utf8")).digest("hex")).toBe(hash);
      // Canonical text is valid JSON that parses back to the same value and is a fixed point.
      expect(canonicalJson(JSON.parse(out))).toBe(out);
    });
  }

  test("the emoji is one surrogate pair in the text and four UTF-8 bytes in the hash input", () => {
    const out = canonicalJson("\ud83d\ude00");
    expect(out).toBe('"\ud83d\ude00"');
    expect(out.length).toBe(4); // two quotes + two UTF-16 code units
    expect(Buffer.byteLength(out, "utf8")).toBe(6);
    expect(out).not.toContain("\\u");
  });

  test("key insertion order never changes the text", () => {
    const a = canonicalJson({ x: 1, y: { p: [1, 2], q: null } });
    const b = canonicalJson({ y: { q: null, p: [1, 2] }, x: 1 });
    expect(a).toBe(b);
    expect(a).toBe('{"x":1,"y":{"p":[1,2],"q":null}}');
  });

  test("objects with a null prototype are plain objects", () => {
    const o = Object.create(null) as Record<string, unknown>;
    o.b = 2;
    o.a = 1;
    expect(canonicalJson(o)).toBe('{"a":1,"b":2}');
  });
});

describe("canonicalJson rejections", () => {
  const rejects: [string, unknown, string][] = [
    ["NaN", NaN, ""],
    ["Infinity", Infinity, ""],
    ["-Infinity", -Infinity, ""],
    ["-0", -0, ""],
    ["-0 nested", { a: [1, -0] }, "a[1]"],
    ["1.5", 1.5, ""],
    ["2^53", 2 ** 53, ""],
    ["-(2^53)", -(2 ** 53), ""],
    ["1e21", 1e21, ""],
    ["NaN in an object", { n: NaN }, "n"],
    ["lone high surrogate", "\ud800", ""],
    ["lone low surrogate", "\udc00", ""],
    ["high surrogate at the end", "ok\ud83d", ""],
    ["reversed pair", "\ude00\ud83d", ""],
    ["lone surrogate nested in a value", { a: { b: ["x", "\udfff"] } }, "a.b[1]"],
    ["lone surrogate in a key", { "\ud800": 1 }, ""],
    ["lone surrogate in a nested key", { a: { "k\udc00": true } }, "a"],
    ["undefined in an array", [1, undefined, 3], "[1]"],
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case
    ["hole in a sparse array", [1, , 3], "[1]"],
    ["top-level undefined", undefined, ""],
    ["Date", new Date(0), ""],
    ["Date nested", { at: new Date(0) }, "at"],
    ["Map", new Map([["a", 1]]), ""],
    ["Set", new Set([1]), ""],
    ["RegExp", /x/, ""],
    ["Uint8Array", new Uint8Array([1]), ""],
    ["boxed string", new String("x"), ""],
    [
      "class instance",
      new (class Thing {
        a = 1;
      })(),
      "",
    ],
    ["function", () => 1, ""],
    ["function in an object", { f() {} }, "f"],
    ["bigint", 1n, ""],
    ["bigint in an array", [1n], "[0]"],
    ["symbol", Symbol("s"), ""],
  ];
  for (const [name, value, path] of rejects) {
    test(name, () => {
      let err: unknown;
      try {
        canonicalJson(value);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CanonicalJsonError);
      expect((err as CanonicalJsonError).path).toBe(path);
      expect((err as Error).message.startsWith(`${path || "<root>"}: `)).toBe(true);
    });
  }

  test("a well-formed surrogate pair next to a rejected lone one is still rejected", () => {
    expect(() => canonicalJson("\ud83d\ude00\ud83d")).toThrow(CanonicalJsonError);
    expect(canonicalJson("\ud83d\ude00\ud83d\ude00")).toBe('"\ud83d\ude00\ud83d\ude00"');
  });
});

describe("hashInput equals canonicalJson of the row", () => {
  const rows: { row: Parameters<typeof hashInput>[0]; payload: unknown }[] = [
    {
      row: {
        seq: 1,
        id: "8d6f1c1e-0000-4000-8000-000000000001",
        ts: "2025-01-01T00:00:00.000Z",
        type: "store_opened",
        actor: "loop",
        item: null,
        prev_hash: GENESIS_HASH,
      },
      payload: { tool: "loop", schema: 1 },
    },
    {
      row: {
        seq: 2,
        id: "x",
        ts: "2025-01-01T00:00:01.000Z",
        type: "control_recorded",
        actor: "Jos\u00e9 \u65e5\u672c \ud83d\ude00",
        item: "fix-login",
        prev_hash: "a".repeat(64),
      },
      payload: { verb: "reply", text: 'he said "go"\n\u2028\\done' },
    },
    {
      row: { seq: 9007199254740991, id: 'q"uote\\id', ts: "t", type: "loop_drained", actor: "ctl\u0000\u001f", item: null, prev_hash: "f".repeat(64) },
      payload: { outcome: "Succeeded", counts: { skipped: 1, passed: 2 } },
    },
    {
      row: { seq: 3, id: "y", ts: "2025-01-01T00:00:02.000Z", type: "definition_imported", actor: "\u00e9", item: "a.b_c-1", prev_hash: "0".repeat(64) },
      payload: { z: [{ b: 1, a: [] }], a: { "\u00e9": null, e: false } },
    },
  ];
  for (const [i, { row, payload }] of rows.entries()) {
    test(`row ${i + 1} (${row.type}, actor ${JSON.stringify(row.actor)}, item ${row.item})`, () => {
      const viaHashInput = hashInput(row, canonicalJson(payload));
      expect(viaHashInput).toBe(canonicalJson({ ...row, payload }));
      expect(sha256Hex(viaHashInput)).toBe(sha256Hex(canonicalJson({ ...row, payload })));
    });
  }

  test("the integrity pass verifies rows whose strings need escaping, and finds such a row changed", () => {
    // Including a change to the escaped *spelling* of the same text (a"b -> a\"b): an input built
    // without escaping would hash the changed row to the original's hash and miss it.
    const root = temp.make();
    const store = Store.open(root, { create: true, actor: 'o"brien\\ops\n' });
    try {
      store.append([{ type: "loop_paused", payload: { reason: "r" }, actor: "tab\there \u0001" }]);
      store.append([{ type: "loop_resumed", payload: {}, actor: "plain" }]);
      expect(checkIntegrity(store.db)).toEqual({ events: 3, findings: [] });
      store.db.run("DROP TRIGGER events_no_update");
      store.db.run(`UPDATE events SET actor = 'o"brien\\ops' WHERE seq = 1`);
      expect(checkIntegrity(store.db).findings).toEqual([{ code: "event_chain_broken", seq: 1, message: "seq 1: stored hash does not match its contents" }]);
      store.db.run(`UPDATE events SET actor = ? WHERE seq = 1`, [JSON.stringify('o"brien\\ops\n').slice(1, -1)]);
      expect(checkIntegrity(store.db).findings.map((f) => f.seq)).toEqual([1]);
    } finally {
      store.close();
    }
  });

  test("rows written by a real store verify through hashInput (non-ASCII actor, null item)", () => {
    const root = temp.make();
    const store = Store.open(root, { create: true, actor: "Zo\u00eb \ud83d\ude00" });
    try {
      store.append([{ type: "loop_paused", payload: { reason: "caf\u00e9 \u2028 break" }, actor: "\u65e5\u672c\u8a9e" }]);
      const rows = store.db.query("SELECT seq, id, ts, type, actor, item, payload, prev_hash, hash FROM events ORDER BY seq").all() as any[];
      expect(rows.map((r) => r.actor)).toEqual(["Zo\u00eb \ud83d\ude00", "\u65e5\u672c\u8a9e"]);
      expect(rows.map((r) => r.item)).toEqual([null, null]);
      let prev = GENESIS_HASH;
      for (const r of rows) {
        expect(r.prev_hash).toBe(prev);
        expect(r.payload).toBe(canonicalJson(JSON.parse(r.payload)));
        const text = hashInput(r, r.payload);
        const { hash: _h, payload, ...rest } = r;
        expect(text).toBe(canonicalJson({ ...rest, payload: JSON.parse(payload) }));
        expect(sha256Hex(text)).toBe(r.hash);
        prev = r.hash;
      }
    } finally {
      store.close();
    }
  });
});
