// `loop add`'s write: append items to loop.json, atomically, over exactly the bytes that were read.
//
// Refused, with nothing written: an id or ref an existing item (or another new item) already has,
// naming that item; a result that is not a valid definition (the validation `loop run` applies);
// a loop.json that changed between the read and the write (its sha256 differs: an editor, a
// second `loop add`). The second read and the rename happen under an exclusive lock,
// `loop.json.lock` beside the file (held for milliseconds; a dead holder's is taken over), so two
// `loop add`s can never both pass the check and the later rename silently drop the earlier's items.
import { chmodSync, closeSync, fsyncSync, openSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import { BusyError, DefinitionError, RefusedError } from "../shared/errors.ts";
import { parseDefinitionText } from "../definition/loop-json.ts";
import { isItemId, itemIdFromRef, parseRef } from "../definition/refs.ts";
import { claimRunPid, releaseRunPid, selfRunPid } from "../writer/run-pid.ts";
import { readRegularFile } from "../shared/fsutil.ts";
import { appendItemsText } from "./edit.ts";
import { readLoopFile, sha256 } from "./loop-file.ts";
import { slugFromPrompt } from "./slug.ts";

export interface NewItem {
  /** Explicit id; without one the id comes from the ref, else from the prompt (slug.ts). */
  id?: string | null;
  ref?: string | null;
  prompt: string;
  dependsOn?: string[];
  runner?: string | null;
  model?: string | null;
  verify?: string | null;
  /** Where the item was given, for messages: `--from-file line 3`, `draft item "x"`. */
  from?: string;
}

interface AddedItem {
  id: string;
  ref: string | null;
  prompt: string;
}

export interface AppendResult {
  file: string;
  added: AddedItem[];
  /** False under --dry-run. */
  written: boolean;
  /** The new text of loop.json (written or, under --dry-run, what would be). */
  text: string;
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);

function short(prompt: string): string {
  const line = prompt.split("\n")[0]!.trim();
  return JSON.stringify(line.length > 60 ? `${line.slice(0, 57)}...` : line);
}

/** The existing items' ids and refs, read leniently (the whole result is validated afterwards). */
function existingIdentities(raw: unknown): { ids: Map<string, string>; refs: Map<string, string> } {
  const ids = new Map<string, string>();
  const refs = new Map<string, string>();
  const items = isObj(raw) && Array.isArray(raw.items) ? raw.items : [];
  items.forEach((it, i) => {
    if (!isObj(it)) return;
    const prompt = typeof it.prompt === "string" ? it.prompt : "";
    let ref: string | null = null;
    if (typeof it.ref === "string")
      try {
        ref = parseRef(it.ref).canonical;
      } catch {}
    const id = typeof it.id === "string" ? it.id : ref ? itemIdFromRef(parseRef(ref)) : null;
    const who = `item ${JSON.stringify(id ?? `items[${i}]`)} (items[${i}], ${short(prompt)})`;
    if (id !== null) ids.set(id, who);
    if (ref !== null) refs.set(ref, who);
  });
  return { ids, refs };
}

/** The object written for one item: only what was given (defaults stay defaults). */
function itemObject(it: NewItem, id: string, ref: string | null): Obj {
  const o: Obj = {};
  // An id the ref would derive is left to the ref, as a person would write it.
  if (!(ref !== null && !it.id && id === itemIdFromRef(parseRef(ref)))) o.id = id;
  if (ref !== null) o.ref = ref;
  o.prompt = it.prompt;
  if (it.dependsOn?.length) o.dependsOn = it.dependsOn;
  if (it.runner) o.runner = it.runner;
  if (it.model) o.model = it.model;
  if (it.verify) o.verify = it.verify;
  return o;
}

export function appendItems(o: { root: string; items: readonly NewItem[]; dryRun: boolean; beforeWrite?: () => void }): AppendResult {
  const file = readLoopFile(o.root);
  const existing = existingIdentities(file.raw);
  const batchIds = new Map<string, string>();
  const batchRefs = new Map<string, string>();
  const added: AddedItem[] = [];
  const objects: Obj[] = [];
  for (const it of o.items) {
    const from = it.from ?? "the new item";
    const ref = it.ref ? parseRef(it.ref).canonical : null;
    const id = it.id ?? (ref !== null ? itemIdFromRef(parseRef(ref)) : slugFromPrompt(it.prompt));
    if (!isItemId(id)) throw new RefusedError(`${from}: ${JSON.stringify(id)} is not an item id; nothing was written`);
    const how = it.id ? "" : ref !== null ? ` (derived from its ref ${ref}; give an explicit id)` : ` (made from its prompt; give an explicit id)`;
    const holder = existing.ids.get(id) ?? batchIds.get(id);
    if (holder) throw new RefusedError(`${from}: id ${JSON.stringify(id)}${how} is already ${holder}; nothing was written`);
    if (ref !== null) {
      const refHolder = existing.refs.get(ref) ?? batchRefs.get(ref);
      if (refHolder) throw new RefusedError(`${from}: ref ${ref} is already ${refHolder}; nothing was written`);
      batchRefs.set(ref, `new item ${JSON.stringify(id)} (${from})`);
    }
    batchIds.set(id, `new item ${JSON.stringify(id)} (${from})`);
    added.push({ id, ref, prompt: it.prompt });
    objects.push(itemObject(it, id, ref));
  }
  const edit = appendItemsText(file.text, objects);
  // Outside the items array the file is what it was: a bug here must not reach the disk.
  if (!edit.text.startsWith(file.text.slice(0, edit.kept.before)) || !edit.text.endsWith(file.text.slice(edit.kept.after)))
    throw new Error("internal: the edit of loop.json changed text outside its items array");
  let def;
  try {
    def = parseDefinitionText(edit.text, "loop.json with the new items");
  } catch (e) {
    if (e instanceof DefinitionError) throw new DefinitionError([...e.issues, { path: "", message: "nothing was written" }], e.file);
    throw e;
  }
  const ids = def.items.map((i) => i.id);
  const want = added.map((a) => a.id);
  // slice(length - n), not slice(-n): nothing to add (a search with no new match) would compare every item.
  if (ids.slice(ids.length - want.length).join("\n") !== want.join("\n"))
    throw new Error("internal: the new items are not the last items of the edited loop.json");
  if (o.dryRun || o.items.length === 0) return { file: file.path, added, written: false, text: edit.text };
  o.beforeWrite?.();
  writeOver(file.path, file.sha256, edit.text);
  return { file: file.path, added, written: true, text: edit.text };
}

/** Replace the file by `text` atomically (same mode), unless its bytes are no longer those hashed `sha`. */
function writeOver(path: string, sha: string, text: string): void {
  const tmp = `${path}.loop-add-${process.pid}.tmp`;
  const mode = statSync(path).mode & 0o7777;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    unlinkSync(tmp);
    throw e;
  }
  closeSync(fd);
  const lock = `${path}.lock`;
  const me = selfRunPid();
  try {
    chmodSync(tmp, mode);
    takeLock(lock, me, path);
    try {
      const now = readRegularFile(path, { maxBytes: 64 * 2 ** 20 });
      if (now.kind !== "ok" || sha256(now.bytes) !== sha)
        throw new RefusedError(`${path} changed while loop add was preparing its edit (another editor or loop add); nothing was written: run it again`);
      renameSync(tmp, path);
    } finally {
      releaseRunPid(lock, me);
    }
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {}
    throw e;
  }
}

/** The lock of the check-and-rename; another `loop add` holds it for milliseconds, so wait a little. */
function takeLock(lock: string, me: ReturnType<typeof selfRunPid>, path: string): void {
  for (let i = 0; ; i++) {
    try {
      return claimRunPid(lock, me);
    } catch (e) {
      if (!(e instanceof BusyError)) throw e;
      if (i >= 200) throw new RefusedError(`another loop add has held ${lock} for over 2s; nothing was written to ${path}: run it again`);
      Bun.sleepSync(10);
    }
  }
}
