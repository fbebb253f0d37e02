// What `loop status` says of loop.json as it is on disk now (docs/cli/loop-status.md#loopjson-on-disk):
// the revision the log imported, a valid file the next step will import (and what changed), or a
// file every step refuses. Status otherwise reads only the log, which says nothing of a loop.json
// broken after its last import: every `loop run` then exits 2 while the log still looks healthy.
// Cheap when nothing changed: the file's bytes are hashed and compared with the ones the last
// step read in full (the store's note, lib/step/definition.ts). Only other bytes are parsed, by
// ./definition-judge.ts, which the command loads then: a cold status must not pay for the schema.
import type { Database } from "bun:sqlite";
import { join } from "node:path";
import { canonicalJson } from "../log/canonical.ts";
import type { LoopRecord } from "../log/projection.ts";
import { hashFile } from "../shared/fsutil.ts";

export interface DefinitionOnDisk {
  /**
   * `imported`: the revision the log holds; `changed`: valid, and the next step imports it;
   * `invalid`: every step refuses it; `unread`: other bytes than the last step read, not judged
   * (a report made without the judge: `loop status` makes it again with one).
   */
  state: "imported" | "changed" | "invalid" | "unread";
  /** For `changed`, what differs from the imported revision: "items added: a, b", "settings changed: landing". */
  changes: string[];
  /** For `invalid`, one line per problem, as `loop run` prints them. */
  problems: string[];
}

/** The note a step keeps of the loop.json bytes it last read in full (lib/step/definition.ts KnownDefinition). */
function knownBytes(db: Database): { sha256: string; hash: string } | null {
  const row = db.query("SELECT value FROM meta WHERE key = 'definition'").get() as { value: string } | null;
  try {
    const k = row ? (JSON.parse(row.value) as { sha256?: unknown; hash?: unknown }) : null;
    return k && typeof k.sha256 === "string" && typeof k.hash === "string" ? { sha256: k.sha256, hash: k.hash } : null;
  } catch {
    return null;
  }
}

/** What judging loop.json needs (./definition-judge.ts): the revision the log imported, and the item ids it holds. */
export interface DefinitionBasis {
  root: string;
  loop: Pick<LoopRecord, "definitionHash" | "name" | "settings">;
  itemIds: readonly string[];
}

/** Judges the file against a basis: ./definition-judge.ts judgeDefinition. */
export type DefinitionJudge = (b: DefinitionBasis) => DefinitionOnDisk;

/** loop.json in `root` against the revision the log imported: `imported` when its bytes are the ones the last step read; else the judge's verdict, or `unread` without one. */
export function definitionOnDisk(db: Database, basis: DefinitionBasis, judge: DefinitionJudge | null): DefinitionOnDisk {
  const known = knownBytes(db);
  if (known && basis.loop.definitionHash !== null && known.hash === basis.loop.definitionHash && hashFile(join(basis.root, "loop.json")) === known.sha256)
    return { state: "imported", changes: [], problems: [] };
  return judge ? judge(basis) : { state: "unread", changes: [], problems: [] };
}

/** What a valid loop.json changes of the imported revision, in a person's words. Pure. */
export function changesOf(
  next: { name: string; settings: Record<string, unknown>; items: readonly { id: string }[] },
  loop: Pick<LoopRecord, "name" | "settings">,
  itemIds: readonly string[],
): string[] {
  const out: string[] = [];
  if (loop.name !== null && next.name !== loop.name) out.push(`name: ${loop.name} → ${next.name}`);
  const ids = new Set(next.items.map((it) => it.id));
  const had = new Set(itemIds);
  const added = [...ids].filter((id) => !had.has(id));
  const removed = [...had].filter((id) => !ids.has(id));
  if (added.length) out.push(`items added: ${listed(added)}`);
  if (removed.length) out.push(`items no longer listed: ${listed(removed)}`);
  const before = (loop.settings ?? {}) as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(before), ...Object.keys(next.settings)])].sort();
  const settings = keys.filter((k) => canonicalJson(before[k] ?? null) !== canonicalJson(next.settings[k] ?? null));
  if (settings.length) out.push(`settings changed: ${settings.join(", ")}`);
  // Same ids and settings: the items' own fields (a prompt, a verify) differ.
  if (out.length === 0) out.push("items changed");
  return out;
}

function listed(ids: string[]): string {
  return ids.length > 5 ? `${ids.slice(0, 5).join(", ")} and ${ids.length - 5} more` : ids.join(", ");
}
