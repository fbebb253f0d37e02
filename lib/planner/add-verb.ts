// `loop add` end to end, for cmd/loop-add.ts: items from the command line, a text file or the forge,
// shown for confirmation where the contract asks, appended (append.ts).
import { UsageError } from "../shared/errors.ts";
import { isItemId } from "../definition/refs.ts";
import { appendItems, type AppendResult, type NewItem } from "./append.ts";
import { type IssueSource, requireIssueSource } from "./issues.ts";
import { readLoopFile } from "./loop-file.ts";
import { describeUnreviewed, reviewDefaultsOf } from "./describe.ts";
import { reviewItems } from "./review.ts";
import { parseItemLines } from "./text-format.ts";

export interface AddDocument {
  schema: "loop/add@1";
  file: string;
  dryRun: boolean;
  added: AppendResult["added"];
}

interface AddVerbOptions {
  root: string;
  prompt: string | undefined;
  id: string | undefined;
  ref: string | undefined;
  dependsOn: string[];
  runner: string | undefined;
  model: string | undefined;
  verify: string | undefined;
  /** The file's text and its name for messages ("-" is stdin), with --from-file. */
  fromFile: { text: string; name: string } | undefined;
  fromIssues: string | undefined;
  issueSource: IssueSource | null;
  dryRun: boolean;
  yes: boolean;
  stdinIsTTY: boolean;
  /** Where a list appended with --yes is shown first, every field of it (stderr). */
  notice: (text: string) => void;
}

export async function addVerb(o: AddVerbOptions): Promise<AddDocument> {
  const sources = [o.prompt !== undefined, o.fromFile !== undefined, o.fromIssues !== undefined].filter(Boolean).length;
  if (sources !== 1) throw new UsageError("give exactly one of: a <prompt>, --from-file <path|->, --from-issues <search>");
  if (o.yes && o.dryRun) throw new UsageError("--yes and --dry-run exclude each other");
  if (o.prompt === undefined && (o.id || o.ref || o.dependsOn.length))
    throw new UsageError("--id, --ref and --depends-on describe one item: give them with a <prompt>");
  if (o.prompt !== undefined && o.prompt.trim() === "") throw new UsageError("the prompt is empty");
  // An id typed on the command line is an invalid flag value (exit 2), like an invalid --ref.
  if (o.id !== undefined && !isItemId(o.id))
    throw new UsageError(
      `--id ${JSON.stringify(o.id)} is not an item id (lowercase letters, digits and '-', with single '.' or '_' between them, at most 64 characters); nothing was written`,
    );
  const common = { runner: o.runner ?? null, model: o.model ?? null, verify: o.verify ?? null };
  let items: NewItem[];
  if (o.prompt !== undefined) items = [{ id: o.id ?? null, ref: o.ref ?? null, prompt: o.prompt, dependsOn: o.dependsOn, ...common, from: "the new item" }];
  else if (o.fromFile) {
    const lines = parseItemLines(o.fromFile.text, { source: o.fromFile.name, defaultRepo: o.issueSource?.repo ?? null });
    items = lines.map((l) => ({ id: l.id, ref: l.ref, prompt: l.prompt, ...common, from: `${o.fromFile!.name}:${l.line}` }));
  } else {
    const source = requireIssueSource(o.issueSource, "--from-issues");
    const issues = await source.searchOpenIssues(o.fromIssues!);
    items = issues.map((i) => ({ ref: i.ref, prompt: i.title, ...common, from: `issue ${i.ref}` }));
  }
  // One item typed on the command line is its own review; a list is shown first (or needs --yes).
  const list = o.prompt === undefined;
  if (list && !o.yes && !o.dryRun && !o.stdinIsTTY)
    throw new UsageError(
      "loop add appends a list only after review: on a terminal it asks; otherwise pass --yes (or --dry-run to see it). Nothing was written.",
    );
  // Checked in full before anything is asked: a refusal is not worth a review.
  const preview = appendItems({ root: o.root, items, dryRun: true });
  if (o.dryRun || items.length === 0) return { schema: "loop/add@1", file: preview.file, dryRun: o.dryRun, added: o.dryRun ? preview.added : [] };
  if (list) {
    // Nothing is appended without its every field shown to a person: at the review, or with --yes on stderr.
    const shown = preview.added.map((a, i) => ({
      ...a,
      dependsOn: items[i]!.dependsOn ?? [],
      runner: items[i]!.runner ?? null,
      model: items[i]!.model ?? null,
      verify: items[i]!.verify ?? null,
      index: i,
    }));
    const defaults = reviewDefaultsOf(readLoopFile(o.root).raw);
    if (o.yes)
      o.notice(
        describeUnreviewed(shown, { what: `loop add: appending ${shown.length} item${shown.length === 1 ? "" : "s"} to loop.json`, defaults, warnings: [] }),
      );
    else
      items = (await reviewItems(shown, { editable: false, what: "Append these {n} items to loop.json", defaults, warnings: [] })).map((k) => items[k.index]!);
  }
  const r = appendItems({ root: o.root, items, dryRun: false });
  return { schema: "loop/add@1", file: r.file, dryRun: false, added: r.added };
}
