// `loop export`: loop.json's items with their status in the log (read-only), filtered by status.
import { UsageError } from "../shared/errors.ts";
import type { ItemStatus } from "../log/reducer.ts";
import { itemStatuses, loadLoopDefinition } from "./loop-file.ts";
import { ITEM_STATUSES as STATUSES } from "../log/reducer.ts";

export interface ExportedItem {
  id: string;
  ref: string | null;
  prompt: string;
  dependsOn: string[];
  runner: string;
  model: string | null;
  verify: string | false;
  status: ItemStatus;
}

export interface ExportDocument {
  schema: "loop/export@1";
  items: ExportedItem[];
}

export function exportItems(o: { root: string; stateRoot: string; statuses: readonly string[] }): ExportDocument {
  const unknown = o.statuses.filter((s) => !(STATUSES as readonly string[]).includes(s));
  if (unknown.length) throw new UsageError(`--status ${JSON.stringify(unknown[0])} is not a status (statuses: ${STATUSES.join(", ")})`);
  const { def } = loadLoopDefinition(o.root);
  const status = itemStatuses(o.stateRoot, def.items.map((i) => i.id));
  const items = def.items
    .map((i): ExportedItem => ({ id: i.id, ref: i.ref, prompt: i.prompt, dependsOn: i.dependsOn, runner: i.runner, model: i.model, verify: i.verify, status: status.get(i.id)! }))
    .filter((i) => o.statuses.length === 0 || o.statuses.includes(i.status));
  return { schema: "loop/export@1", items };
}
