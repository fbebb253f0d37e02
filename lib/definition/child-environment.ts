// The environment every process loop starts begins with (an agent, its verify, workspace.setup, a
// planner, notify, the chained step): a policy, not an inheritance (docs/runners.md#the-environment).
// Pure: plain data in (loop's own environment, the policy), plain data out (the child's environment).
// Loop's own secrets (the forge token, GitHub's and GitLab's token variables, LOOP_ALLOW_AUTO_MERGE,
// what loop.json's `environment.secrets` names) and loop's model keys (which only a session's gateway
// holds) never pass, whatever the policy; under "clean" only what is declared passes, with PATH,
// HOME, locale, TMPDIR. A child given its working directory gets PWD naming it, and no OLDPWD.
// An item's setup, agent and verify get their checkout's own environment on top (item-environment.ts).
import { type CheckoutPlace, itemEnvironment } from "./item-environment.ts";

/** `environment.policy`: everything but loop's secrets (the default), or only what is declared. */
type EnvPolicy = "inherit" | "clean";

/** loop.json's `environment` section, normalized (docs/loop-json.md#environment). */
export interface NormEnvironment {
  policy: EnvPolicy;
  /** Names (or `*` patterns) every agent, verify command and planner gets under "clean". */
  pass: string[];
  /** Names (or patterns) that are loop's own, added to the built-in ones: never passed to anything loop starts. */
  secrets: string[];
  /** Names (or patterns) each command runner declares it needs (`runners.<name>.environment`). */
  runners: Record<string, string[]>;
}

export const DEFAULT_ENVIRONMENT: NormEnvironment = { policy: "inherit", pass: [], secrets: [], runners: {} };

/** Loop's own whatever loop.json says: GitHub's and GitLab's token variables and the auto-merge lock. */
export const BUILTIN_SECRETS: readonly string[] = ["GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "LOOP_ALLOW_AUTO_MERGE"];

/**
 * Loop's model keys: held by a session's gateway (lib/supervisor/session-gateway.ts), which swaps the
 * agent's stand-in for them; no process loop starts gets them in its environment.
 */
export const MODEL_KEYS: readonly string[] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"];

/** What every child gets under "clean": where programs are, the home, the locale, the temporary folder. */
const CLEAN_BASE: readonly string[] = ["PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TMPDIR"];

/** What every agent CLI may need besides its own: who it runs as, its terminal, proxies and CA bundles, config homes, git identity. */
const AGENT_COMMON: readonly string[] = [
  "USER",
  "LOGNAME",
  "SHELL",
  "TERM",
  "TZ",
  "XDG_CONFIG_HOME",
  "XDG_CACHE_HOME",
  "XDG_DATA_HOME",
  "XDG_STATE_HOME",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "ALL_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "all_proxy",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "NODE_EXTRA_CA_CERTS",
  "REQUESTS_CA_BUNDLE",
  "GIT_AUTHOR_NAME",
  "GIT_AUTHOR_EMAIL",
  "GIT_COMMITTER_NAME",
  "GIT_COMMITTER_EMAIL",
  "EMAIL",
];

/**
 * The variables each preset's CLI documents (checked against their docs: Claude Code's environment
 * variable reference, Codex's config-file/environment-variables page, aider's options and API-key
 * pages): provider keys, endpoints, cloud providers' credentials, config homes.
 */
const PRESET_ENVIRONMENT: Readonly<Record<"claude" | "codex" | "aider" | "gemini" | "opencode", readonly string[]>> = {
  // ANTHROPIC_API_KEY / _AUTH_TOKEN / _BASE_URL / _MODEL…, CLAUDE_CONFIG_DIR and CLAUDE_CODE_*
  // (Bedrock, Vertex, Foundry switches, CLAUDE_CODE_OAUTH_TOKEN), Bedrock's AWS_*, Vertex's
  // CLOUD_ML_REGION, VERTEX_REGION_* and Google credentials, IS_SANDBOX (root in a sandbox).
  claude: [
    ...AGENT_COMMON,
    "ANTHROPIC_*",
    "CLAUDE_*",
    "DISABLE_*",
    "API_TIMEOUT_MS",
    "MAX_THINKING_TOKENS",
    "MCP_*",
    "AWS_*",
    "CLOUD_ML_REGION",
    "VERTEX_REGION_*",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "IS_SANDBOX",
  ],
  // CODEX_HOME, CODEX_SQLITE_HOME, CODEX_API_KEY, CODEX_ACCESS_TOKEN, OPENAI_API_KEY / _BASE_URL,
  // OPENAI_FEDERATION_RULE_ID / _IDENTITY_TOKEN_FILE. A provider's own key named with env_key in
  // config.toml is the operator's to pass (environment.pass).
  codex: [...AGENT_COMMON, "CODEX_*", "OPENAI_*"],
  // AIDER_* (every option), and the providers' keys and endpoints litellm reads (OPENAI_API_KEY,
  // ANTHROPIC_API_KEY, DEEPSEEK_API_KEY, OPENROUTER_API_KEY, GEMINI_API_KEY, …, OLLAMA_API_BASE),
  // Azure's, Vertex's (VERTEXAI_PROJECT, VERTEXAI_LOCATION, Google credentials), Bedrock's AWS_*.
  // GEMINI_* (GEMINI_API_KEY, GEMINI_CLI_HOME, GEMINI_MODEL, …), GOOGLE_GEMINI_BASE_URL, and Vertex's
  // GOOGLE_API_KEY, GOOGLE_CLOUD_PROJECT / _LOCATION, GOOGLE_GENAI_USE_VERTEXAI, Google credentials.
  gemini: [
    ...AGENT_COMMON,
    "GEMINI_*",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_API_KEY",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_APPLICATION_CREDENTIALS",
  ],
  // OPENCODE_* (OPENCODE_CONFIG, _CONFIG_CONTENT, _DISABLE_*, …), and the providers it reaches through
  // the gateway: ANTHROPIC_*, OPENAI_*.
  opencode: [...AGENT_COMMON, "OPENCODE_*", "ANTHROPIC_*", "OPENAI_*"],
  aider: [
    ...AGENT_COMMON,
    "AIDER_*",
    "*_API_KEY",
    "*_API_BASE",
    "*_API_VERSION",
    "OPENAI_*",
    "ANTHROPIC_*",
    "AZURE_*",
    "VERTEXAI_*",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_*",
    "OLLAMA_*",
  ],
};

/** A variable name, or a pattern with `*` standing for any run of name characters. */
export const ENV_PATTERN = /^[A-Za-z_*][A-Za-z0-9_*]*$/;

/** Does `name` match `pattern` (`*`: any run of characters, possibly none)? */
export function matchesName(pattern: string, name: string): boolean {
  if (!pattern.includes("*")) return pattern === name;
  const parts = pattern.split("*");
  if (!name.startsWith(parts[0]!)) return false;
  let at = parts[0]!.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = name.indexOf(parts[i]!, at);
    if (found < 0) return false;
    at = found + parts[i]!.length;
  }
  const last = parts[parts.length - 1]!;
  return name.length - at >= last.length && name.endsWith(last);
}

const matchesAny = (patterns: readonly string[], name: string) => patterns.some((p) => matchesName(p, name));

/** How one child's environment is made from loop's own: the policy, what it declares, what never passes. */
export interface EnvRule {
  policy: EnvPolicy;
  /** What passes under "clean" (besides CLEAN_BASE). */
  keep: string[];
  /** What never passes. */
  drop: string[];
  /** An item's setup, agent or verify: its checkout's place (item-environment.ts): nothing pointing into another checkout, the checkout's own tools first. */
  place?: CheckoutPlace;
}

/**
 * The child's environment: `parent` filtered by `rule` (drop wins over keep). With `cwd`, PWD names
 * it and OLDPWD is gone: a child that trusts $PWD over its real working directory (opencode does)
 * must not work in the directory `loop run` was started from.
 */
export function childEnvironment(parent: Record<string, string | undefined>, rule: EnvRule, o: { cwd?: string } = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined || matchesAny(rule.drop, name)) continue;
    if (rule.policy === "clean" && !matchesAny(CLEAN_BASE, name) && !matchesAny(rule.keep, name)) continue;
    out[name] = value;
  }
  const own = rule.place ? itemEnvironment(out, rule.place).env : out;
  return o.cwd === undefined ? own : atDirectory(own, o.cwd);
}

/** `env` for a process started in `cwd`: PWD names it, OLDPWD is gone. */
export function atDirectory(env: Record<string, string>, cwd: string): Record<string, string> {
  const { OLDPWD: _, ...rest } = env;
  return { ...rest, PWD: cwd };
}

/** Loop's own secrets for a definition: the built-in ones, the forge's and the tracker's token variables, and `environment.secrets`. */
export function loopSecrets(def: DefLike): string[] {
  return [
    ...new Set([...BUILTIN_SECRETS, ...(def.forge ? [def.forge.tokenEnv] : []), ...(def.tracker ? [def.tracker.tokenEnv] : []), ...def.environment.secrets]),
  ];
}

/** What a runner declares it needs: a preset's documented variables, a command runner's `environment`, the demo nothing. */
export function runnerEnvironment(runner: string, env: NormEnvironment): string[] {
  if (Object.hasOwn(PRESET_ENVIRONMENT, runner)) return [...PRESET_ENVIRONMENT[runner as keyof typeof PRESET_ENVIRONMENT]];
  return Object.hasOwn(env.runners, runner) ? [...env.runners[runner]!] : [];
}

type DefLike = { forge?: { tokenEnv: string }; tracker?: { tokenEnv: string }; environment: NormEnvironment };

/** What a session's gateway is handed of loop's environment (privately: session-wrapper.ts WrapperPrivate): the model keys and their upstreams. */
export function gatewayUpstream(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of [...MODEL_KEYS, "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"]) if (env[k]) out[k] = env[k]!;
  return out;
}

/**
 * Every name no process loop starts may hold, but the one that must (loop's own push holds the forge
 * token through its credential helper; a session's gateway holds the model keys): loop's secrets and
 * its model keys. Also what `loop run` takes out of its own process environment, which whatever it
 * starts without an environment of its own (its git) inherits (lib/step/own-environment.ts).
 */
export function loopKeys(def: DefLike): string[] {
  return [...loopSecrets(def), ...MODEL_KEYS];
}

/**
 * The rule for an agent session of `runner`: never loop's keys. Behind its gateway the
 * agent's key variables hold a stand-in the wrapper sets (a CLI signed in with an account uses its own
 * credential), so a runner that declares `ANTHROPIC_*` still never gets loop's key.
 */
export function agentRule(def: DefLike, runner: string): EnvRule {
  return { policy: def.environment.policy, keep: [...def.environment.pass, ...runnerEnvironment(runner, def.environment)], drop: loopKeys(def) };
}

/**
 * The rule for `loop plan`'s planner: an agent's, but its model keys pass. It runs at the operator's
 * terminal, on what the operator asked for, behind no gateway (docs/cli/loop-plan.md): it calls its
 * model with loop's key itself.
 */
export function plannerRule(def: DefLike, runner: string): EnvRule {
  const rule = agentRule(def, runner);
  return { ...rule, drop: loopSecrets(def) };
}

/**
 * The rule for a verify command (and workspace.setup): what every child may get, none of a runner's,
 * never loop's keys: they run the code the agent wrote, which must not hold what the agent does not.
 * (`o` is what callers said before every session had a gateway; the keys are dropped either way.)
 */
export function verifyRule(def: DefLike, _o: { behindGateway?: boolean } = {}): EnvRule {
  return { policy: def.environment.policy, keep: [...def.environment.pass], drop: loopKeys(def) };
}

/**
 * The rule for the operator's own commands loop runs (loop.json's `notify`) and for the chained step
 * (with `keepModelKeys`: the next step's gateways need them): everything but loop's keys, whatever the
 * policy, which is the agents'.
 */
export function toolRule(def: DefLike, o: { keepModelKeys?: boolean } = {}): EnvRule {
  return { policy: "inherit", keep: [], drop: o.keepModelKeys ? loopSecrets(def) : loopKeys(def) };
}
