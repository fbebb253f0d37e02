// loop.json judged as a step would (./definition-on-disk.ts): parsed and validated, its hash against
// the imported revision's. Loaded only when the file's bytes are not the ones the last step read:
// the schema and its validator cost a cold `loop status` more than its whole budget.
import { definitionHash, importedDefinition } from "../definition/normalize.ts";
import { loadDefinition } from "../definition/loop-json.ts";
import { DefinitionError } from "../shared/errors.ts";
import { changesOf, type DefinitionBasis, type DefinitionOnDisk } from "./definition-on-disk.ts";

export function judgeDefinition(b: DefinitionBasis): DefinitionOnDisk {
  let def: ReturnType<typeof loadDefinition>;
  try {
    def = loadDefinition(b.root);
  } catch (err) {
    if (err instanceof DefinitionError) return { state: "invalid", changes: [], problems: err.lines() };
    throw err;
  }
  if (definitionHash(def) === b.loop.definitionHash) return { state: "imported", changes: [], problems: [] };
  return { state: "changed", changes: changesOf(importedDefinition(def, 0), b.loop, b.itemIds), problems: [] };
}
