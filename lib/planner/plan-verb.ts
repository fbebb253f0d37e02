// `loop plan` end to end, for cmd/loop-plan.ts: gather the context, draft (planner or demo), review or
// not, append. The command only parses its flags and renders the document this returns.
import { DefinitionError, UsageError } from "../shared/errors.ts";
import { ANSWER_JSON_SCHEMA, type DraftItem, type Warning } from "./answer.ts";
import { appendItems } from "./append.ts";
import { demoPlan } from "./demo-planner.ts";
import { type IssueSource, requireIssueSource } from "./issues.ts";
import { itemStatuses, loadLoopDefinition } from "./loop-file.ts";
import { draftPlan } from "./plan.ts";
import { runnerCatalogue } from "./planners.ts";
import { FORGE_CAPS, type PlanContext, pullsForPrompt } from "./prompt.ts";
import { describeUnreviewed, reviewDefaultsOf } from "./describe.ts";
import { reviewItems } from "./review.ts";
import { runPlanner } from "./run-planner.ts";
import { plannerRule } from "../definition/child-environment.ts";

export const DEFAULT_MAX_ITEMS = 20;

export interface PlanDocument {
  schema: "loop/plan@1";
  runner: string;
  outcome: "drafted" | "nothing_new" | "undraftable";
  reason: string | null;
  items: DraftItem[];
  warnings: Warning[];
  /** Planner calls made (2 when the first answer was malformed and retried). */
  calls: number;
  dryRun: boolean;
  /** Ids appended to loop.json (none under --dry-run, or when review dropped them all). */
  appended: string[];
  file: string;
}

interface PlanVerbOptions {
  root: string;
  stateRoot: string;
  brief: string;
  runner: string | undefined;
  model: string | undefined;
  maxItems: number;
  issues: string | undefined;
  issueSource: IssueSource | null;
  dryRun: boolean;
  yes: boolean;
  stdinIsTTY: boolean;
  env: Record<string, string | undefined>;
  /** Where warnings go (stderr, --quiet keeps them): what --yes appends unreviewed, what the prompt left out. */
  notice: (text: string) => void;
}

export async function planVerb(o: PlanVerbOptions): Promise<PlanDocument> {
  if (o.yes && o.dryRun) throw new UsageError("--yes and --dry-run exclude each other");
  // Refused before a paid call: a draft nobody can review or accept would be wasted.
  if (!o.yes && !o.dryRun && !o.stdinIsTTY)
    throw new UsageError("loop plan needs a terminal to review the draft: pass --dry-run to print it, or --yes to append it unreviewed. Nothing was drafted.");
  const { file, def } = loadLoopDefinition(o.root);
  const defaults = reviewDefaultsOf(file.raw);
  const defaultRunner = defaults.runner;
  const catalogue = runnerCatalogue(def.runners);
  const names = catalogue.map((r) => r.name);
  const runner = o.runner ?? defaultRunner;
  if (!names.includes(runner)) throw new UsageError(`--runner ${JSON.stringify(runner)} is not a runner of this loop (runners: ${names.join(", ")})`);
  let forge: PlanContext["forge"] = null;
  if (o.issues !== undefined) {
    const source = requireIssueSource(o.issueSource, "--issues");
    const [issues, open] = await Promise.all([source.searchOpenIssues(o.issues), source.openPullRequests()]);
    const { pulls, leftOut } = pullsForPrompt(issues, open);
    if (leftOut)
      o.notice(
        `loop plan: ${leftOut} of the ${open.length} open pull requests are left out of the planner's prompt (at most ${FORGE_CAPS.pulls}, those naming a matched issue first); it may draft an issue one of them covers`,
      );
    forge = { search: o.issues, issues, pulls, pullsLeftOut: leftOut };
  }
  const status = itemStatuses(
    o.stateRoot,
    def.items.map((i) => i.id),
  );
  const context: PlanContext = {
    brief: o.brief,
    maxItems: o.maxItems,
    existing: def.items.map((i) => ({ id: i.id, ref: i.ref, prompt: i.prompt, status: status.get(i.id)! })),
    runners: catalogue,
    defaultRunner,
    forge,
  };
  const answerContext = {
    existingIds: new Set(def.items.map((i) => i.id)),
    existingRefs: new Map(def.items.filter((i) => i.ref !== null).map((i) => [i.ref!, i.id])),
    runners: names,
    maxItems: o.maxItems,
  };
  const ask =
    runner === "demo"
      ? async () => JSON.stringify(demoPlan(context))
      : (prompt: string) =>
          runPlanner({
            runner,
            model: o.model ?? null,
            prompt,
            schema: ANSWER_JSON_SCHEMA,
            commandRunners: def.runners,
            env: o.env,
            envRule: plannerRule(def, runner),
          });
  const draft = await draftPlan({ context, answerContext, ask });
  const doc: PlanDocument = { schema: "loop/plan@1", runner, ...draft, dryRun: o.dryRun, appended: [], file: file.path };
  if (draft.outcome !== "drafted" || o.dryRun) return doc;
  let items = draft.items;
  // Nothing is appended without its every field shown to a person: at the review, or with --yes on stderr.
  if (!o.yes) items = await reviewItems(items, { editable: true, what: "Append {n} items to loop.json", defaults, warnings: draft.warnings });
  else
    o.notice(
      describeUnreviewed(items, {
        what: `loop plan: appending ${items.length} drafted item${items.length === 1 ? "" : "s"} to loop.json`,
        defaults,
        warnings: draft.warnings,
      }),
    );
  if (items.length === 0) return doc;
  // Items whose dependency review dropped would make the definition invalid: said by the validation.
  try {
    const r = appendItems({ root: o.root, dryRun: false, items: items.map((i) => ({ ...i, from: `draft item ${JSON.stringify(i.id)}` })) });
    doc.appended = r.added.map((a) => a.id);
  } catch (e) {
    if (e instanceof DefinitionError)
      throw new DefinitionError(
        [
          ...e.issues.slice(0, -1),
          { path: "", message: "the draft was not appended (nothing was written); fix it with --dry-run and loop add, or plan again" },
        ],
        e.file,
      );
    throw e;
  }
  return doc;
}
