// The planner's answer: its JSON shape (given to the agent CLIs that can enforce one), and its
// validation with valibot into a draft. Pure.
//
// A problem here is the planner's mistake and is fed back to it once (lib/planner/plan.ts); a
// runner the catalogue does not hold is not a problem but a drop (the item keeps the default
// runner, and the draft says so). Dependencies are checked later, as warnings on the draft
// (quality.ts): the operator reviews them.
import * as v from "valibot";
import { isItemId, parseRef } from "../definition/refs.ts";
import { RefError } from "../shared/errors.ts";
import { formatJsonPath } from "../definition/json-strict.ts";
import { hiddenIn } from "../shared/untrusted-text.ts";

type Outcome = "drafted" | "nothing_new" | "undraftable";

export interface DraftItem {
  id: string;
  prompt: string;
  /** Canonical ref, or null. */
  ref: string | null;
  dependsOn: string[];
  runner: string | null;
  model: string | null;
  verify: string | null;
  /** What the item was drafted from: a line of the brief, quoted, or an issue's ref. */
  source: string | null;
}

export interface Answer {
  outcome: Outcome;
  reason: string | null;
  items: DraftItem[];
}

export interface Warning {
  code: "unknown_runner" | "duplicate_prompt" | "no_source" | "unknown_dependency" | "dependency_cycle" | "oversized";
  item: string | null;
  message: string;
}

/** What the answer is checked against: the loop's existing items and runners, and --max-items. */
export interface AnswerContext {
  existingIds: ReadonlySet<string>;
  /** Canonical ref -> the id of the existing item that has it. */
  existingRefs: ReadonlyMap<string, string>;
  runners: readonly string[];
  maxItems: number;
}

/**
 * The longest fields an answer may hold, in characters: what review shows must be readable, so a
 * verify command (a shell command `loop run` executes) cannot hide its head behind a million spaces,
 * nor a prompt bury what it asks. Longer is a problem, fed back to the planner for its one retry.
 */
export const ANSWER_CAPS = { verify: 1_000, prompt: 16_000, model: 200 } as const;

const Str = v.string("must be a string");
const NonBlank = v.pipe(
  Str,
  v.check((s) => s.trim() !== "", "must not be empty"),
);
const Item = v.strictObject(
  {
    id: NonBlank,
    prompt: NonBlank,
    ref: v.nullish(Str),
    dependsOn: v.nullish(v.array(Str, "must be an array of item ids")),
    runner: v.nullish(Str),
    model: v.nullish(NonBlank),
    verify: v.nullish(NonBlank),
    source: v.nullish(Str),
  },
  (issue) => (issue.expected === "never" ? "unknown key" : issue.received === "undefined" ? "required" : `expected an object, got ${issue.received}`),
);
const Shape = v.strictObject(
  {
    outcome: v.picklist(["drafted", "nothing_new", "undraftable"], 'must be "drafted", "nothing_new" or "undraftable"'),
    reason: v.nullish(Str),
    items: v.array(Item, "must be an array of items"),
  },
  (issue) => (issue.expected === "never" ? "unknown key" : issue.received === "undefined" ? "required" : `expected an object, got ${issue.received}`),
);

/**
 * The JSON Schema of the answer, for `claude --json-schema` and `codex exec --output-schema`. Every
 * property is required and nullable (what OpenAI's strict structured outputs accept); the
 * validation above also takes them absent, for command planners.
 */
export const ANSWER_JSON_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["outcome", "reason", "items"],
  properties: {
    outcome: { type: "string", enum: ["drafted", "nothing_new", "undraftable"] },
    reason: { type: ["string", "null"] },
    items: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["id", "prompt", "ref", "dependsOn", "runner", "model", "verify", "source"],
        properties: {
          id: { type: "string" },
          prompt: { type: "string" },
          ref: { type: ["string", "null"] },
          dependsOn: { type: "array", items: { type: "string" } },
          runner: { type: ["string", "null"] },
          model: { type: ["string", "null"] },
          verify: { type: ["string", "null"] },
          source: { type: ["string", "null"] },
        },
      },
    },
  },
} as const;

type Checked = { ok: true; answer: Answer; warnings: Warning[] } | { ok: false; problems: string[] };

/** Validate a parsed answer: every problem with its path, or the draft (unknown runners dropped, with a warning each). */
export function checkAnswer(raw: unknown, ctx: AnswerContext): Checked {
  // valibot's object schemas take an array for an object.
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    return { ok: false, problems: [`answer: expected an object, got ${Array.isArray(raw) ? "an array" : JSON.stringify(raw)}`] };
  const r = v.safeParse(Shape, raw);
  if (!r.success) return { ok: false, problems: r.issues.map((i) => `${formatJsonPath((i.path ?? []).map((p) => p.key)) || "answer"}: ${i.message}`) };
  const a = r.output;
  const problems: string[] = [];
  const warnings: Warning[] = [];
  if (a.outcome === "drafted" && a.items.length === 0)
    problems.push('outcome: "drafted" with no items (answer "nothing_new" or "undraftable" with a reason instead)');
  if (a.outcome !== "drafted" && a.items.length > 0) problems.push(`outcome: "${a.outcome}" must come with no items`);
  if (a.outcome !== "drafted" && !a.reason?.trim()) problems.push(`reason: "${a.outcome}" needs a reason`);
  if (a.items.length > ctx.maxItems) problems.push(`items: ${a.items.length} items, at most ${ctx.maxItems} allowed`);
  const ids = new Map<string, number>();
  const refs = new Map<string, number>();
  // loop.json stores no hidden characters (docs/loop-json.md#the-file): a draft that holds any is sent back.
  hiddenProblems(raw, [], problems);
  const items: DraftItem[] = a.items.map((it, i) => {
    const at = `items[${i}]`;
    if (!isItemId(it.id))
      problems.push(
        `${at}.id: ${JSON.stringify(it.id)} is not an item id (lowercase letters, digits and '-', with single '.' or '_' between them, at most 64 characters)`,
      );
    else if (ctx.existingIds.has(it.id)) problems.push(`${at}.id: ${JSON.stringify(it.id)} is already an item of the loop; pick another id`);
    else if (ids.has(it.id)) problems.push(`${at}.id: duplicate id ${JSON.stringify(it.id)} (also items[${ids.get(it.id)}])`);
    ids.set(it.id, ids.get(it.id) ?? i);
    let ref: string | null = null;
    if (it.ref != null && it.ref !== "") {
      try {
        ref = parseRef(it.ref).canonical;
        const holder = ctx.existingRefs.get(ref);
        if (holder !== undefined) problems.push(`${at}.ref: ${ref} is already item ${JSON.stringify(holder)}; leave it out`);
        else if (refs.has(ref)) problems.push(`${at}.ref: duplicate ref ${ref} (also items[${refs.get(ref)}])`);
        refs.set(ref, refs.get(ref) ?? i);
      } catch (e) {
        if (!(e instanceof RefError)) throw e;
        problems.push(`${at}.ref: ${e.message}`);
      }
    }
    for (const key of ["verify", "prompt", "model"] as const) {
      const n = it[key] ? Array.from(it[key]).length : 0;
      if (n > ANSWER_CAPS[key]) problems.push(`${at}.${key}: ${n} characters, at most ${ANSWER_CAPS[key]} allowed (a person reviews it before it is written)`);
    }
    let runner = it.runner ?? null;
    if (runner !== null && !ctx.runners.includes(runner)) {
      warnings.push({
        code: "unknown_runner",
        item: it.id,
        message: `runner ${JSON.stringify(runner)} is not in the catalogue (${ctx.runners.join(", ")}): dropped, the item uses the loop's default`,
      });
      runner = null;
    }
    return {
      id: it.id,
      prompt: it.prompt,
      ref,
      dependsOn: it.dependsOn ?? [],
      runner,
      model: it.model ?? null,
      verify: it.verify ?? null,
      source: it.source?.trim() ? it.source : null,
    };
  });
  if (problems.length) return { ok: false, problems };
  return { ok: true, answer: { outcome: a.outcome, reason: a.reason?.trim() ? a.reason : null, items }, warnings };
}

type Parsed = { ok: true; value: unknown } | { ok: false; why: "empty" | "truncated" | "unparseable"; message: string };

/** The answer text as JSON; a text that stops inside the document is "truncated" (never retried: it would be paid for again, and cut again). */
export function parseAnswerText(text: string): Parsed {
  const t = text.trim();
  if (t === "") return { ok: false, why: "empty", message: "the planner printed no answer" };
  try {
    return { ok: true, value: JSON.parse(t) };
  } catch (e) {
    const truncated = t.startsWith("{") && !balanced(t);
    return {
      ok: false,
      why: truncated ? "truncated" : "unparseable",
      message: truncated
        ? `the answer stops before its JSON document ends (${t.length} characters received): truncated output`
        : `the answer is not JSON: ${(e as Error).message}`,
    };
  }
}

/** Whether every {, [ and string opened in a JSON-looking text is closed. */
function balanced(t: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < t.length; i++) {
    const c = t[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
  }
  return depth <= 0 && !inString;
}

/** Each string of the answer that holds a hidden character (lib/shared/untrusted-text.ts), by path. */
function hiddenProblems(value: unknown, at: readonly (string | number)[], out: string[]): void {
  if (typeof value === "string") {
    const h = hiddenIn(value);
    if (h.count > 0)
      out.push(
        `${formatJsonPath(at) || "answer"}: holds ${h.count} hidden character${h.count === 1 ? "" : "s"} (${h.first.map((c) => c.codePoint).join(", ")}${h.count > h.first.length ? ", …" : ""}); write plain text only`,
      );
  } else if (Array.isArray(value)) value.forEach((v, i) => hiddenProblems(v, [...at, i], out));
  else if (typeof value === "object" && value !== null) for (const [k, v] of Object.entries(value)) hiddenProblems(v, [...at, k], out);
}
