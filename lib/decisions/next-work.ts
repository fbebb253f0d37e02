// Which item runs next, which pending items can never run, how the loop drains. Pure: a projection
// (or the launch rules' view of an item, GateItem) in, a decision out; lib/step/ carries it out.
import { itemOf, type ItemState, type Projection, requireItem } from "../log/projection.ts";
import { type DrainOutcome, drainsAs, isInFlight, isSettled, type ItemStatus, type SettleCode } from "../log/vocabulary.ts";

/** Why a pending item is settled blocked by a dependency (item_settled's code). */
type BlockedCode = Extract<SettleCode, "dependency_failed" | "dependency_unknown" | "dependency_removed">;

export type NextWork =
  | { kind: "launch"; item: string }
  | { kind: "block"; items: { id: string; reason: string; code: BlockedCode }[] }
  | { kind: "drain"; outcome: DrainOutcome }
  | { kind: "idle"; reason: string };

/** The items of the loop, in order, without those removed from the definition. */
export function activeItems(p: Projection): ItemState[] {
  return p.order.map((id) => requireItem(p, id)).filter((it) => it.status !== "withdrawn");
}

/**
 * An item as the launch rules see it. The projection has these fields (ItemState, `def.dependsOn`)
 * and so does what `loop status` reads (state.json plus the control rows), so the rules below are
 * written once and both the step and status apply them.
 */
export interface GateItem {
  id: string;
  status: ItemStatus;
  held: boolean;
  started: boolean;
  dependsOn: readonly string[];
}
export type FindItem = (id: string) => GateItem | undefined;

export function gateItem(it: ItemState): GateItem {
  return { id: it.id, status: it.status, held: it.held, started: it.started, dependsOn: it.def.dependsOn };
}

function projectionFinder(p: Projection): FindItem {
  return (id) => {
    const it = itemOf(p, id);
    return it ? gateItem(it) : undefined;
  };
}

/** Why a pending item can never run (a dependency settled without passing, or is gone), or null. */
export function blockingDependency(it: GateItem, find: FindItem): { dependency: string; status: ItemStatus | null; code: BlockedCode; reason: string } | null {
  for (const dep of it.dependsOn) {
    const d = find(dep);
    if (!d) return { dependency: dep, status: null, code: "dependency_unknown", reason: `dependency "${dep}" is not an item of the loop` };
    if (d.status === "withdrawn")
      return { dependency: dep, status: d.status, code: "dependency_removed", reason: `dependency "${dep}" was removed from the definition` };
    if (isSettled(d.status) && d.status !== "passed")
      return { dependency: dep, status: d.status, code: "dependency_failed", reason: `dependency "${dep}" ${d.status}` };
  }
  return null;
}

/** What of its own keeps a pending item from launching, in the order nextWork checks it; null: nothing. */
type LaunchGate =
  | { kind: "held"; reason: string }
  | { kind: "awaiting_start"; reason: string }
  | { kind: "dependency"; unmet: { id: string; status: ItemStatus | null }[]; reason: string };

export function launchGate(it: GateItem, find: FindItem, requireStart: boolean): LaunchGate | null {
  if (it.held) return { kind: "held", reason: `${it.id} is held by \`loop ctl stop\` (start or retry it)` };
  if (requireStart && !it.started) return { kind: "awaiting_start", reason: `${it.id} waits for \`loop ctl start --work-item ${it.id}\`` };
  const unmet = it.dependsOn.filter((d) => find(d)?.status !== "passed");
  if (unmet.length)
    return { kind: "dependency", unmet: unmet.map((id) => ({ id, status: find(id)?.status ?? null })), reason: `${it.id} waits for ${unmet.join(", ")}` };
  return null;
}

/** Pending items that can never run because a dependency settled without passing. */
function itemsToBlock(p: Projection): { id: string; reason: string; code: BlockedCode }[] {
  const find = projectionFinder(p);
  const out: { id: string; reason: string; code: BlockedCode }[] = [];
  for (const it of activeItems(p)) {
    if (it.status !== "pending") continue;
    const b = blockingDependency(gateItem(it), find);
    if (b) out.push({ id: it.id, reason: b.reason, code: b.code });
  }
  return out;
}

/** The worst any active item says (vocabulary.ts drainsAs): Failed, else Stopped, else Succeeded. */
function drainOutcome(p: Projection): DrainOutcome {
  const says = new Set(activeItems(p).map((it) => drainsAs(it.status)));
  return says.has("Failed") ? "Failed" : says.has("Stopped") ? "Stopped" : "Succeeded";
}

/** What the step should do when nothing is in flight. */
export function nextWork(p: Projection): NextWork {
  const block = itemsToBlock(p);
  if (block.length) return { kind: "block", items: block };
  const requireStart = p.loop.settings?.requireStartCommand ?? false;
  const find = projectionFinder(p);
  const waiting: string[] = [];
  for (const it of activeItems(p)) {
    if (it.status !== "pending") continue;
    const gate = launchGate(gateItem(it), find, requireStart);
    if (gate) {
      waiting.push(gate.reason);
      continue;
    }
    return { kind: "launch", item: it.id };
  }
  if (waiting.length) return { kind: "idle", reason: waiting.join("; ") };
  return { kind: "drain", outcome: drainOutcome(p) };
}

export function hasOpenWork(p: Projection): boolean {
  return activeItems(p).some((it) => it.status === "pending" || isInFlight(it.status));
}

/** Items blocked, directly or through other blocked items, because of `id`. */
export function blockedBecauseOf(p: Projection, id: string): string[] {
  const out: string[] = [];
  const frontier = [id];
  while (frontier.length) {
    const cur = frontier.pop()!;
    for (const it of activeItems(p)) {
      if (it.status === "blocked" && it.def.dependsOn.includes(cur) && !out.includes(it.id)) {
        out.push(it.id);
        frontier.push(it.id);
      }
    }
  }
  return out;
}
