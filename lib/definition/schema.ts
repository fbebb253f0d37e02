// Pass 1 of validating loop.json (lib/definition/normalize.ts): the raw shape as valibot schemas
// (strict objects, types, ranges, formats), and the keys each object accepts.
import * as v from "valibot";
import { parseDuration } from "./duration.ts";
import { formatJsonPath } from "./json-strict.ts";
import { isItemId } from "./refs.ts";
import { protectPatternProblem } from "./protect.ts";
import { ENV_PATTERN } from "./child-environment.ts";
import { REACTION_DECISIONS } from "../log/vocabulary.ts";
import { MAX_NOTIFY_TIMEOUT_MS, RUNNER_PLACEHOLDERS } from "./normalized.ts";
import { CHANNEL_KINDS, channelUrlProblem, MAX_CHANNEL_TIMEOUT_MS, MAX_CHANNELS, NOTIFY_EVENTS } from "./channels.ts";
import { apiUrlProblem, FORGE_KINDS, gitUrlProblem, isForgeLogin } from "./forge-kinds.ts";
import { LINEAR_TOKEN_KINDS, TRACKER_KINDS } from "./tracker-kinds.ts";
import { MAX_NETWORK_ENTRIES, networkEntryProblem } from "./network.ts";
import { closest, didYouMean } from "../shared/suggest.ts";
import { branchNameProblem } from "./branches.ts";

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
      ? `unknown key${didYouMean(String(issue.path?.at(-1)?.key ?? ""), Object.keys(all))} (allowed: ${allowed})`
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

const Name = v.pipe(v.string("must be a string"), v.check(isItemId, `must be ${ID_RULE} (it is used in branch names)`));
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
  setup: v.optional(Duration),
});

const Verify = v.union([NonBlank, v.literal(false)], "must be a command string, or false to accept an agent exit 0 with a change on its branch");
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

// Brace text other than loop's placeholders is left as it is (`curl -w '%{http_code}'`, `${HOME}`, a
// jq program): only a lowercase name a typo away from a placeholder (`{promt}`, `{modle}`) is refused,
// since it would reach the agent as those very characters.
const CommandArg = v.pipe(
  v.string("must be a string"),
  v.check((s) => s !== "", "must not be empty"),
  problem<string>((arg) => {
    const typos = [...arg.matchAll(/\{([a-z0-9_]+)\}/g)]
      .map((m) => ({ name: m[1]!, meant: RUNNER_PLACEHOLDERS.includes(m[1]!) ? null : closest(m[1]!, RUNNER_PLACEHOLDERS) }))
      .filter((t) => t.meant !== null);
    if (typos.length === 0) return undefined;
    const known = RUNNER_PLACEHOLDERS.map((p) => `{${p}}`).join(", ");
    return `${typos.map((t) => `{${t.name}} is not a placeholder (did you mean {${t.meant}}?)`).join("; ")} (known: ${known}; other brace text is left as it is)`;
  }),
);
/** "open", "none", or a list of "host:port" entries (docs/loop-json.md#network). */
const Network = v.union(
  [
    v.picklist(["open", "none"]),
    v.pipe(
      v.array(v.pipe(v.string("must be a string"), problem<string>(networkEntryProblem)), 'must be an array of "host:port" entries'),
      v.maxLength(MAX_NETWORK_ENTRIES, `must have at most ${MAX_NETWORK_ENTRIES} entries`),
    ),
  ],
  'must be "open", "none" or an array of "host:port" entries',
);
const SandboxKind = v.picklist(["bwrap", "none"], 'must be "bwrap" (run the agent and its verify under bubblewrap) or "none"');
/** Environment variable names, or patterns with `*` (docs/loop-json.md#environment). */
const EnvNames = v.array(
  v.pipe(
    v.string("must be a string"),
    v.check((s) => ENV_PATTERN.test(s), "must be an environment variable name, or a pattern with * (like AWS_*)"),
  ),
  "must be an array of variable names",
);
const RawRunner = section({
  command: v.pipe(v.array(CommandArg, "must be an array of strings"), v.minLength(1, "must name a program to run")),
  sandbox: v.optional(SandboxKind),
  network: v.optional(Network),
  environment: v.optional(EnvNames),
});
const RawEnvironment = section({
  policy: v.optional(v.picklist(["inherit", "clean"], 'must be "inherit" or "clean"')),
  pass: v.optional(EnvNames),
  secrets: v.optional(EnvNames),
});
const ProtectPattern = v.pipe(v.string("must be a string (a glob)"), problem<string>(protectPatternProblem));

/** A variable of loop's environment that holds a secret (a webhook's address, a signing key): never the value itself. */
const SecretVar = v.pipe(
  v.string("must be a string"),
  v.check((s) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s), "must be an environment variable name (the value stays out of loop.json)"),
);
const RawChannelSection = section({
  kind: v.picklist(CHANNEL_KINDS, `must be one of ${CHANNEL_KINDS.map((k) => `"${k}"`).join(", ")}`),
  url: v.optional(v.pipe(v.string("must be a string"), problem<string>(channelUrlProblem))),
  urlFrom: v.optional(SecretVar),
  secretFrom: v.optional(SecretVar),
  events: v.optional(
    v.pipe(
      v.array(v.picklist(NOTIFY_EVENTS, `must be one of ${NOTIFY_EVENTS.map((k) => `"${k}"`).join(", ")}`), "must be an array of event names"),
      v.minLength(1, "must name at least one event (leave it out for all)"),
    ),
  ),
  timeout: v.optional(
    v.pipe(
      Duration,
      v.check((ms) => ms <= MAX_CHANNEL_TIMEOUT_MS, "must be at most 30s (a send never holds a step longer)"),
    ),
  ),
});
const RawChannel = v.pipe(
  RawChannelSection,
  v.check((c) => (c.url === undefined) !== (c.urlFrom === undefined), 'must have one of "url" (the address) or "urlFrom" (the variable that holds it)'),
  v.check((c) => c.secretFrom === undefined || c.kind === "webhook", '"secretFrom" signs a webhook\'s body: slack and ntfy take none'),
);
const RawNotifySection = section({
  command: v.optional(
    v.pipe(
      v.array(
        v.pipe(
          v.string("must be a string"),
          v.check((s) => s !== "", "must not be empty"),
        ),
        "must be an array of strings",
      ),
      v.minLength(1, "must name a program to run"),
    ),
  ),
  timeout: v.optional(
    v.pipe(
      Duration,
      v.check((ms) => ms <= MAX_NOTIFY_TIMEOUT_MS, "must be at most 5m (the step waits for it)"),
    ),
  ),
  channels: v.optional(v.pipe(v.array(RawChannel, "must be an array of channels"), v.maxLength(MAX_CHANNELS, `must hold at most ${MAX_CHANNELS} channels`))),
  pageUrl: v.optional(
    v.pipe(
      v.string("must be a string"),
      v.check((s) => /^https?:\/\/[^\s]+$/.test(s) && URL.canParse(s), "must be an http or https address (the loop's page, as people open it)"),
    ),
  ),
});
const RawNotify = v.pipe(
  RawNotifySection,
  v.check((n) => n.command !== undefined || (n.channels?.length ?? 0) > 0, 'must have a "command" or at least one of "channels"'),
);

/** US dollars: a positive number, at most a billion, kept to the millionth. */
const Usd = v.pipe(
  v.number("must be a number of US dollars"),
  problem<number>((n) =>
    !(Number.isFinite(n) && n > 0 && n <= 1e9)
      ? "must be a number of US dollars above 0 (at most 1000000000)"
      : Math.round(n * 1e6) < 1
        ? "must be at least 0.000001 (a millionth of a dollar)"
        : undefined,
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
const ModelName = v.pipe(
  v.string("must be a string"),
  v.check((s) => s.trim() !== "", "a model name must not be empty"),
);
const RawGuards = section({ noProgress: v.optional(Bool), identicalFailure: v.optional(Bool) });

export const RawDefaults = section({
  runner: v.optional(v.string("must be a string")),
  model: v.optional(Model),
  verify: v.optional(Verify),
  maxAttempts: v.optional(MaxAttempts),
  timeouts: v.optional(RawTimeouts),
  landing: v.optional(v.picklist(["none", "merge", "pr"], 'must be "none", "merge" or "pr"')),
  sandbox: v.optional(SandboxKind),
  network: v.optional(Network),
  verifyNetwork: v.optional(Network),
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

const RawControl = section({ requireStartCommand: v.optional(Bool), review: v.optional(Bool) });
const RawSessions = section({ tmux: v.optional(Bool) });
const RawWorkspace = section({
  keepCheckoutOnClose: v.optional(Bool),
  base: v.optional(Branch),
  target: v.optional(Branch),
  setup: v.optional(NonBlank),
  setupNetwork: v.optional(Network),
  stacked: v.optional(Bool),
  baseVerify: v.optional(Bool),
  setupKey: v.optional(
    v.pipe(
      v.array(
        v.pipe(
          NonBlank,
          v.check((p) => !p.startsWith("/") && !p.split("/").includes(".."), "must be a path inside the repository (no leading /, no ..)"),
        ),
        "must be a list of paths",
      ),
      v.minLength(1, "must name at least one path"),
    ),
  ),
});

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
  remote: v.optional(
    v.pipe(
      v.string("must be a string"),
      v.check((s) => /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(s), "must be a git remote name"),
    ),
  ),
  gitUrl: v.optional(v.pipe(v.string("must be a string"), problem<string>(gitUrlProblem))),
  tokenEnv: v.optional(
    v.pipe(
      v.string("must be a string"),
      v.check((s) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s), "must be the name of an environment variable (the token itself never goes in loop.json)"),
    ),
  ),
  authorizedUsers: v.optional(
    v.array(
      v.pipe(
        v.string("must be a string"),
        v.check((s) => FORGE_KINDS.some((k) => isForgeLogin(k, s)), "must be a forge login"),
      ),
      "must be an array of logins",
    ),
  ),
  authorizeWriters: v.optional(Bool),
  pollInterval: v.optional(Duration),
});

// A name as the tracker shows it (a workflow state, a label): one line, no control characters.
const TrackerName = v.pipe(
  v.string("must be a string"),
  v.check((s) => s.trim() !== "" && s.length <= 100 && !/[\x00-\x1f\x7f]/.test(s), "must be a name of one line, at most 100 characters"),
);
const RawMoveTo = section({ started: v.optional(TrackerName), completed: v.optional(TrackerName), reset: v.optional(TrackerName) });
const RawTracker = section({
  provider: v.picklist(TRACKER_KINDS, 'must be "github", "gitlab", "linear", "jira" or "none"'),
  apiUrl: v.optional(v.pipe(v.string("must be a string"), problem<string>(apiUrlProblem))),
  tokenEnv: v.optional(
    v.pipe(
      v.string("must be a string"),
      v.check((s) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s), "must be the name of an environment variable (the token itself never goes in loop.json)"),
    ),
  ),
  tokenKind: v.optional(v.picklist(LINEAR_TOKEN_KINDS, 'must be "personal" or "oauth"')),
  email: v.optional(
    v.pipe(
      v.string("must be a string"),
      v.check((s) => /^[^\s@]{1,64}@[^\s@]{1,190}$/.test(s), "must be an email address"),
    ),
  ),
  team: v.optional(v.string("must be a string")),
  project: v.optional(v.string("must be a string")),
  states: v.optional(v.array(TrackerName, "must be an array of state names")),
  labels: v.optional(v.array(TrackerName, "must be an array of label names")),
  jql: v.optional(
    v.pipe(
      v.string("must be a string"),
      v.check((s) => s.trim() !== "" && s.length <= 2000 && !/[\x00-\x1f\x7f]/.test(s), "must be one line of JQL, at most 2000 characters"),
    ),
  ),
  moveTo: v.optional(RawMoveTo),
  authorizedUsers: v.optional(v.array(v.string("must be a string"), "must be an array of users")),
  pollInterval: v.optional(Duration),
  query: v.optional(v.boolean("must be true or false")),
});

export const RawDefinition = section({
  $schema: v.optional(v.string('"$schema" must be a string')),
  name: Name,
  defaults: v.optional(RawDefaults),
  runners: v.optional(v.record(RunnerName, RawRunner, "must be an object of runner name -> { command }")),
  control: v.optional(RawControl),
  sessions: v.optional(RawSessions),
  workspace: v.optional(RawWorkspace),
  forge: v.optional(RawForge),
  tracker: v.optional(RawTracker),
  notify: v.optional(RawNotify),
  protect: v.optional(v.array(ProtectPattern, "must be an array of globs")),
  environment: v.optional(RawEnvironment),
  reactions: v.optional(RawReactions),
  budget: v.optional(RawLoopBudget),
  prices: v.optional(v.record(ModelName, RawPrice, "must be an object of model name -> { input, output }")),
  guards: v.optional(RawGuards),
  items: v.array(RawItem, "must be an array of items"),
});
export type RawDefinition = v.InferOutput<typeof RawDefinition>;

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
  tracker: RawTracker.keys,
  moveTo: RawMoveTo.keys,
  notify: RawNotifySection.keys,
  channel: RawChannelSection.keys,
  environment: RawEnvironment.keys,
  reactions: RawReactions.keys,
  budget: RawBudget.keys,
  loopBudget: RawLoopBudget.keys,
  daily: RawBudget.keys,
  price: RawPrice.keys,
  guards: RawGuards.keys,
};

export function formatPath(path: readonly { key: unknown }[] | undefined): string {
  return formatJsonPath((path ?? []).map((p) => p.key));
}
