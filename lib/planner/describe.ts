// What a person is shown of an item before it is written to loop.json (docs/cli/loop-plan.md#review):
// at the review on a terminal, or on stderr when --yes skips it. Every field goes through shown.ts
// (escaped, folded, clipped with its length said). Pure.
import { DEFAULTS } from "../definition/normalized.ts";
import type { Warning } from "./answer.ts";
import { shownLine, shownPrompt } from "./shown.ts";

/** An item about to be appended: what review shows of it. Fields left null take the loop's defaults. */
export interface Describable {
  id: string;
  prompt: string;
  ref?: string | null;
  dependsOn?: readonly string[];
  runner?: string | null;
  model?: string | null;
  verify?: string | null;
  source?: string | null;
}

/** What an item left at its defaults gets (loop.json as written), so review can flag a field that differs. */
export interface ReviewDefaults {
  /** `defaults.verify`: a command, false (no command), or null (none set). */
  verify: string | false | null;
  runner: string;
  model: string | null;
  /** The sandbox a runner's agents and verify commands run in: its own `sandbox`, else `defaults.sandbox`. */
  sandbox: (runner: string) => string;
}

/** A verify command longer than this shows its length beside it. */
const SAY_LENGTH_OVER = 100;
const WHOLE = "`loop plan --dry-run --json` prints the draft as it is";

const code = (s: string) => `\`${shownLine(s).text}\``;

/** The loop's default verify (loop.json `defaults.verify`) as review names it. */
function defaultVerifyText(v: string | false | null): string {
  return v === null ? "none" : v === false ? "false (no command)" : code(v);
}

/**
 * Every field of an item that will be written to loop.json (docs/cli/loop-plan.md#review), its
 * warnings, and a flag on a field that differs from the loop's default where it decides what runs:
 * the verify (a shell command `loop run` will execute), the runner (and the sandbox it runs in), the
 * model. A field shown folded or clipped says so, with its length.
 */
export function describeItem(it: Describable, o: { n: number; of: number; defaults: ReviewDefaults; warnings: readonly Warning[] }): string {
  const d = o.defaults;
  const field = (name: string, value: string) => `  ${name.padEnd(11)}${value}`;
  const flags: string[] = [];
  let folded = false;
  const one = (name: string, value: string) => {
    const s = shownLine(value);
    folded ||= s.folded;
    if (s.cut)
      flags.push(`  ! ${name} is ${s.length.toLocaleString("en-US")} characters long: ${s.cut.toLocaleString("en-US")} of its middle are not shown (${WHOLE})`);
    return s;
  };
  const prompt = shownPrompt(it.prompt);
  folded ||= prompt.folded;
  if (prompt.cutLines)
    flags.push(
      `  ! the prompt has ${prompt.lineCount.toLocaleString("en-US")} lines: ${prompt.cutLines.toLocaleString("en-US")} of its middle are not shown (${WHOLE})`,
    );
  const lines = [`${o.n}/${o.of} ${one("id", it.id).text}`, ...prompt.lines.map((l) => `  | ${l}`)];
  lines.push(field("ref", it.ref ? one("ref", it.ref).text : "none"));
  lines.push(field("depends on", it.dependsOn?.length ? it.dependsOn.map((x) => one("a dependency", x).text).join(", ") : "nothing"));
  lines.push(field("runner", it.runner ? one("runner", it.runner).text : `the loop's default (${shownLine(d.runner).text})`));
  lines.push(field("model", it.model ? one("model", it.model).text : d.model ? `the loop's default (${shownLine(d.model).text})` : "the runner's default"));
  if (it.verify) {
    const v = one("verify", it.verify);
    lines.push(field("verify", `\`${v.text}\`${v.length > SAY_LENGTH_OVER || v.cut || v.folded ? ` (${v.length.toLocaleString("en-US")} characters)` : ""}`));
  } else lines.push(field("verify", `the loop's default (${defaultVerifyText(d.verify)})`));
  if (it.verify && it.verify !== d.verify)
    lines.push(`  ! verify differs from the loop's default (${defaultVerifyText(d.verify)}): \`loop run\` will run this shell command in the item's worktree`);
  if (it.runner && it.runner !== d.runner)
    lines.push(
      `  ! runner differs from the loop's default (${shownLine(d.runner).text}, sandbox "${d.sandbox(d.runner)}"): this item's agent and verify run on ${shownLine(it.runner).text}, sandbox "${d.sandbox(it.runner)}"`,
    );
  if (it.model && it.model !== d.model)
    lines.push(
      `  ! model differs from the loop's default (${d.model ? shownLine(d.model).text : "the runner's own"}): this item's agent is asked for ${shownLine(it.model).text}`,
    );
  if (it.source) lines.push(field("source", one("source", it.source.split("\n")[0]!).text));
  lines.push(...flags);
  if (folded) lines.push(`  ! shown folded: each ⟨…⟩ stands for a run of blank or hidden characters, counted (${WHOLE})`);
  for (const w of o.warnings.filter((x) => x.item === it.id)) lines.push(`  ! ${w.code}: ${shownLine(w.message).text}`);
  return lines.join("\n");
}

/** The warnings about no item of `items` (the draft as a whole, or an item review dropped), one line each. */
export function otherWarnings(items: readonly Describable[], warnings: readonly Warning[]): string[] {
  return warnings
    .filter((w) => w.item === null || !items.some((it) => it.id === w.item))
    .map((w) => `! ${w.code}${w.item ? ` ${shownLine(w.item).text}` : ""}: ${shownLine(w.message).text}`);
}

/** What an item left at its defaults gets, from loop.json as written (already validated). */
export function reviewDefaultsOf(raw: unknown): ReviewDefaults {
  const r = (raw ?? {}) as {
    defaults?: { verify?: unknown; runner?: unknown; model?: unknown; sandbox?: unknown };
    runners?: Record<string, { sandbox?: unknown } | undefined>;
  };
  const v = r.defaults?.verify;
  const text = (x: unknown) => (typeof x === "string" ? x : null);
  return {
    verify: typeof v === "string" || v === false ? v : null,
    runner: text(r.defaults?.runner) ?? DEFAULTS.runner,
    model: text(r.defaults?.model),
    // As the definition decides it (lib/definition/normalize.ts): a command runner's own sandbox wins.
    sandbox: (runner) => text(r.runners && Object.hasOwn(r.runners, runner) ? r.runners[runner]?.sandbox : undefined) ?? text(r.defaults?.sandbox) ?? "none",
  };
}

/** What `--yes` says on stderr before it appends: the same facts review would have shown. */
export function describeUnreviewed(items: readonly Describable[], o: { what: string; defaults: ReviewDefaults; warnings: readonly Warning[] }): string {
  const out = [`${o.what} unreviewed (--yes); what will be written:`, ...otherWarnings(items, o.warnings)];
  items.forEach((it, i) => out.push(describeItem(it, { n: i + 1, of: items.length, defaults: o.defaults, warnings: o.warnings })));
  return out.join("\n");
}
