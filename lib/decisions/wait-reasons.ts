// Why an item waits, for people (`loop status`): the same rules as nextWork, plus the loop's own
// state, which the step checks before it looks at items at all. Pure.
import type { ItemStatus } from "../log/vocabulary.ts";
import { type LoopState, type Projection, requireItem } from "../log/projection.ts";
import { blockingDependency, type FindItem, type GateItem, gateItem, launchGate } from "./next-work.ts";

type WaitReason =
  | "dependency_failed"
  | "held"
  | "awaiting_start"
  | "dependency"
  | "loop_paused"
  | "loop_stopped"
  | "loop_review"
  | "queued"
  | "next"
  | "question";

export interface Waiting {
  reason: WaitReason;
  /** One sentence for people, naming what to do where something can be done. */
  detail: string;
  /** The dependencies concerned (unmet ones, or the one that failed), with their status. */
  dependencies: { id: string; status: ItemStatus | null }[];
}

interface WaitView {
  loop: { state: LoopState; reason: string | null; current: string | null; requireStartCommand: boolean; currentPhase?: string | null; review?: boolean };
  /** Every item, in presentation order. */
  items: GateItem[];
}

/** The view of a projection (the step's own; status builds the same from state.json). */
export function waitView(p: Projection): WaitView {
  return {
    loop: {
      state: p.loop.state,
      reason: p.loop.reason,
      current: p.loop.current,
      requireStartCommand: p.loop.settings?.requireStartCommand ?? false,
      review: !!p.loop.review?.waiting,
    },
    items: p.order.map((id) => gateItem(requireItem(p, id))),
  };
}

const statusOf = (s: ItemStatus | null) => s ?? "not an item";

/**
 * Why each waiting item waits: every pending item and every item with a question, by id. An item's
 * own obstacle comes first (it stays after the loop is resumed); a launchable item waits for the
 * loop (paused, stopped), for the item in flight, or for its turn behind the one nextWork picks.
 */
export function waitingReasons(v: WaitView): Map<string, Waiting> {
  const byId = new Map(v.items.map((it) => [it.id, it]));
  const find: FindItem = (id) => byId.get(id);
  const out = new Map<string, Waiting>();
  const L = v.loop;
  const loopHalt = L.state === "paused" ? "paused" : L.state === "stopped" ? "stopped" : null;
  const also = loopHalt ? ` (and the loop is ${loopHalt})` : "";
  let first: string | null = null;
  for (const it of v.items) {
    if (it.status === "needs_input") {
      out.set(it.id, {
        reason: "question",
        detail: `the agent asked a question: answer with \`loop ctl reply --work-item ${it.id} "…"\`, then \`loop ctl resume\``,
        dependencies: [],
      });
      continue;
    }
    if (it.status !== "pending") continue;
    const b = blockingDependency(it, find);
    if (b) {
      out.set(it.id, {
        reason: "dependency_failed",
        detail: `${b.reason}: the next \`loop run\` settles it blocked${b.status !== null && b.status !== "withdrawn" ? ` (retry ${b.dependency} to run both)` : ""}`,
        dependencies: [{ id: b.dependency, status: b.status }],
      });
      continue;
    }
    const gate = launchGate(it, find, L.requireStartCommand);
    if (gate?.kind === "held") {
      out.set(it.id, { reason: "held", detail: `held by \`loop ctl stop\`: release it with \`loop ctl start --work-item ${it.id}\`${also}`, dependencies: [] });
      continue;
    }
    if (gate?.kind === "awaiting_start") {
      out.set(it.id, {
        reason: "awaiting_start",
        detail: `control.requireStartCommand is on: start it with \`loop ctl start --work-item ${it.id}\`${also}`,
        dependencies: [],
      });
      continue;
    }
    if (gate?.kind === "dependency") {
      out.set(it.id, {
        reason: "dependency",
        detail: `waits for ${gate.unmet.map((d) => `${d.id} (${statusOf(d.status)})`).join(", ")}${also}`,
        dependencies: gate.unmet,
      });
      continue;
    }
    // Launchable: only the loop, the item in flight or an earlier launchable item stands in the way.
    if (loopHalt) {
      const why = L.reason ? `: ${L.reason}` : "";
      out.set(it.id, {
        reason: loopHalt === "paused" ? "loop_paused" : "loop_stopped",
        detail: `the loop is ${loopHalt}${why} (\`loop ctl resume\` goes on)`,
        dependencies: [],
      });
      continue;
    }
    // control.review: nothing launches until a person starts the loop.
    if (L.review) {
      out.set(it.id, { reason: "loop_review", detail: "the loop waits for review: `loop ctl start` shows it and starts the loop", dependencies: [] });
      continue;
    }
    if (L.current !== null) {
      const cur = byId.get(L.current);
      // Its word as the in-flight item's row says it (verifying, landing), not the log's `ended`.
      out.set(it.id, {
        reason: "queued",
        detail: `waits for the item in flight, ${L.current}${cur ? ` (${L.currentPhase ?? cur.status})` : ""}`,
        dependencies: [],
      });
      continue;
    }
    if (first === null) {
      first = it.id;
      out.set(it.id, { reason: "next", detail: "launches at the next `loop run`", dependencies: [] });
    } else out.set(it.id, { reason: "queued", detail: `waits its turn: ${first} launches first`, dependencies: [] });
  }
  return out;
}
