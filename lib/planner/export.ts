// `loop export`: loop.json's items with their status in the log (read-only), filtered by status.
import { UsageError } from "../shared/errors.ts";
import { ITEM_STATUSES as STATUSES, type ItemStatus } from "../log/vocabulary.ts";
import { itemRecords, loadLoopDefinition } from "./loop-file.ts";
import type { fullUsage, loopUsage } from "../log/documents.ts";

interface ExportedItem {
  id: string;
  ref: string | null;
  prompt: string;
  dependsOn: string[];
  runner: string;
  model: string | null;
  verify: string | false;
  status: ItemStatus;
  /** What its attempts used, as `loop status` gives it (docs/spend.md); null before any ran. */
  usage: ReturnType<typeof fullUsage>;
}

/** What an item of loop.json sets that a line of the text format cannot carry (docs/cli/loop-add.md#the-text-format). */
const UNCARRIED = ["dependsOn", "runner", "model", "verify", "maxAttempts", "timeouts", "reactions", "budget"] as const;

interface ExportDocument {
  schema: "loop/export@1";
  items: ExportedItem[];
  /** What the loop's agents used over every attempt ever made, as `loop status` gives it (docs/spend.md). */
  usage: ReturnType<typeof loopUsage>;
}

export function exportItems(o: { root: string; stateRoot: string; statuses: readonly string[] }): ExportDocument & { uncarried: Map<string, string[]> } {
  const unknown = o.statuses.filter((s) => !(STATUSES as readonly string[]).includes(s));
  if (unknown.length) throw new UsageError(`--status ${JSON.stringify(unknown[0])} is not a status (statuses: ${STATUSES.join(", ")})`);
  const { def, file } = loadLoopDefinition(o.root);
  // Keys each item sets itself (not its defaults'), by id: what --text leaves out, said per item.
  const rawItems = ((file.raw as { items?: unknown[] }).items ?? []) as Record<string, unknown>[];
  const uncarried = new Map(
    def.items.map((it, i) => [it.id, UNCARRIED.filter((k) => rawItems[i] !== null && typeof rawItems[i] === "object" && rawItems[i]![k] !== undefined)]),
  );
  const records = itemRecords(
    o.stateRoot,
    def.items.map((i) => i.id),
  );
  const items = def.items
    .map(
      (i): ExportedItem => ({
        id: i.id,
        ref: i.ref,
        prompt: i.prompt,
        dependsOn: i.dependsOn,
        runner: i.runner,
        model: i.model,
        verify: i.verify,
        status: records.items.get(i.id)!.status,
        usage: records.items.get(i.id)!.usage,
      }),
    )
    .filter((i) => o.statuses.length === 0 || o.statuses.includes(i.status));
  return { schema: "loop/export@1", items, usage: records.usage, uncarried };
}
