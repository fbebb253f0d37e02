// The loop.json a step works with. Reading the file is cheap; parsing, validating and hashing it is
// not (a backlog of thousands of items is a file of megabytes, and that work was most of an
// observing tick). So a step whose loop.json has exactly the bytes a step of this version last read
// in full takes what those bytes normalized to from the store: the name and settings from the
// imported definition in the log, and the parts the log does not record (`notify`, `environment`:
// this machine's plumbing) from the store's note of that reading (Store.knownDefinition). Any other
// bytes are parsed and validated as always, before anything is written.
import { definitionHash, importedDefinition } from "../definition/normalize.ts";
import type { NormDefinition } from "../definition/normalized.ts";
import { parseDefinitionText, readLoopJsonFile } from "../definition/loop-json.ts";
import { join } from "node:path";
import type { Store } from "../log/store.ts";
import { hashFile } from "../shared/fsutil.ts";
import { VERSION } from "../shared/version.ts";

/** What a step reads of the definition: everything but the items, which it reads from the projection. */
export type StepDefinition = Omit<NormDefinition, "items">;

/** loop.json, hashed but not yet read whole. */
export interface DefinitionSource {
  root: string;
  /** sha256 of the file's bytes, read in chunks. */
  sha256: string;
}

/** loop.json read whole and parsed, with the hash of exactly the bytes parsed (the file may have changed since it was hashed). */
export interface ParsedDefinition {
  def: NormDefinition;
  sha256: string;
}

/** What a definition import records of the settings. */
type Settings = ReturnType<typeof importedDefinition>["settings"];
/** The parts of a definition the log does not record (importedDefinition leaves them out). */
type LocalPart = Omit<StepDefinition, "name" | keyof Settings>;

/**
 * A step's note of the loop.json it last read in full: which bytes, what they normalized to (the
 * log holds that), by which version, and the parts the log does not hold.
 */
interface KnownDefinition {
  sha256: string;
  hash: string;
  version: string;
  local: LocalPart;
}

/** Hash `<root>/loop.json` (DefinitionError when it is missing or unreadable), without reading it whole. */
export function readDefinitionSource(root: string): DefinitionSource {
  const sha256 = hashFile(join(root, "loop.json"));
  if (sha256 === null) readLoopJsonFile(root); // throws the DefinitionError that says why
  return { root, sha256: sha256! };
}

/** Read loop.json whole, parse and validate it; throws DefinitionError. */
export function parseDefinitionSource(src: DefinitionSource): ParsedDefinition {
  const { bytes, text } = readLoopJsonFile(src.root);
  return { def: parseDefinitionText(text, "loop.json"), sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex") };
}

/**
 * The definition a step works with, and the parsed file when it had to be parsed (a definition
 * import needs its items). Throws DefinitionError for a file that is not the known one and is invalid.
 */
export function resolveDefinition(
  src: DefinitionSource,
  store: Store,
): { def: StepDefinition; parsed: ParsedDefinition | null; logged: StepDefinition | null } {
  const known = knownDefinition(store);
  const { loop } = store.loopView();
  // The definition the log holds, whole: its settings, and the parts a step last read with them.
  const logged =
    known && known.version === VERSION && known.hash === loop.definitionHash && loop.name !== null && loop.settings
      ? { name: loop.name, ...(loop.settings as Settings), ...known.local }
      : null;
  if (logged && known!.sha256 === src.sha256) return { def: logged, parsed: null, logged };
  const parsed = parseDefinitionSource(src);
  return { def: parsed.def, parsed, logged };
}

/** Note that these bytes normalized to `parsed`, which the log now holds: the next step need not read them again. */
export function rememberDefinition(store: Store, parsed: ParsedDefinition): void {
  const { items: _items, name: _name, ...rest } = parsed.def;
  const { settings } = importedDefinition(parsed.def, 0);
  const local = Object.fromEntries(Object.entries(rest).filter(([k]) => !Object.hasOwn(settings, k))) as LocalPart;
  const known: KnownDefinition = { sha256: parsed.sha256, hash: definitionHash(parsed.def), version: VERSION, local };
  store.rememberDefinition(JSON.stringify(known));
}

function knownDefinition(store: Store): KnownDefinition | null {
  const text = store.knownDefinition();
  if (text === null) return null;
  try {
    const k = JSON.parse(text) as Partial<KnownDefinition>;
    // Anything but the note this module writes is no note: the file is read in full.
    return typeof k.sha256 === "string" && typeof k.hash === "string" && typeof k.version === "string" && typeof k.local === "object" && k.local !== null
      ? (k as KnownDefinition)
      : null;
  } catch {
    return null;
  }
}
