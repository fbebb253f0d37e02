// The normalized definition (docs/loop-json.md): what loop.json means once validated, the types every
// reader of a definition uses, and the constants they share. Types and constants only.
import { RESERVED_RUNNER_NAMES } from "./runners.ts";
import type { NormEnvironment } from "./child-environment.ts";
import type { ReactionDecision, ReactionSignal, TrackerMove } from "../log/vocabulary.ts";
import type { ForgeKind } from "./forge-kinds.ts";
import type { KeyedTracker } from "./tracker-kinds.ts";
import type { NetworkPolicy } from "./network.ts";
import type { ChannelKind, NotifyEvent } from "./channels.ts";

export interface Timeouts {
  launch: number;
  stall: number;
  verify: number;
  /** How long landing through a forge may wait for a merge; present only in a loop with a forge. */
  landing?: number;
  /** How long workspace.setup may run in a new worktree; present only when loop.json has one. */
  setup?: number;
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
  /**
   * What the item's session may reach besides the model API (docs/loop-json.md#network): the
   * runner's own `network`, else `defaults.network`. Absent for "open", so a definition without
   * one (and its hash) is as before.
   */
  network?: NetworkPolicy;
  /** What its verify may reach: `defaults.verifyNetwork`, else "none" in the sandbox; absent for "open". */
  verifyNetwork?: NetworkPolicy;
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
const DEFAULT_GUARDS: Readonly<Guards> = { noProgress: true, identicalFailure: true };
/** The guards in force: loop.json's, or both on. `guards` stays optional on the definition so that one which says nothing keeps its hash. */
export function guardsOf(def: { guards?: Guards }): Readonly<Guards> {
  return def.guards ?? DEFAULT_GUARDS;
}
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
  /** Where loop pushes and fetches (docs/loop-json.md#forge); absent: the forge's own https URL of `repo`, so a definition without it hashes as before. */
  gitUrl?: string;
  tokenEnv: string;
  authorizedUsers: string[];
  authorizeWriters: boolean;
  /** Milliseconds between two reads of the repository's comments. */
  pollInterval: number;
}
/**
 * loop.json's `tracker` section for Linear or Jira, normalized (docs/trackers.md). A tracker of
 * "github" or "gitlab" is the forge itself and "none" is loop.json alone: neither is kept here, so a
 * definition that names its forge's own tracker (or none at all) hashes as before.
 */
export interface NormTracker {
  provider: KeyedTracker;
  /** Linear: the GraphQL endpoint; Jira: the site (https://<site>.atlassian.net). */
  apiUrl: string;
  tokenEnv: string;
  /** Linear: a personal API key (bare) or an OAuth token (Bearer). Jira: always "basic" (email:token). */
  tokenKind: "personal" | "oauth" | "basic";
  /** Jira: the account email the token belongs to (Basic auth); absent for Linear. */
  email?: string;
  /** The Linear team's key, or the Jira project's key: every ref is `<provider>:<key>-<number>`. */
  key: string;
  /** The workflow states (by name) an issue must be in to be taken; empty: any not completed or canceled. */
  states: string[];
  /** Labels an issue must carry (all of them) to be taken. */
  labels: string[];
  /** Jira: more JQL, ANDed to the project and states (loop.json's `jql`); absent for Linear. */
  jql?: string;
  /** Where loop moves an issue (state names): when its attempt launches, when it lands, when it is reset. */
  moveTo: Partial<Record<TrackerMove, string>>;
  /** Who may give loop orders in comments: Linear user ids or emails, Jira account ids. */
  authorizedUsers: string[];
  /** Milliseconds between two reads of the tracker's comments (and, with `query`, of its filter's issues). */
  pollInterval: number;
  /** Present (true) when a step re-reads the filter's issues and appends the new ones to loop.json (docs/trackers.md#live-query). */
  query?: true;
}
export type LandingMode = "none" | "merge" | "pr";
/** The command run when the loop needs a person (docs/operations.md#hearing-about-trouble). */
export interface NotifyDef {
  /** The operator's command, or null when only channels tell people. */
  command: string[] | null;
  /** Milliseconds it may run before its process group is killed. */
  timeout: number;
  channels: ChannelDef[];
  /** Where people open the loop's page (`loop serve` behind its address), linked from a channel's message; or null. */
  pageUrl: string | null;
}
/** One of `notify.channels` (docs/operations.md#notification-channels). */
export interface ChannelDef {
  /** `<kind>-<n>`, its place in the list from 1: how the log names it. */
  id: string;
  kind: ChannelKind;
  /** The address, or the variable of loop's environment that holds it. */
  url: string | null;
  urlFrom: string | null;
  /** The variable holding the key the body is signed with (webhook only). */
  secretFrom: string | null;
  events: NotifyEvent[];
  /** Milliseconds one send may take. */
  timeout: number;
}
export interface NormDefinition {
  name: string;
  landing: LandingMode;
  base: string;
  /** The branch landing "merge" merges into; `loop/<name>/landed` unless workspace.target says otherwise. */
  target: string;
  tmux: boolean;
  keepCheckoutOnClose: boolean;
  /**
   * workspace.setup: the command run in each new worktree before its agent starts
   * (docs/loop-json.md#workspace). Absent without one, so such a definition (and its hash) is as before.
   */
  setup?: string;
  /**
   * workspace.setupKey: the paths setup's products are made from (docs/loop-json.md#workspace); absent,
   * the manifests and lockfiles at the root (lib/repo/products.ts setupKey).
   */
  setupKey?: string[];
  /**
   * workspace.setupNetwork, what setup reaches in the sandbox: "open" (the network as it is), "none",
   * or a list; absent, the registries (lib/definition/network.ts setupAllowList).
   */
  setupNetwork?: "open" | NetworkPolicy;
  /**
   * workspace.stacked: each item builds on the one before it in loop.json (docs/loop-json.md#workspace).
   * Present only when true, so a definition without it (and its hash) is as before.
   */
  stacked?: true;
  /**
   * The default verify (`defaults.verify`), run once on the base tree before the first attempt and
   * again when it or `setup` changes (docs/loop-json.md#workspace, lib/step/base-verify.ts). Absent
   * without a default verify command or with `workspace.baseVerify: false`.
   */
  baseVerify?: string;
  requireStartCommand: boolean;
  /**
   * control.review: nothing launches until a person started the loop after its review, and a change
   * that widens what it may do waits for a review again (docs/loop-json.md#control). Present only
   * when true, so a definition without it (and its hash) is as before.
   */
  review?: true;
  /** Command runners from loop.json; none is named like a built-in runner. */
  runners: Record<string, CommandRunner>;
  /**
   * loop.json's `protect` globs (lib/definition/protect.ts), added to the built-in ones at check
   * time. Absent when loop.json names none, so such a definition (and its hash) is as before.
   */
  protect?: string[];
  /** Absent without a `forge` section (and then nothing forge-related runs). */
  forge?: NormForge;
  /** Linear or Jira (docs/trackers.md); absent when the forge is the tracker, or loop.json alone is. */
  tracker?: NormTracker;
  /** Present only when loop.json's tracker is "none": the forge's issues and comments are not read. */
  trackerNone?: true;
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
   * What agents, verify commands and planners get of loop's environment (lib/definition/child-environment.ts).
   * Like notify, this machine's plumbing: not part of what the log records of the definition.
   */
  environment: NormEnvironment;
  items: NormItem[];
}

/** The built-in runners (lib/definition/runners.ts): always available, and names a `runners` entry cannot take. */
export const KNOWN_RUNNERS: readonly string[] = RESERVED_RUNNER_NAMES;
export const RUNNER_PLACEHOLDERS: readonly string[] = ["prompt", "handoff", "workdir", "model", "session_id"];

export const DEFAULTS = {
  runner: "demo",
  maxAttempts: 2,
  timeouts: { launch: "5m", stall: "60m", verify: "15m", landing: "30m", setup: "10m" },
  landing: "none",
  base: "main",
  notifyTimeout: "30s",
} as const;

/** The longest a notify command may run: the step holds its lease meanwhile. */
export const MAX_NOTIFY_TIMEOUT_MS = 5 * 60_000;
