// How a projection is laid out in the projection tables, and back. Each row body is canonical JSON,
// so "table equals fold" is a string comparison, row by row.
import { canonicalJson, sha256Hex } from "./canonical.ts";
import { jsonText, stateDocument } from "./documents.ts";
import type { ItemState, LoopRecord, Projection } from "./reducer.ts";

export const ITEM_TABLES = ["proj_items", "proj_sessions", "proj_control", "proj_ledgers", "proj_workspaces"] as const;
export type ItemTable = (typeof ITEM_TABLES)[number];

export interface LoopRow {
  seq: number;
  hash: string;
  state: string;
  body: string;
  /** sha256 of the state.json text this projection materializes to: status compares a file hash. */
  state_sha: string;
}

/** Split one item into the rows of each table; null means "no row". */
export function itemRows(it: ItemState): Record<ItemTable, string | null> {
  return {
    proj_items: canonicalJson({
      id: it.id,
      def: it.def,
      inDefinition: it.inDefinition,
      status: it.status,
      reason: it.reason,
      epoch: it.epoch,
      settledAt: it.settledAt,
      landing: it.landing,
      // Only once an item was reset: the rows of every other item keep the layout stores already hold.
      ...(it.reset ? { reset: it.reset } : {}),
    }),
    proj_sessions: it.session ? canonicalJson(it.session) : null,
    proj_control: canonicalJson({ control: it.control, held: it.held, started: it.started }),
    proj_ledgers: canonicalJson({
      attempts: it.attempts,
      failures: it.failures,
      replies: it.replies,
      question: it.question,
      // Only an item with a forge side has the key: the rows of a loop without a forge stay as they were.
      ...(it.forge ? { forge: it.forge } : {}),
    }),
    proj_workspaces: it.workspace ? canonicalJson(it.workspace) : null,
  };
}

export function loopRow(p: Projection): LoopRow {
  return {
    seq: p.seq,
    hash: p.hash,
    state: p.loop.state,
    body: canonicalJson({ loop: p.loop, order: p.order }),
    state_sha: sha256Hex(jsonText(stateDocument(p))),
  };
}

/** An item from its rows; proj_items, proj_control and proj_ledgers always exist (readProjection checks). */
export function itemFromRows(rows: Record<ItemTable, string | null>): ItemState {
  const core = JSON.parse(rows.proj_items!);
  const control = JSON.parse(rows.proj_control!);
  const ledgers = JSON.parse(rows.proj_ledgers!);
  return {
    reset: null,
    ...core,
    ...ledgers,
    ...control,
    forge: ledgers.forge ?? null,
    session: rows.proj_sessions ? JSON.parse(rows.proj_sessions) : null,
    workspace: rows.proj_workspaces ? JSON.parse(rows.proj_workspaces) : null,
  };
}

export function projectionFromRows(
  loop: LoopRow,
  items: Map<string, Record<ItemTable, string | null>>,
): Projection {
  const { loop: rec, order } = JSON.parse(loop.body) as { loop: LoopRecord; order: string[] };
  const out: Projection = { seq: loop.seq, hash: loop.hash, loop: rec, order, items: {} };
  // Defined, not assigned: a (tampered) row for "__proto__" must become an item, not a prototype.
  for (const [id, rows] of items) Object.defineProperty(out.items, id, { value: itemFromRows(rows), enumerable: true, writable: true, configurable: true });
  return out;
}
