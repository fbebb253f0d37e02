// How a projection is laid out in the projection tables, and back. Each row body is canonical JSON,
// so "table equals fold" is a string comparison, row by row. The tables are a cache of the fold:
// when their layout changes, the store's migration folds the log again and rewrites them
// (store.ts migrate), so a row never has to keep an older layout's bytes.
import type { Database } from "bun:sqlite";
import { canonicalJson } from "./canonical.ts";
import { type ControlRecord, type ForgeRecord, type ItemState, itemOf, type LoopRecord, type Projection, type SessionRecord } from "./projection.ts";

export const ITEM_TABLES = ["proj_items", "proj_sessions", "proj_control", "proj_ledgers", "proj_workspaces"] as const;
export type ItemTable = (typeof ITEM_TABLES)[number];
/** Tables every item has a row in; the others hold a row only while the item has that record. */
export const REQUIRED_TABLES = ["proj_items", "proj_control", "proj_ledgers"] as const satisfies readonly ItemTable[];

/** The loop's row of `proj_loop` as the fold gives it. */
interface LoopRow {
  seq: number;
  hash: string;
  state: string;
  body: string;
}

/**
 * The row as stored, with `state_sha`: the sha256 of the state.json text last materialized from the
 * projection at this row's seq, recorded when that file was written (materialize.ts); "" until then.
 * `loop status` trusts a state.json with that hash as the projection's document.
 */
export interface StoredLoopRow extends LoopRow {
  state_sha: string;
}

/** What each table's body holds of an item. */
type ItemsBody = Pick<
  ItemState,
  "id" | "def" | "inDefinition" | "status" | "reason" | "settleCode" | "epoch" | "settledAt" | "landing" | "reset" | "budgetStop"
>;
type ControlBody = { control: ControlRecord[]; held: boolean; started: boolean };
type LedgersBody = Pick<ItemState, "attempts" | "failures" | "replies" | "question" | "forge">;
/** The body of `proj_loop`. */
interface LoopBody {
  loop: LoopRecord;
  order: string[];
}

/** One table's row of an item; null means "no row". */
export function itemRow(it: ItemState, table: ItemTable): string | null {
  switch (table) {
    case "proj_items":
      return canonicalJson({
        id: it.id,
        def: it.def,
        inDefinition: it.inDefinition,
        status: it.status,
        reason: it.reason,
        settleCode: it.settleCode,
        epoch: it.epoch,
        settledAt: it.settledAt,
        landing: it.landing,
        reset: it.reset,
        // Absent (an undefined key is no key) unless the item's budget stopped it.
        budgetStop: it.budgetStop,
      } satisfies ItemsBody);
    case "proj_sessions":
      return it.session ? canonicalJson(it.session) : null;
    case "proj_control":
      return canonicalJson({ control: it.control, held: it.held, started: it.started } satisfies ControlBody);
    case "proj_ledgers":
      return canonicalJson({ attempts: it.attempts, failures: it.failures, replies: it.replies, question: it.question, forge: it.forge } satisfies LedgersBody);
    case "proj_workspaces":
      return it.workspace ? canonicalJson(it.workspace) : null;
  }
}

/**
 * The canonical text of an item order, by the array: every append rewrites the loop row, and the
 * order (every item's id) changes only with a definition import, which makes a new array (the
 * reducer never changes one in place).
 */
const orderTexts = new WeakMap<readonly string[], string>();

export function loopRow(p: Projection): LoopRow {
  let order = orderTexts.get(p.order);
  if (order === undefined) orderTexts.set(p.order, (order = canonicalJson(p.order)));
  // canonicalJson({ loop, order }), its keys in order, without encoding the order again.
  return { seq: p.seq, hash: p.hash, state: p.loop.state, body: `{"loop":${canonicalJson(p.loop)},"order":${order}}` };
}

export function parseLoopBody(body: string): LoopBody {
  return JSON.parse(body) as LoopBody;
}

export function parseControlBody(body: string): ControlBody {
  return JSON.parse(body) as ControlBody;
}

/** An item from its rows (JSON text); proj_items, proj_control and proj_ledgers are required (the readers check). */
export function itemFromRows(rows: Record<ItemTable, string | null>): ItemState {
  const core = JSON.parse(rows.proj_items!) as ItemsBody;
  const control = JSON.parse(rows.proj_control!) as ControlBody;
  const ledgers = JSON.parse(rows.proj_ledgers!) as LedgersBody;
  return {
    id: core.id,
    def: core.def,
    inDefinition: core.inDefinition,
    status: core.status,
    reason: core.reason,
    settleCode: core.settleCode,
    epoch: core.epoch,
    settledAt: core.settledAt,
    attempts: ledgers.attempts,
    failures: ledgers.failures,
    replies: ledgers.replies,
    question: ledgers.question,
    control: control.control,
    held: control.held,
    started: control.started,
    session: rows.proj_sessions === null ? null : (JSON.parse(rows.proj_sessions) as SessionRecord),
    workspace: rows.proj_workspaces === null ? null : (JSON.parse(rows.proj_workspaces) as ItemState["workspace"]),
    landing: core.landing,
    forge: ledgers.forge as ForgeRecord | null,
    reset: core.reset,
    ...(core.budgetStop ? { budgetStop: core.budgetStop } : {}),
  };
}

/** Put an item in a projection's record: defined, not assigned, so a (tampered) row for "__proto__" is an item, not a prototype. */
export function putItem(items: Record<string, ItemState>, id: string, it: ItemState): void {
  if (id === "__proto__") Object.defineProperty(items, id, { value: it, enumerable: true, writable: true, configurable: true });
  else items[id] = it;
}

/**
 * The projection an append folds into: the loop record copied, and of the items only those the
 * events touch (all of them for a definition import); the rest are shared with `base`, which stays
 * exactly as it was (a caller may still be reading it).
 */
export function copyTouched(base: Projection, touched: "all" | Set<string>): Projection {
  // Spread defines each key (an item called "__proto__" stays an item); it copies the references
  // only: ~0.2 ms for 5,000 items, where a loop assigning them took twice as long.
  const items: Record<string, ItemState> = { ...base.items };
  for (const id of touched === "all" ? Object.keys(items) : touched) if (Object.hasOwn(items, id)) putItem(items, id, structuredClone(items[id]!));
  return { seq: base.seq, hash: base.hash, loop: structuredClone(base.loop), order: base.order, items };
}

/** The loop row and the rows of the items named; state.json's hash is recorded again when it is written. */
export function writeProjection(db: Database, p: Projection, ids: Iterable<string>) {
  const lr = loopRow(p);
  db.run("UPDATE proj_loop SET seq = ?, hash = ?, state = ?, body = ?, state_sha = '' WHERE id = 1", [lr.seq, lr.hash, lr.state, lr.body]);
  for (const id of ids) {
    const it = itemOf(p, id);
    if (!it) continue;
    for (const t of ITEM_TABLES) {
      const body = itemRow(it, t);
      if (body === null) db.run(`DELETE FROM ${t} WHERE item = ?`, [id]);
      else db.run(`INSERT INTO ${t}(item, body) VALUES (?, ?) ON CONFLICT(item) DO UPDATE SET body = excluded.body`, [id, body]);
    }
  }
}

/** Rewrite every projection row from a projection (the migration; bulk loading in bench/generate). */
export function writeWholeProjection(db: Database, p: Projection) {
  for (const t of ITEM_TABLES) db.run(`DELETE FROM ${t}`);
  writeProjection(db, p, Object.keys(p.items));
}
