// loop.json (docs/loop-json.md) validated into a NormDefinition. Validation runs in two passes so
// that one run reports every problem: the raw shape (lib/definition/schema.ts), then the rules
// across fields (lib/definition/semantics.ts). Nothing is normalized unless both passes found
// nothing. Also the definition's identity (its hash) and what definition_imported records. Pure.
import * as v from "valibot";
import { canonicalJson, sha256Hex } from "../log/canonical.ts";
import { parseDuration } from "./duration.ts";
import { DEFAULT_ENVIRONMENT, type NormEnvironment } from "./child-environment.ts";
import { DefinitionError, type DefinitionIssue } from "../shared/errors.ts";
import {
  type CommandRunner,
  DEFAULTS,
  type Guards,
  type LandingMode,
  type Limit,
  type NormDefinition,
  type NormForge,
  type NormItem,
  type NormReactions,
  type NormTracker,
  type Sandbox,
  type Timeouts,
} from "./normalized.ts";
import { FORGE_DEFAULTS, KIND } from "./forge-kinds.ts";
import { isKeyedTracker, TRACKER_KIND } from "./tracker-kinds.ts";
import { TRACKER_MOVES } from "../log/vocabulary.ts";
import { normalizeNetwork } from "./network.ts";
import { defaultTarget } from "./branches.ts";
import { DEFAULT_CHANNEL_TIMEOUT_MS, NOTIFY_EVENTS } from "./channels.ts";
import { formatPath, type RawDefaults, RawDefinition } from "./schema.ts";
import { checkMeaning, isObj, type Resolved } from "./semantics.ts";

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
export function byItem(issues: DefinitionIssue[]): DefinitionIssue[] {
  const rank = (i: DefinitionIssue) => Number(/^items\[(\d+)\]/.exec(i.path)?.[1] ?? -1);
  return issues
    .map((issue, n) => ({ issue, n }))
    .sort((a, b) => rank(a.issue) - rank(b.issue) || a.n - b.n)
    .map((x) => x.issue);
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
  // Likewise the setup's deadline, only in a loop with a workspace.setup.
  if (raw.workspace?.setup !== undefined) timeouts.setup = d.timeouts?.setup ?? parseDuration(DEFAULTS.timeouts.setup);
  const items = raw.items.map((item, i): NormItem => {
    const { id, ref } = resolved[i]!;
    const verify = item.verify ?? d.verify;
    if (id === null || verify === undefined) throw new Error(`internal: items[${i}] passed validation unresolved`);
    const runner = item.runner ?? d.runner ?? DEFAULTS.runner;
    // A command runner's own sandbox wins over the default; the presets take the default.
    const own = raw.runners && Object.hasOwn(raw.runners, runner) ? raw.runners[runner]!.sandbox : undefined;
    const sandbox: Sandbox = own ?? d.sandbox ?? "none";
    const ownNetwork = raw.runners && Object.hasOwn(raw.runners, runner) ? raw.runners[runner]!.network : undefined;
    const network = normalizeNetwork(ownNetwork ?? d.network);
    // Tests that need a registry say so: in the sandbox a verify reaches nothing unless told.
    const verifyNetwork = normalizeNetwork(d.verifyNetwork ?? (sandbox === "bwrap" ? "none" : "open"));
    return {
      id,
      ref,
      prompt: item.prompt,
      // workspace.stacked: each item depends on the one before it in loop.json (docs/loop-json.md#workspace).
      dependsOn: stackedOn(raw, i, resolved, item.dependsOn ?? []),
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
        ...(timeouts.setup !== undefined ? { setup: item.timeouts?.setup ?? timeouts.setup } : {}),
      },
      ...(sandbox === "bwrap" ? { sandbox } : {}),
      ...(raw.forge ? { reactions: reactionsOf(d.landing ?? DEFAULTS.landing, raw.reactions, item.reactions) } : {}),
      // An item's own budget replaces the default whole (`{}`: none for this item).
      ...limitOf(item.budget !== undefined ? item.budget : d.budget),
      ...(network !== undefined ? { network } : {}),
      ...(verifyNetwork !== undefined ? { verifyNetwork } : {}),
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
    ...(f.gitUrl ? { gitUrl: f.gitUrl } : {}),
    tokenEnv: f.tokenEnv ?? KIND[f.provider].tokenEnv,
    authorizedUsers: f.authorizedUsers ?? [],
    authorizeWriters: f.authorizeWriters ?? false,
    pollInterval: f.pollInterval ?? parseDuration(FORGE_DEFAULTS.pollInterval),
  };
  const t = raw.tracker;
  // semantics.ts has made sure a keyed tracker has its key (and Jira its site and email).
  const tracker: NormTracker | undefined =
    t && isKeyedTracker(t.provider)
      ? {
          provider: t.provider,
          apiUrl: (t.apiUrl ?? TRACKER_KIND[t.provider].apiUrl ?? "").replace(/\/+$/, ""),
          tokenEnv: t.tokenEnv ?? TRACKER_KIND[t.provider].tokenEnv,
          tokenKind: t.provider === "jira" ? "basic" : (t.tokenKind ?? "personal"),
          ...(t.provider === "jira" && t.email ? { email: t.email } : {}),
          key: (t.provider === "linear" ? t.team : t.project) ?? "",
          states: t.states ?? [],
          labels: t.labels ?? [],
          ...(t.provider === "jira" && t.jql ? { jql: t.jql } : {}),
          moveTo: Object.fromEntries(TRACKER_MOVES.flatMap((m) => (t.moveTo?.[m] !== undefined ? [[m, t.moveTo[m]]] : []))),
          authorizedUsers: t.authorizedUsers ?? [],
          pollInterval: t.pollInterval ?? parseDuration(FORGE_DEFAULTS.pollInterval),
          ...(t.query ? { query: true as const } : {}),
        }
      : undefined;
  return {
    name: raw.name,
    landing: d.landing ?? DEFAULTS.landing,
    base: raw.workspace?.base ?? DEFAULTS.base,
    target: raw.workspace?.target ?? defaultTarget(raw.name),
    tmux: raw.sessions?.tmux ?? false,
    keepCheckoutOnClose: raw.workspace?.keepCheckoutOnClose ?? false,
    ...(raw.workspace?.setup !== undefined ? { setup: raw.workspace.setup } : {}),
    ...(raw.workspace?.setupKey !== undefined ? { setupKey: [...raw.workspace.setupKey] } : {}),
    ...(raw.workspace?.setupNetwork !== undefined ? { setupNetwork: normalizeNetwork(raw.workspace.setupNetwork) ?? ("open" as const) } : {}),
    ...(raw.workspace?.stacked ? { stacked: true as const } : {}),
    // The default verify, checked once on the base (lib/step/base-verify.ts) unless turned off.
    ...(typeof d.verify === "string" && raw.workspace?.baseVerify !== false ? { baseVerify: d.verify } : {}),
    requireStartCommand: raw.control?.requireStartCommand ?? false,
    ...(raw.control?.review ? { review: true as const } : {}),
    runners,
    ...(raw.protect?.length ? { protect: [...new Set(raw.protect)] } : {}),
    ...(forge ? { forge } : {}),
    ...(tracker ? { tracker } : {}),
    ...(t?.provider === "none" ? { trackerNone: true as const } : {}),
    ...loopSpendOf(raw),
    notify: raw.notify
      ? {
          command: raw.notify.command ?? null,
          timeout: raw.notify.timeout ?? parseDuration(DEFAULTS.notifyTimeout),
          channels: (raw.notify.channels ?? []).map((c, i) => ({
            id: `${c.kind}-${i + 1}`,
            kind: c.kind,
            url: c.url ?? null,
            urlFrom: c.urlFrom ?? null,
            secretFrom: c.secretFrom ?? null,
            events: c.events ? [...new Set(c.events)] : [...NOTIFY_EVENTS],
            timeout: c.timeout ?? DEFAULT_CHANNEL_TIMEOUT_MS,
          })),
          pageUrl: raw.notify.pageUrl ?? null,
        }
      : null,
    environment,
    items,
  };
}

/**
 * An item's reactions (docs/forge.md#reactions): its own, else the loop's, else the defaults. Every
 * default is "retry" but failed checks with landing "pr", which are "block": loop does not wait on
 * a PR it does not merge (it passes the item with its draft open), so nothing would see them.
 */
export function reactionsOf(landing: LandingMode, loop: Partial<NormReactions> | undefined, item: Partial<NormReactions> | undefined): NormReactions {
  const defaults: NormReactions = { checksFailed: landing === "merge" ? "retry" : "block", changesRequested: "retry", conflict: "retry" };
  return {
    checksFailed: item?.checksFailed ?? loop?.checksFailed ?? defaults.checksFailed,
    changesRequested: item?.changesRequested ?? loop?.changesRequested ?? defaults.changesRequested,
    conflict: item?.conflict ?? loop?.conflict ?? defaults.conflict,
  };
}

function stackedOn(raw: RawDefinition, i: number, resolved: Resolved[], own: string[]): string[] {
  const previous = raw.workspace?.stacked && i > 0 ? resolved[i - 1]!.id : null;
  return previous !== null && !own.includes(previous) ? [previous, ...own] : own;
}

/** Dollars as the log holds them: whole millionths (canonical JSON has no fractions). */
function toMicroUsd(usd: number): number {
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
