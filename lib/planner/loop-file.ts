// Reading loop.json for the planner's verbs, and the statuses the log gives its items. Read-only:
// the store is read through a snapshot (lib/log/snapshot.ts), never opened for writing.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { DefinitionError, JsonSyntaxError, UsageError } from "../shared/errors.ts";
import { parseDefinitionText, readLoopJsonFile } from "../definition/loop-json.ts";
import type { NormDefinition } from "../definition/normalized.ts";
import { parseStrictJson } from "../definition/json-strict.ts";
import { readRegularFile } from "../shared/fsutil.ts";
import { statePaths } from "../shared/paths.ts";
import { readProjection, withReadSnapshot } from "../log/snapshot.ts";
import type { ItemStatus } from "../log/vocabulary.ts";
import { fullUsage, itemUsage, loopUsage } from "../log/documents.ts";
import { itemOf } from "../log/projection.ts";

interface LoopFile {
  path: string;
  text: string;
  /** sha256 of the bytes read: `loop add` writes only over these very bytes. */
  sha256: string;
  /** The parsed value (syntax checked, the definition not yet). */
  raw: unknown;
}

function fail(message: string): never {
  throw new DefinitionError([{ path: "", message }], "loop.json");
}

export function sha256(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** loop.json's bytes and parsed value; a syntax error is an invalid definition (exit 2). */
export function readLoopFile(root: string): LoopFile {
  const { path, bytes, text } = readLoopJsonFile(root);
  let raw: unknown;
  try {
    raw = parseStrictJson(text).value;
  } catch (e) {
    if (e instanceof JsonSyntaxError) fail(e.message);
    throw e;
  }
  return { path, text, sha256: sha256(bytes), raw };
}

export function loadLoopDefinition(root: string): { file: LoopFile; def: NormDefinition } {
  const file = readLoopFile(root);
  return { file, def: parseDefinitionText(file.text, "loop.json") };
}

/** Each item's status in the log: "pending" for one no step has imported yet (or when there is no store). */
export function itemStatuses(stateRoot: string, ids: readonly string[]): Map<string, ItemStatus> {
  return new Map([...itemRecords(stateRoot, ids).items].map(([id, r]) => [id, r.status]));
}

/**
 * Each item's status and usage in the log (lib/log/documents.ts itemUsage, as `loop status` gives it):
 * "pending" and null for one no step has imported yet (or when there is no store).
 */
export function itemRecords(
  stateRoot: string,
  ids: readonly string[],
): { items: Map<string, { status: ItemStatus; usage: ReturnType<typeof fullUsage> }>; usage: ReturnType<typeof loopUsage> } {
  const out = new Map<string, { status: ItemStatus; usage: ReturnType<typeof fullUsage> }>(ids.map((id) => [id, { status: "pending", usage: null }]));
  if (!existsSync(statePaths(stateRoot).db)) return { items: out, usage: loopUsage({}) };
  return withReadSnapshot(stateRoot, ({ db }) => {
    const p = readProjection(db);
    for (const id of ids) {
      const it = itemOf(p, id);
      if (it) out.set(id, { status: it.status, usage: fullUsage(itemUsage(it)) });
    }
    return { items: out, usage: loopUsage(p.loop) };
  });
}

/** The text of a `--brief-file`/`--from-file` value: a path (relative to cwd), or "-" for stdin. */
export async function readInputText(flag: string, value: string, cwd: string): Promise<{ text: string; name: string }> {
  if (value === "-") return { text: await Bun.stdin.text(), name: "stdin" };
  const path = resolve(cwd, value);
  const file = readRegularFile(path, { maxBytes: 16 * 2 ** 20 });
  if (file.kind !== "ok") throw new UsageError(`${flag} ${JSON.stringify(value)}: ${file.kind === "absent" ? "no such file" : file.message}`);
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(file.bytes), name: value };
  } catch {
    throw new UsageError(`${flag} ${JSON.stringify(value)}: not valid UTF-8`);
  }
}
