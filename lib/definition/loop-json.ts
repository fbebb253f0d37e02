// loop.json (docs/loop-json.md): the hand-edited loop definition, validated into a NormDefinition.
//
// Validation runs in two passes so that one run reports every problem:
//   1. shape: a valibot schema of the raw file (strict objects, types, ranges, formats);
//   2. meaning: rules across fields (ids, refs, dependencies, runners, verify defaults), run on the
//      raw value with per-field guards, so a badly-typed field elsewhere does not hide them.
// Nothing is normalized unless both passes found nothing.

import { readRegularFile } from "../shared/fsutil.ts";
import { join } from "node:path";
import * as v from "valibot";
import { canonicalJson, sha256Hex } from "../log/canonical.ts";
import { parseDuration } from "./duration.ts";
import { JsonSyntaxError, formatJsonPath, parseStrictJson } from "./json-strict.ts";
import { RefError, isItemId, itemIdFromRef, parseRef, refPrefix } from "./refs.ts";
import { RESERVED_RUNNER_NAMES } from "./runners.ts";
import { protectPatternProblem } from "./protect.ts";
import { BUILTIN_SECRETS, DEFAULT_ENVIRONMENT, ENV_PATTERN, type NormEnvironment } from "./environment.ts";
import { DefinitionError, type DefinitionIssue } from "../shared/errors.ts";
import { REACTION_DECISIONS, type ReactionDecision, type ReactionSignal } from "../log/vocabulary.ts";
export { DefinitionError, type DefinitionIssue } from "../shared/errors.ts";

export interface Timeouts {
  launch: number;
  stall: number;
  verify: number;
  /** How long landing through a forge may wait for a merge; present only in a loop with a forge. */
  landing?: number;
}
export interface NormItem {
  id: string;
  /** Canonical ref, or null for an item without one. */
  ref: string | null;
  prompt: string;
  dependsOn: string[];
  /** The verify command, or false: pass only on agent exit 0 with a change on the branch. */
  verify: string | false;
  runner: string;
  model: string | null;
  maxAttempts: number;
  timeouts: Timeouts;
  /**
   * "bwrap" when the item's agent and verify run in the sandbox (docs/runners.md#the-sandbox): the
   * runner's own `sandbox`, else `defaults.sandbox`. Absent for "none", so a definition without a
   * sandbox (and its hash) is as before.
   */
  sandbox?: "bwrap";
  /**
   * What loop does about what happens on the item's pull request while it waits to merge it
   * (docs/forge.md#reactions): loop.json's item `reactions`, else the loop's, else the defaults.
   * Present only in a loop with a forge, so a definition without one (and its hash) is as before.
   */
  reactions?: NormReactions;
  /**
   * What the item may spend over all its attempts (docs/spend.md): tokens, and US dollars in
   * millionths. Absent without one, so a definition without budgets (and its hash) is as before.
   */
  budget?: Limit;
}
/** One decision per reaction signal (lib/log/vocabulary.ts REACTION_SIGNALS). */
export type NormReactions = Record<ReactionSignal, ReactionDecision>;
export type Sandbox = "bwrap" | "none";
/** A budget: tokens, and US dollars in millionths (micro-dollars); either or both. */
export interface Limit {
  tokens?: number;
  microUsd?: number;
}
/** The loop's budget (docs/spend.md): over every attempt ever made, and over a rolling day. */
export interface LoopBudget extends Limit {
  daily?: Limit;
}
/** The operator's price of a model, in micro-dollars per million tokens of each kind. */
export interface ModelPrice {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}
/** The guards against attempts that go nowhere (docs/spend.md#guards); both on unless turned off. */
export interface Guards {
  noProgress: boolean;
  identicalFailure: boolean;
}
export const DEFAULT_GUARDS: Readonly<Guards> = { noProgress: true, identicalFailure: true };
export interface CommandRunner {
  command: string[];
}
/** loop.json's `forge` section, normalized (docs/forge.md). The token is never here: only the name of its variable. */
export interface NormForge {
  provider: ForgeKind;
  /** owner/repo (GitHub), or the project's full path, nested groups included (GitLab: group/subgroup/project). */
  repo: string;
  apiUrl: string;
  remote: string;
  tokenEnv: string;
  authorizedUsers: string[];
  authorizeWriters: boolean;
  /** Milliseconds between two reads of the repository's comments. */
  pollInterval: number;
}
export type Landing = "none" | "merge" | "pr";
/** The command run when the loop needs a person (docs/operations.md#hearing-about-trouble). */
export interface NotifyDef {
  command: string[];
  /** Milliseconds it may run before its process group is killed. */
  timeout: number;
}
export interface NormDefinition {
  name: string;
  landing: Landing;
  base: string;
  /** The branch landing "merge" merges into; `loop/<name>/landed` unless workspace.target says otherwise. */
  target: string;
  tmux: boolean;
  keepCheckoutOnClose: boolean;
  requireStartCommand: boolean;
  /** Command runners from loop.json; none is named like a built-in runner. */
  runners: Record<string, CommandRunner>;
  /**
   * loop.json's `protect` globs (lib/definition/protect.ts), added to the built-in ones at check
   * time. Absent when loop.json names none, so such a definition (and its hash) is as before.
   */
  protect?: string[];
  /** Absent without a `forge` section (and then nothing forge-related runs). */
  forge?: NormForge;
  /** The loop's budget; absent without one (docs/spend.md). */
  budget?: LoopBudget;
  /** Prices by model name; absent without any (then dollars come only from the agents). */
  prices?: Record<string, ModelPrice>;
  /** Present only when a guard is turned off (so a definition that leaves them on hashes as before). */
  guards?: Guards;
  /**
   * null without one. Not part of what the log records of the definition (nor of its hash): how an
   * operator hears about trouble is this machine's plumbing, like PATH, not the loop's state.
   */
  notify: NotifyDef | null;
  /**
   * What agents, verify commands and planners get of loop's environment (lib/definition/environment.ts).
   * Like notify, this machine's plumbing: not part of what the log records of the definition.
   */
  environment: NormEnvironment;
  items: NormItem[];
}

/** The built-in runners (lib/definition/runners.ts): always available, and names a `runners` entry cannot take. */
export const KNOWN_RUNNERS: readonly string[] = RESERVED_RUNNER_NAMES;
export const RUNNER_PLACEHOLDERS: readonly string[] = ["prompt", "handoff", "workdir", "model", "session_id"];

const DEFAULTS = {
  runner: "demo",
  maxAttempts: 2,
  timeouts: { launch: "5m", stall: "60m", verify: "15m", landing: "30m" },
  landing: "none",
  base: "main",
  notifyTimeout: "30s",
} as const;

/** The longest a notify command may run: the step holds its lease meanwhile. */
export const MAX_NOTIFY_TIMEOUT_MS = 5 * 60_000;

// ---------------------------------------------------------------------------------------------
// Pass 1: the raw shape.

const ID_RULE = "lowercase letters, digits and '-', with single '.' or '_' between them, at most 64 characters";

/** A valibot check whose message comes from a function returning the problem (or undefined). */
function problem<T>(find: (value: T) => string | undefined) {
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const message = find(dataset.value);
    if (message !== undefined) addIssue({ message });
  });
}

/**
 * A strict object that also accepts a "$comment" string, so the `loop init` template can explain
 * itself. Arrays are refused first: valibot's object schemas would take `[]` for an empty object.
 */
function section<E extends v.ObjectEntries>(entries: E) {
  const all = { ...entries, $comment: v.optional(v.string('"$comment" must be a string')) };
  const allowed = Object.keys(all).join(", ");
  const notArray = v.custom<unknown>((x) => !Array.isArray(x), "expected an object, got an array");
  const object = v.strictObject(all, (issue) =>
    issue.expected === "never"
      ? `unknown key (allowed: ${allowed})`
      : issue.received === "undefined" && issue.expected !== "Object"
        ? "required"
        : `expected an object, got ${issue.received}`,
  );
  return Object.assign(v.pipe(notArray, object), { keys: Object.keys(all) });
}

const NonBlank = v.pipe(
  v.string("must be a string"),
  v.check((s) => s.trim() !== "", "must not be empty"),
);

const Name = v.pipe(
  v.string("must be a string"),
  v.check(isItemId, `must be ${ID_RULE} (it is used in branch names)`),
);
const ItemId = v.pipe(v.string("must be a string"), v.check(isItemId, `must be ${ID_RULE}`));

const Duration = v.pipe(
  v.string('must be a duration string such as "15m"'),
  problem<string>((s) => {
    try {
      parseDuration(s); // zero included: refused by parseDuration itself
      return undefined;
    } catch (e) {
      return (e as Error).message;
    }
  }),
  v.transform(parseDuration),
);

const RawTimeouts = section({
  launch: v.optional(Duration),
  stall: v.optional(Duration),
  verify: v.optional(Duration),
  landing: v.optional(Duration),
});

const Verify = v.union(
  [NonBlank, v.literal(false)],
  "must be a command string, or false to accept an agent exit 0 with a change on its branch",
);
const Model = v.nullable(NonBlank);
const MaxAttempts = v.pipe(
  v.number("must be an integer from 1 to 100"),
  v.integer("must be an integer from 1 to 100"),
  v.minValue(1, "must be an integer from 1 to 100"),
  v.maxValue(100, "must be an integer from 1 to 100"),
);
const RunnerName = v.pipe(v.string("must be a string"), v.check(isItemId, `runner names are ${ID_RULE}`));
const Branch = v.pipe(v.string("must be a string"), problem<string>(branchNameProblem));
const Bool = v.boolean("must be true or false");

const CommandArg = v.pipe(
  v.string("must be a string"),
  v.check((s) => s !== "", "must not be empty"),
  problem<string>((arg) => {
    const unknown = [...arg.matchAll(/\{([A-Za-z0-9_]+)\}/g)]
      .map((m) => m[1]!)
      .filter((p) => !RUNNER_PLACEHOLDERS.includes(p));
    if (unknown.length === 0) return undefined;
    const known = RUNNER_PLACEHOLDERS.map((p) => `{${p}}`).join(", ");
    return `unknown placeholder ${unknown.map((p) => `{${p}}`).join(", ")} (known: ${known})`;
  }),
);
const SandboxKind = v.picklist(["bwrap", "none"], 'must be "bwrap" (run the agent and its verify under bubblewrap) or "none"');
/** Environment variable names, or patterns with `*` (docs/loop-json.md#environment). */
const EnvNames = v.array(
  v.pipe(v.string("must be a string"), v.check((s) => ENV_PATTERN.test(s), "must be an environment variable name, or a pattern with * (like AWS_*)")),
  "must be an array of variable names",
);
const RawRunner = section({
  command: v.pipe(
    v.array(CommandArg, "must be an array of strings"),
    v.minLength(1, "must name a program to run"),
  ),
  sandbox: v.optional(SandboxKind),
  environment: v.optional(EnvNames),
});
const RawEnvironment = section({
  policy: v.optional(v.picklist(["inherit", "clean"], 'must be "inherit" or "clean"')),
  pass: v.optional(EnvNames),
  secrets: v.optional(EnvNames),
});
const ProtectPattern = v.pipe(v.string("must be a string (a glob)"), problem<string>(protectPatternProblem));

const RawNotify = section({
  command: v.pipe(
    v.array(v.pipe(v.string("must be a string"), v.check((s) => s !== "", "must not be empty")), "must be an array of strings"),
    v.minLength(1, "must name a program to run"),
  ),
  timeout: v.optional(
    v.pipe(
      Duration,
      v.check((ms) => ms <= MAX_NOTIFY_TIMEOUT_MS, "must be at most 5m (the step waits for it)"),
    ),
  ),
});

/** US dollars: a positive number, at most a billion, kept to the millionth. */
const Usd = v.pipe(
  v.number("must be a number of US dollars"),
  problem<number>((n) =>
    !(Number.isFinite(n) && n > 0 && n <= 1e9) ? "must be a number of US dollars above 0 (at most 1000000000)" : Math.round(n * 1e6) < 1 ? "must be at least 0.000001 (a millionth of a dollar)" : undefined,
  ),
);
const Tokens = v.pipe(
  v.number("must be a whole number of tokens"),
  v.integer("must be a whole number of tokens"),
  v.minValue(1, "must be at least 1"),
  v.maxValue(Number.MAX_SAFE_INTEGER, "is too large"),
);
const RawBudget = section({ tokens: v.optional(Tokens), usd: v.optional(Usd) });
const RawLoopBudget = section({ tokens: v.optional(Tokens), usd: v.optional(Usd), daily: v.optional(RawBudget) });
/** A price in US dollars per million tokens: 0 or more. */
const PerMTok = v.pipe(
  v.number("must be a price in US dollars per million tokens"),
  v.check((n) => Number.isFinite(n) && n >= 0 && n <= 1e6, "must be a price in US dollars per million tokens, from 0 to 1000000"),
);
const RawPrice = section({ input: PerMTok, output: PerMTok, cacheRead: v.optional(PerMTok), cacheWrite: v.optional(PerMTok) });
const ModelName = v.pipe(v.string("must be a string"), v.check((s) => s.trim() !== "", "a model name must not be empty"));
const RawGuards = section({ noProgress: v.optional(Bool), identicalFailure: v.optional(Bool) });

const RawDefaults = section({
  runner: v.optional(v.string("must be a string")),
  model: v.optional(Model),
  verify: v.optional(Verify),
  maxAttempts: v.optional(MaxAttempts),
  timeouts: v.optional(RawTimeouts),
  landing: v.optional(v.picklist(["none", "merge", "pr"], 'must be "none", "merge" or "pr"')),
  sandbox: v.optional(SandboxKind),
  budget: v.optional(RawBudget),
});

const Reaction = v.picklist(REACTION_DECISIONS, 'must be "retry" (a new attempt reworks the pull request) or "block" (landing_blocked, for a person)');
const RawReactions = section({
  checksFailed: v.optional(Reaction),
  changesRequested: v.optional(Reaction),
  conflict: v.optional(Reaction),
});

const RawItem = section({
  id: v.optional(ItemId),
  ref: v.optional(v.string("must be a string")), // parsed in pass 2, where the RefError message is kept
  prompt: NonBlank,
  dependsOn: v.optional(v.array(v.string("must be an item id"), "must be an array of item ids")),
  verify: v.optional(Verify),
  runner: v.optional(v.string("must be a string")),
  model: v.optional(Model),
  maxAttempts: v.optional(MaxAttempts),
  timeouts: v.optional(RawTimeouts),
  reactions: v.optional(RawReactions),
  budget: v.optional(RawBudget),
});

const RawControl = section({ requireStartCommand: v.optional(Bool) });
const RawSessions = section({ tmux: v.optional(Bool) });
const RawWorkspace = section({
  keepCheckoutOnClose: v.optional(Bool),
  base: v.optional(Branch),
  target: v.optional(Branch),
});

/** The forges loop speaks to (docs/forge.md), and what each one's settings default to. */
export const FORGE_KINDS = ["github", "gitlab"] as const;
export type ForgeKind = (typeof FORGE_KINDS)[number];
const FORGE_DEFAULTS = { remote: "origin", pollInterval: "60s" } as const;
/**
 * What differs between forges in loop.json: the default API and token variable, the host of the
 * public service (refs leave it out), how deep a repository path goes, and a login's alphabet
 * (GitHub: letters, digits, inner hyphens; GitLab: also '.' and '_'). ASCII only, always.
 */
const KIND: Record<ForgeKind, { apiUrl: string; apiHost: string; gitHost: string; gitUser: string; tokenEnv: string; depth: number; repoShape: string; login: RegExp; loginRule: string }> = {
  // gitHost: where the public service's git answers (its API host otherwise); gitUser: the user name
  // a token is presented under over https (GitHub ignores it; GitLab wants it non-blank).
  github: { apiUrl: "https://api.github.com", apiHost: "api.github.com", gitHost: "github.com", gitUser: "x-access-token", tokenEnv: "GITHUB_TOKEN", depth: 1, repoShape: "<owner>/<repo>", login: /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/, loginRule: "a GitHub login (ASCII letters, digits and inner '-', at most 39)" },
  gitlab: { apiUrl: "https://gitlab.com/api/v4", apiHost: "gitlab.com", gitHost: "gitlab.com", gitUser: "oauth2", tokenEnv: "GITLAB_TOKEN", depth: 20, repoShape: "<group>/<project> or <group>/<subgroup>/.../<project>", login: /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,253}[A-Za-z0-9_-])?$/, loginRule: "a GitLab username (ASCII letters, digits, '_', '-' and '.', not ending in '.')" },
};

/**
 * Where loop's own push and fetch present the forge's token (lib/step/forge/remote.ts): the scheme
 * and host of the forge's git (api.github.com serves github.com; Enterprise Server and a self-managed
 * GitLab are one host) and the https user name the token goes with.
 */
export function forgeGitIdentity(provider: ForgeKind, apiUrl: string): { protocol: string; host: string; username: string } {
  const u = new URL(apiUrl);
  const kind = KIND[provider];
  return { protocol: u.protocol.replace(/:$/, ""), host: u.host === kind.apiHost ? kind.gitHost : u.host, username: kind.gitUser };
}

/** Whether `login` is one the forge allows (fails closed: anything else is nobody). */
export function isForgeLogin(provider: ForgeKind, login: string): boolean {
  return KIND[provider].login.test(login) && !/\.(git|atom)$/i.test(login);
}
const REPO_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const RawForge = section({
  provider: v.picklist(FORGE_KINDS, 'must be "github" or "gitlab"'),
  repo: v.pipe(
    v.string("must be a string"),
    v.check((s) => {
      const parts = s.split("/");
      return parts.length >= 2 && parts.length <= 21 && parts.every((x) => REPO_SEGMENT.test(x) && !x.includes("..") && !/\.(git|atom)$/i.test(x));
    }, 'must be "<owner>/<repo>" (GitLab: the project\'s full path, "<group>/<subgroup>/<project>")'),
  ),
  apiUrl: v.optional(v.pipe(v.string("must be a string"), problem<string>(apiUrlProblem))),
  remote: v.optional(v.pipe(v.string("must be a string"), v.check((s) => /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(s), "must be a git remote name"))),
  tokenEnv: v.optional(v.pipe(v.string("must be a string"), v.check((s) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s), "must be the name of an environment variable (the token itself never goes in loop.json)"))),
  authorizedUsers: v.optional(v.array(v.pipe(v.string("must be a string"), v.check((s) => FORGE_KINDS.some((k) => isForgeLogin(k, s)), "must be a forge login")), "must be an array of logins")),
  authorizeWriters: v.optional(Bool),
  pollInterval: v.optional(Duration),
});

/** Why an apiUrl is refused: https, or http to this machine only (a test's fake forge); no credentials, query or fragment in it. */
function apiUrlProblem(s: string): string | undefined {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return "must be a URL such as https://api.github.com, https://HOST/api/v3 (GitHub Enterprise Server) or https://HOST/api/v4 (GitLab)";
  }
  if (u.username || u.password) return "must not hold credentials (name the token's variable in tokenEnv)";
  if (u.search || u.hash) return "must not have a query or fragment";
  if (u.protocol === "https:") return undefined;
  if (u.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)) return undefined;
  return "must be https (http only to 127.0.0.1 or localhost)";
}

const RawDefinition = section({
  $schema: v.optional(v.string('"$schema" must be a string')),
  name: Name,
  defaults: v.optional(RawDefaults),
  runners: v.optional(v.record(RunnerName, RawRunner, "must be an object of runner name -> { command }")),
  control: v.optional(RawControl),
  sessions: v.optional(RawSessions),
  workspace: v.optional(RawWorkspace),
  forge: v.optional(RawForge),
  notify: v.optional(RawNotify),
  protect: v.optional(v.array(ProtectPattern, "must be an array of globs")),
  environment: v.optional(RawEnvironment),
  reactions: v.optional(RawReactions),
  budget: v.optional(RawLoopBudget),
  prices: v.optional(v.record(ModelName, RawPrice, "must be an object of model name -> { input, output }")),
  guards: v.optional(RawGuards),
  items: v.array(RawItem, "must be an array of items"),
});
type RawDefinition = v.InferOutput<typeof RawDefinition>;

/** Keys each object of loop.json accepts; the JSON Schema test checks schema/loop.schema.json against these. */
export const ACCEPTED_KEYS: Readonly<Record<string, readonly string[]>> = {
  definition: RawDefinition.keys,
  defaults: RawDefaults.keys,
  timeouts: RawTimeouts.keys,
  runner: RawRunner.keys,
  item: RawItem.keys,
  control: RawControl.keys,
  sessions: RawSessions.keys,
  workspace: RawWorkspace.keys,
  forge: RawForge.keys,
  notify: RawNotify.keys,
  environment: RawEnvironment.keys,
  reactions: RawReactions.keys,
  budget: RawBudget.keys,
  loopBudget: RawLoopBudget.keys,
  daily: RawBudget.keys,
  price: RawPrice.keys,
  guards: RawGuards.keys,
};

/** The default merge target of the loop `loopName`. */
function defaultTarget(loopName: string): string {
  return `loop/${loopName}/landed`;
}

/** The branch an item works on. Every item branch of a loop is under `loop/<name>/item/`. */
export function itemBranch(loopName: string, itemId: string): string {
  return `loop/${loopName}/item/${itemId}`;
}

/** Why `name` is not a usable git branch name (a subset of git check-ref-format), or undefined. */
export function branchNameProblem(name: string): string | undefined {
  const why = branchNameReason(name);
  return why && `${JSON.stringify(name)} is not a valid git branch name: ${why}`;
}

/** What makes `name` unusable as a git branch name, or undefined. */
function branchNameReason(name: string): string | undefined {
  if (name === "") return "is empty";
  if (/[\x00-\x20\x7f]/.test(name)) return "contains whitespace or a control character";
  if (/[~^:?*[\\]/.test(name)) return "contains one of ~ ^ : ? * [ \\";
  if (name.includes("..")) return "contains '..'";
  if (name.includes("@{") || name === "@") return "contains '@{' or is '@'";
  if (name.startsWith("-")) return "starts with '-'";
  if (name.endsWith(".")) return "ends with '.'";
  const parts = name.split("/");
  if (parts.some((p) => p === "")) return "has an empty path component (leading, trailing or double '/')";
  if (parts.some((p) => p.startsWith("."))) return "has a component starting with '.'";
  if (parts.some((p) => p.endsWith(".lock"))) return "has a component ending in '.lock'";
  return undefined;
}

function formatPath(path: readonly { key: unknown }[] | undefined): string {
  return formatJsonPath((path ?? []).map((p) => p.key));
}

// ---------------------------------------------------------------------------------------------
// Pass 2: rules across fields.

interface Resolved {
  id: string | null;
  /** Canonical ref. */
  ref: string | null;
  /** The id came from the ref, not from an "id" key. */
  derived: boolean;
}

type Obj = Record<string, unknown>;
type Add = (path: string, message: string) => void;
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);

/** Checks the cross-field rules, adding issues; returns each item's resolved id and canonical ref. */
function checkMeaning(raw: Obj, add: Add): Resolved[] {
  const defaults = isObj(raw.defaults) ? raw.defaults : {};
  const workspace = isObj(raw.workspace) ? raw.workspace : {};

  // A command runner cannot take a built-in's name: `runner: "claude"` always means the preset.
  if (isObj(raw.runners))
    for (const name of KNOWN_RUNNERS)
      if (Object.hasOwn(raw.runners, name))
        add(`runners.${name}`, `${JSON.stringify(name)} is a built-in runner; pick another name`);

  // valibot's record() skips these keys (they could change an object's prototype), so their values
  // would go unchecked and the runner silently vanish from the normalized definition.
  if (isObj(raw.runners))
    for (const name of ["constructor", "prototype", "__proto__"])
      if (Object.hasOwn(raw.runners, name)) add(`runners.${name}`, `${JSON.stringify(name)} cannot be a runner name; pick another`);

  // As for runners: valibot's record() skips these keys, so a price under one would vanish unchecked.
  if (isObj(raw.prices))
    for (const name of ["constructor", "prototype", "__proto__"])
      if (Object.hasOwn(raw.prices, name)) add(`prices.${name}`, `${JSON.stringify(name)} cannot be a model name here`);

  // Runner names the definition may use; null when `runners` is malformed (already reported by pass 1).
  const runnerNames =
    raw.runners === undefined
      ? [...KNOWN_RUNNERS]
      : isObj(raw.runners)
        ? [...new Set([...KNOWN_RUNNERS, ...Object.keys(raw.runners).filter((n) => isItemId(n) && n !== "constructor" && n !== "prototype")])]
        : null;
  const checkRunner = (path: string, runner: unknown) => {
    if (typeof runner === "string" && runnerNames && !runnerNames.includes(runner))
      add(path, `unknown runner ${JSON.stringify(runner)} (known: ${runnerNames.join(", ")})`);
  };
  checkRunner("defaults.runner", defaults.runner);

  // Branches: items work on loop/<name>/item/<id>; landing "merge" merges into the target, by
  // default loop/<name>/landed. Neither base nor target may collide with an item branch, and landing
  // must never merge into the base (with the default target too), which is the branch an operator
  // most likely has checked out. A name that is an id can still break every branch of the loop
  // ("x.lock"); it is then reported once, here, and the branches built from it are not checked.
  let name = typeof raw.name === "string" && isItemId(raw.name) ? raw.name : null;
  const nameProblem = name === null ? undefined : branchNameReason(`loop/${name}`);
  if (nameProblem !== undefined) {
    add("name", `cannot be used in branch names: ${JSON.stringify(itemBranch(name!, "<id>"))} ${nameProblem}`);
    name = null;
  }
  const base = typeof workspace.base === "string" ? workspace.base : DEFAULTS.base;
  // git cannot hold a branch and another branch below it, so "loop/<name>" collides too.
  const checkNotItemBranch = (path: string, branch: unknown) => {
    if (name === null || typeof branch !== "string" || branchNameProblem(branch)) return;
    const prefix = itemBranch(name, "");
    if (branch.startsWith(prefix) || prefix.startsWith(`${branch}/`))
      add(path, `${JSON.stringify(branch)} would collide with the item branches ${JSON.stringify(itemBranch(name, "<id>"))}`);
  };
  checkNotItemBranch("workspace.base", workspace.base);
  checkNotItemBranch("workspace.target", workspace.target);
  if (typeof workspace.target === "string" && workspace.target === base)
    add("workspace.target", `must differ from the base branch ${JSON.stringify(base)}`);
  if (workspace.target === undefined && name !== null && base === defaultTarget(name))
    add("workspace.base", `must differ from the merge target ${JSON.stringify(base)} (or set "workspace.target")`);

  const items = Array.isArray(raw.items) ? raw.items : [];
  const resolved = items.map((item, i) => resolveItem(item, `items[${i}]`, add));
  checkUniqueness(resolved, add);
  checkForge(raw, resolved, add);
  checkEnvironment(raw, add);
  // An id may be a valid id but not a valid branch component ("x.lock"); derived ids never are.
  if (name !== null)
    resolved.forEach((r, i) => {
      if (r.id === null || !isItemId(r.id)) return;
      const why = branchNameProblem(itemBranch(name, r.id));
      if (why) add(r.derived ? `items[${i}].ref` : `items[${i}].id`, why);
    });
  const indexOf = new Map<string, number>();
  resolved.forEach((r, i) => r.id !== null && !indexOf.has(r.id) && indexOf.set(r.id, i));

  // A missing verify is an error only when the default is known to be absent (not merely malformed).
  const noDefaultVerify = (raw.defaults === undefined || isObj(raw.defaults)) && defaults.verify === undefined;
  const edges: number[][] = items.map(() => []);
  items.forEach((item, i) => {
    if (!isObj(item)) return;
    const at = `items[${i}]`;
    checkRunner(`${at}.runner`, item.runner);
    if (item.verify === undefined && noDefaultVerify)
      add(
        `${at}.verify`,
        'no verify command and no default (set "verify": false to accept an agent exit 0 with a change on its branch)',
      );
    if (!Array.isArray(item.dependsOn)) return;
    const seen = new Set<string>();
    item.dependsOn.forEach((dep: unknown, k: number) => {
      if (typeof dep !== "string") return;
      const path = `${at}.dependsOn[${k}]`;
      if (dep === resolved[i]!.id) add(path, `item ${JSON.stringify(dep)} depends on itself`);
      else if (!indexOf.has(dep)) add(path, `unknown item ${JSON.stringify(dep)}`);
      else if (seen.has(dep)) add(path, `duplicate dependency ${JSON.stringify(dep)}`);
      else edges[i]!.push(indexOf.get(dep)!);
      seen.add(dep);
    });
  });
  for (const cycle of findCycles(edges)) {
    const ids = cycle.map((i) => resolved[i]!.id);
    add(`items[${cycle[0]}].dependsOn`, `dependency cycle ${[...ids, ids[0]].join(" -> ")}`);
  }
  return resolved;
}

/**
 * Loop's own secrets never reach what it starts: a variable named as one (built in, the forge's
 * tokenEnv, environment.secrets) cannot also be declared for a runner or passed (a pattern that
 * matches one is fine: the secret is still dropped).
 */
function checkEnvironment(raw: Obj, add: Add): void {
  const env = isObj(raw.environment) ? raw.environment : {};
  const forge = isObj(raw.forge) ? raw.forge : {};
  const secrets = new Set<string>([...BUILTIN_SECRETS, typeof forge.tokenEnv === "string" ? forge.tokenEnv : raw.forge !== undefined ? "GITHUB_TOKEN" : ""]);
  if (Array.isArray(env.secrets)) for (const s of env.secrets) if (typeof s === "string") secrets.add(s);
  const check = (path: string, list: unknown) => {
    if (!Array.isArray(list)) return;
    list.forEach((n, i) => {
      if (typeof n === "string" && secrets.has(n))
        add(`${path}[${i}]`, `${n} is one of loop's own secrets and never reaches an agent, a verify command or a planner; give them a variable of their own`);
    });
  };
  check("environment.pass", env.pass);
  if (isObj(raw.runners)) for (const [name, r] of Object.entries(raw.runners)) if (isObj(r)) check(`runners.${name}.environment`, r.environment);
}

/**
 * Rules of a loop with a forge: every ref names an issue of the forge's repository (a ref of
 * another provider or repository could not be read, answered or landed), and landing "pr" needs a
 * forge to open the PR on.
 */
function checkForge(raw: Obj, resolved: Resolved[], add: Add): void {
  const defaults = isObj(raw.defaults) ? raw.defaults : {};
  const forge = isObj(raw.forge) ? raw.forge : null;
  if (raw.forge === undefined) {
    if (defaults.landing === "pr") add("defaults.landing", '"pr" needs a "forge" section to open pull requests on');
    if (raw.reactions !== undefined) add("reactions", 'needs a "forge" section: reactions are to what happens on pull requests');
    if (Array.isArray(raw.items)) raw.items.forEach((it, i) => isObj(it) && it.reactions !== undefined && add(`items[${i}].reactions`, 'needs a "forge" section: reactions are to what happens on pull requests'));
    return;
  }
  if (!forge || typeof forge.repo !== "string" || !(FORGE_KINDS as readonly unknown[]).includes(forge.provider)) return;
  const kind = KIND[forge.provider as ForgeKind];
  const depth = forge.repo.split("/").length - 1;
  if (depth > kind.depth) add("forge.repo", `must be "${kind.repoShape}" for ${forge.provider as string} (got ${depth + 1} segments)`);
  if (Array.isArray(forge.authorizedUsers))
    forge.authorizedUsers.forEach((u, i) => {
      if (typeof u === "string" && !isForgeLogin(forge.provider as ForgeKind, u)) add(`forge.authorizedUsers[${i}]`, `must be ${kind.loginRule}`);
    });
  const host = forgeHost(forge.provider as ForgeKind, typeof forge.apiUrl === "string" ? forge.apiUrl : kind.apiUrl);
  const want = `${refPrefix({ provider: forge.provider as string, host, path: forge.repo.toLowerCase() })}#`;
  resolved.forEach((r, i) => {
    if (r.ref === null) return;
    let parsed;
    try {
      parsed = parseRef(r.ref);
    } catch {
      return;
    }
    const canonical = `${refPrefix({ provider: parsed.provider, host: parsed.host, path: `${parsed.owner}/${parsed.repo}`.toLowerCase() })}#`;
    if (canonical !== want)
      add(`items[${i}].ref`, `${JSON.stringify(r.ref)} is not an issue of the forge's repository (forge.repo ${JSON.stringify(forge.repo)}${host ? ` on ${host}` : ""}): refs of a loop with a forge must be ${want}<number>`);
  });
}

/**
 * The host refs of a forge name: null for the public service (github.com, gitlab.com: refs omit
 * it), else the apiUrl's host (GitHub Enterprise Server, a self-managed GitLab). An apiUrl on this
 * machine (a test double, a local proxy) stands for the public service.
 */
export function forgeHost(provider: ForgeKind, apiUrl: string): string | null {
  try {
    const u = new URL(apiUrl);
    if (u.host === KIND[provider].apiHost || ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)) return null;
    return u.host.toLowerCase();
  } catch {
    return null;
  }
}

function resolveItem(item: unknown, at: string, add: Add): Resolved {
  if (!isObj(item)) return { id: null, ref: null, derived: false };
  let ref: string | null = null;
  let fromRef: string | null = null;
  if (typeof item.ref === "string") {
    try {
      const parsed = parseRef(item.ref);
      ref = parsed.canonical;
      fromRef = itemIdFromRef(parsed);
    } catch (e) {
      if (!(e instanceof RefError)) throw e;
      add(`${at}.ref`, e.message);
    }
  }
  if (item.id === undefined && item.ref === undefined) add(at, 'needs an "id" (or a "ref" to derive one from)');
  if (item.id === undefined) return { id: fromRef, ref, derived: fromRef !== null };
  // A malformed explicit id is reported by pass 1; it still counts as a name so that its
  // dependents do not also get a misleading "unknown item".
  return { id: typeof item.id === "string" ? item.id : null, ref, derived: false };
}

/** Ids and canonical refs are identities: two items sharing one would share state, so both are errors. */
function checkUniqueness(resolved: Resolved[], add: Add): void {
  const firstRef = new Map<string, number>();
  const firstId = new Map<string, number>();
  const source = (r: Resolved) => (r.derived ? `derived from ref ${JSON.stringify(r.ref)}` : "explicit id");
  resolved.forEach((r, i) => {
    if (r.ref !== null) {
      const j = firstRef.get(r.ref);
      if (j === undefined) firstRef.set(r.ref, i);
      else add(`items[${i}].ref`, `duplicate ref ${JSON.stringify(r.ref)} (also items[${j}])`);
    }
    if (r.id === null) return;
    const j = firstId.get(r.id);
    if (j === undefined) return void firstId.set(r.id, i);
    const other = resolved[j]!;
    const id = JSON.stringify(r.id);
    if (!r.derived && !other.derived) add(`items[${i}].id`, `duplicate id ${id} (also items[${j}])`);
    else if (r.ref === other.ref) return; // same ref, same derived id: the duplicate ref names this pair
    else
      add(
        r.derived ? `items[${i}].ref` : `items[${i}].id`,
        `id ${id} (${source(r)}) collides with items[${j}] (${source(other)}); give one of them an explicit "id"`,
      );
  });
}

/** Each dependency cycle found by a depth-first walk, as item indexes in dependency order. */
function findCycles(edges: number[][]): number[][] {
  const state = edges.map(() => 0); // 0 unvisited, 1 on the stack, 2 done
  const stack: number[] = [];
  const cycles: number[][] = [];
  const visit = (u: number) => {
    state[u] = 1;
    stack.push(u);
    for (const w of edges[u]!) {
      if (state[w] === 1) cycles.push(stack.slice(stack.indexOf(w)));
      else if (state[w] === 0) visit(w);
    }
    stack.pop();
    state[u] = 2;
  };
  edges.forEach((_, u) => state[u] === 0 && visit(u));
  return cycles;
}

// ---------------------------------------------------------------------------------------------
// Normalization.

/** Validates a parsed loop.json; throws a DefinitionError listing every problem found. Pure. */
export function normalizeDefinition(raw: unknown, file = "loop.json"): NormDefinition {
  const result = v.safeParse(RawDefinition, raw);
  const issues: DefinitionIssue[] = (result.issues ?? []).map((i) => ({ path: formatPath(i.path), message: i.message }));
  const resolved = isObj(raw) ? checkMeaning(raw, (path, message) => issues.push({ path, message })) : [];
  if (!result.success || issues.length > 0) throw new DefinitionError(byItem(issues), file);
  return build(result.output, resolved);
}

/** Stable sort: file-level problems first, then each item's problems together, in item order. */
function byItem(issues: DefinitionIssue[]): DefinitionIssue[] {
  const rank = (i: DefinitionIssue) => Number(/^items\[(\d+)\]/.exec(i.path)?.[1] ?? -1);
  return issues.map((issue, n) => ({ issue, n })).sort((a, b) => rank(a.issue) - rank(b.issue) || a.n - b.n).map((x) => x.issue);
}

function build(raw: RawDefinition, resolved: Resolved[]): NormDefinition {
  const d: Partial<v.InferOutput<typeof RawDefaults>> = raw.defaults ?? {};
  const timeouts: Timeouts = {
    launch: d.timeouts?.launch ?? parseDuration(DEFAULTS.timeouts.launch),
    stall: d.timeouts?.stall ?? parseDuration(DEFAULTS.timeouts.stall),
    verify: d.timeouts?.verify ?? parseDuration(DEFAULTS.timeouts.verify),
  };
  // Only a loop with a forge has a landing wait; without one the definition (and its hash) is as before.
  if (raw.forge) timeouts.landing = d.timeouts?.landing ?? parseDuration(DEFAULTS.timeouts.landing);
  const items = raw.items.map((item, i): NormItem => {
    const { id, ref } = resolved[i]!;
    const verify = item.verify ?? d.verify;
    if (id === null || verify === undefined) throw new Error(`internal: items[${i}] passed validation unresolved`);
    const runner = item.runner ?? d.runner ?? DEFAULTS.runner;
    // A command runner's own sandbox wins over the default; the presets take the default.
    const own = raw.runners && Object.hasOwn(raw.runners, runner) ? raw.runners[runner]!.sandbox : undefined;
    const sandbox: Sandbox = own ?? d.sandbox ?? "none";
    return {
      id,
      ref,
      prompt: item.prompt,
      dependsOn: item.dependsOn ?? [],
      verify,
      runner,
      // An explicit `"model": null` on an item means "the runner's own default", overriding defaults.model.
      model: item.model !== undefined ? item.model : (d.model ?? null),
      maxAttempts: item.maxAttempts ?? d.maxAttempts ?? DEFAULTS.maxAttempts,
      timeouts: {
        launch: item.timeouts?.launch ?? timeouts.launch,
        stall: item.timeouts?.stall ?? timeouts.stall,
        verify: item.timeouts?.verify ?? timeouts.verify,
        ...(timeouts.landing !== undefined ? { landing: item.timeouts?.landing ?? timeouts.landing } : {}),
      },
      ...(sandbox === "bwrap" ? { sandbox } : {}),
      ...(raw.forge ? { reactions: reactionsOf(d.landing ?? DEFAULTS.landing, raw.reactions, item.reactions) } : {}),
      // An item's own budget replaces the default whole (`{}`: none for this item).
      ...limitOf(item.budget !== undefined ? item.budget : d.budget),
    };
  });
  const runners: Record<string, CommandRunner> = {};
  const runnerEnv: Record<string, string[]> = {};
  for (const [name, r] of Object.entries(raw.runners ?? {})) {
    runners[name] = { command: r.command };
    if (r.environment) runnerEnv[name] = r.environment;
  }
  const environment: NormEnvironment = {
    policy: raw.environment?.policy ?? DEFAULT_ENVIRONMENT.policy,
    pass: raw.environment?.pass ?? [],
    secrets: raw.environment?.secrets ?? [],
    runners: runnerEnv,
  };
  const f = raw.forge;
  const forge: NormForge | undefined = f && {
    provider: f.provider,
    repo: f.repo,
    apiUrl: (f.apiUrl ?? KIND[f.provider].apiUrl).replace(/\/+$/, ""),
    remote: f.remote ?? FORGE_DEFAULTS.remote,
    tokenEnv: f.tokenEnv ?? KIND[f.provider].tokenEnv,
    authorizedUsers: f.authorizedUsers ?? [],
    authorizeWriters: f.authorizeWriters ?? false,
    pollInterval: f.pollInterval ?? parseDuration(FORGE_DEFAULTS.pollInterval),
  };
  return {
    name: raw.name,
    landing: d.landing ?? DEFAULTS.landing,
    base: raw.workspace?.base ?? DEFAULTS.base,
    target: raw.workspace?.target ?? defaultTarget(raw.name),
    tmux: raw.sessions?.tmux ?? false,
    keepCheckoutOnClose: raw.workspace?.keepCheckoutOnClose ?? false,
    requireStartCommand: raw.control?.requireStartCommand ?? false,
    runners,
    ...(raw.protect?.length ? { protect: [...new Set(raw.protect)] } : {}),
    ...(forge ? { forge } : {}),
    ...loopSpendOf(raw),
    notify: raw.notify ? { command: raw.notify.command, timeout: raw.notify.timeout ?? parseDuration(DEFAULTS.notifyTimeout) } : null,
    environment,
    items,
  };
}

/**
 * An item's reactions (docs/forge.md#reactions): its own, else the loop's, else the defaults. Every
 * default is "retry" but failed checks with landing "pr", which are "block": loop does not wait on
 * a PR it does not merge (it passes the item with its draft open), so nothing would see them.
 */
export function reactionsOf(landing: Landing, loop: Partial<NormReactions> | undefined, item: Partial<NormReactions> | undefined): NormReactions {
  const defaults: NormReactions = { checksFailed: landing === "merge" ? "retry" : "block", changesRequested: "retry", conflict: "retry" };
  return {
    checksFailed: item?.checksFailed ?? loop?.checksFailed ?? defaults.checksFailed,
    changesRequested: item?.changesRequested ?? loop?.changesRequested ?? defaults.changesRequested,
    conflict: item?.conflict ?? loop?.conflict ?? defaults.conflict,
  };
}

/** Dollars as the log holds them: whole millionths (canonical JSON has no fractions). */
export function toMicroUsd(usd: number): number {
  return Math.round(usd * 1e6);
}

/** `{ budget }` for a raw budget that sets something, else nothing (the definition's hash is as before). */
function limitOf(b: { tokens?: number; usd?: number } | undefined): { budget?: Limit } {
  const l = limit(b);
  return l ? { budget: l } : {};
}

function limit(b: { tokens?: number; usd?: number } | undefined): Limit | null {
  if (!b) return null;
  const l: Limit = {
    ...(b.tokens !== undefined ? { tokens: b.tokens } : {}),
    ...(b.usd !== undefined ? { microUsd: toMicroUsd(b.usd) } : {}),
  };
  return Object.keys(l).length ? l : null;
}

/** The loop's budget, prices and guards, each only when loop.json sets it. */
function loopSpendOf(raw: RawDefinition): Pick<NormDefinition, "budget" | "prices" | "guards"> {
  const out: Pick<NormDefinition, "budget" | "prices" | "guards"> = {};
  if (raw.budget) {
    const total = limit(raw.budget);
    const daily = limit(raw.budget.daily);
    if (total || daily) out.budget = { ...(total ?? {}), ...(daily ? { daily } : {}) };
  }
  if (raw.prices && Object.keys(raw.prices).length) {
    out.prices = {};
    for (const [model, p] of Object.entries(raw.prices))
      out.prices[model] = {
        input: toMicroUsd(p.input),
        output: toMicroUsd(p.output),
        ...(p.cacheRead !== undefined ? { cacheRead: toMicroUsd(p.cacheRead) } : {}),
        ...(p.cacheWrite !== undefined ? { cacheWrite: toMicroUsd(p.cacheWrite) } : {}),
      };
  }
  const guards: Guards = { noProgress: raw.guards?.noProgress ?? true, identicalFailure: raw.guards?.identicalFailure ?? true };
  if (!guards.noProgress || !guards.identicalFailure) out.guards = guards;
  return out;
}

/** Identity of a normalized definition: `loop run` re-imports loop.json only when this changes (notify is not imported). */
export function definitionHash(def: NormDefinition): string {
  return sha256Hex(canonicalJson({ ...def, notify: undefined, environment: undefined }));
}

/**
 * What a `definition_imported` event records of a definition: its name, items and settings. The
 * `notify` command is left out, as it is of the hash: it says how to reach a person, not what the
 * loop does, so changing it re-imports nothing.
 */
export function importedDefinition(def: NormDefinition, revision: number) {
  const { items, name, notify: _notify, environment: _environment, ...settings } = def;
  return { revision, hash: definitionHash(def), name, settings, items };
}

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
