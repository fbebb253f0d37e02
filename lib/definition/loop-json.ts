// loop.json the file: read (a regular file, valid UTF-8), parsed with the strict parser (comments,
// duplicate keys), and normalized (lib/definition/normalize.ts).
import { readRegularFile } from "../shared/fsutil.ts";
import { join } from "node:path";
import { parseStrictJson } from "./json-strict.ts";
import { DefinitionError, type DefinitionIssue, JsonSyntaxError } from "../shared/errors.ts";
import type { NormDefinition } from "./normalized.ts";
import { byItem, normalizeDefinition } from "./normalize.ts";

// ---------------------------------------------------------------------------------------------
// The file.

/**
 * Parses loop.json text with the strict parser of json-strict.ts: full-line `//` comments are
 * ignored, a syntax error (line and column) is the only issue, and duplicate keys are reported at
 * their paths together with the validation problems.
 */
export function parseDefinitionText(text: string, file = "loop.json"): NormDefinition {
  let parsed: ReturnType<typeof parseStrictJson>;
  try {
    parsed = parseStrictJson(text);
  } catch (e) {
    if (e instanceof JsonSyntaxError) throw new DefinitionError([{ path: "", message: e.message }], file);
    throw e;
  }
  const issues: DefinitionIssue[] = parsed.duplicates.map((path) => ({ path, message: "duplicate key" }));
  let def: NormDefinition | undefined;
  try {
    def = normalizeDefinition(parsed.value, file);
  } catch (e) {
    if (!(e instanceof DefinitionError)) throw e;
    issues.push(...e.issues);
  }
  if (issues.length > 0 || def === undefined) throw new DefinitionError(byItem(issues), file);
  return def;
}

/** `<root>/loop.json`'s bytes and text: a regular file (a FIFO in its place would hang every step), valid UTF-8. */
export function readLoopJsonFile(root: string): { path: string; bytes: Uint8Array; text: string } {
  const path = join(root, "loop.json");
  const fail = (message: string): never => {
    throw new DefinitionError([{ path: "", message }], "loop.json");
  };
  const file = readRegularFile(path, { maxBytes: 64 * 2 ** 20 });
  if (file.kind === "absent") fail(`not found in ${root} (create one with "loop init")`);
  if (file.kind === "error") fail(`cannot read ${path}: ${file.message}`);
  const bytes = (file as { bytes: Uint8Array }).bytes;
  let text = "";
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    fail("is not valid UTF-8");
  }
  return { path, bytes, text };
}

/** Reads and validates `<root>/loop.json`. */
export function loadDefinition(root: string): NormDefinition {
  return parseDefinitionText(readLoopJsonFile(root).text, "loop.json");
}
