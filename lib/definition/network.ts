// What a session (and its verify) may reach over the network (docs/loop-json.md#network): "open"
// (no limit, loop's behaviour before), "none", or an allow-list of "host:port" entries, a leading
// "*." matching any subdomain. The runner presets bring the hosts their CLI needs besides the model
// API (which goes through the session's gateway, never the list). Pure: parsing, the preset lists,
// and the one matching rule the gateway's proxy applies.

/** Normalized: "none", or the allowed entries (lower-case, sorted, unique). "open" is absent from a normalized item. */
export type NetworkPolicy = "none" | string[];

/** A name, a `*.` wildcard over one, an IPv4 address, or an [IPv6] address; then a port. */
const ENTRY = /^(\*\.)?((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?|\[[0-9a-f:.]+\]):(\d{1,5})$/;

/**
 * Where a sandboxed session's bridge serves its gateway (lib/supervisor/bridge.ts; the network
 * namespace is the session's own, nothing else listens there): a loopback address of its own, not
 * 127.0.0.1, so that NO_PROXY names it alone and a listed loopback host (a package mirror on
 * 127.0.0.1:4873) goes through the proxy the ordinary way. A network list cannot name it.
 */
export const BRIDGE_HOST = "127.0.0.2";

/** At most this many entries, so a list stays something a person reads. */
export const MAX_NETWORK_ENTRIES = 256;

/** Why an entry is refused, or undefined. */
export function networkEntryProblem(s: string): string | undefined {
  const m = ENTRY.exec(s.toLowerCase());
  if (!m) return `must be "host:port" ("registry.npmjs.org:443", "*.pypi.org:443", "127.0.0.1:8080"), not ${JSON.stringify(s.slice(0, 80))}`;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return `the port must be 1 to 65535, not ${m[3]}`;
  if (m[1] && /^[\d.]+$/.test(m[2]!)) return "a wildcard (*.) goes before a name, not an address";
  if (m[2] === BRIDGE_HOST)
    return `${BRIDGE_HOST} is where a sandboxed session reaches its gateway (docs/threat-model.md#the-gateway), so no host there can be listed: serve it on another address (127.0.0.1)`;
  return undefined;
}

/** A policy as loop.json gives it ("open" | "none" | entries) normalized: undefined for "open". */
export function normalizeNetwork(raw: "open" | "none" | string[] | undefined): NetworkPolicy | undefined {
  if (raw === undefined || raw === "open") return undefined;
  if (raw === "none") return "none";
  return [...new Set(raw.map((e) => e.toLowerCase()))].sort();
}

/**
 * Hosts each runner preset's CLI reaches besides the model API (docs/loop-json.md#network). What
 * can be turned off is turned off in the agent's environment instead (NONESSENTIAL_TRAFFIC_OFF).
 */
const PRESET_NETWORK: Readonly<Record<string, readonly string[]>> = {
  // Claude Code: the model API goes through the gateway; with the non-essential traffic off
  // (telemetry, error reports, update checks) it needs nothing else but, signed in with an account
  // (OAuth), its token refresh: TOKEN_URL https://platform.claude.com/v1/oauth/token in 2.1.197 and 2.1.332.
  claude: ["platform.claude.com:443"],
  // Codex: the model API through the gateway; a ChatGPT sign-in refreshes its token at auth.openai.com.
  codex: ["auth.openai.com:443"],
  // aider: the model API through the gateway; its analytics and version check are turned off by flags.
  aider: [],
  // Gemini CLI: the model API (its router's side requests too) through the gateway; its usage
  // statistics and update check are off in the settings loop writes (lib/supervisor/config-home.ts).
  gemini: [],
  // opencode: the model API (its title request too) through the gateway; its models list
  // (models.opencode.ai), plugins (npm), sharing and update are off in the preset's environment.
  opencode: [],
  demo: [],
};

/**
 * Hosts a preset's CLI tries on its own and works without (found by running it behind a proxy that
 * refuses everything): refused and recorded like any other, listed here so the docs and a test can
 * tell them from a host the work needs. Codex 0.171: its curated-plugins sync (github.com,
 * api.github.com, chatgpt.com), which no flag or setting of `codex exec` turns off.
 */
export const PRESET_TRIES: Readonly<Record<string, readonly string[]>> = {
  codex: ["api.github.com:443", "chatgpt.com:443", "github.com:443"],
};

/**
 * Variables given to every agent behind a gateway that switch off what the CLIs would otherwise
 * send out on their own (Claude Code's telemetry, error reports and update checks; codex's and
 * aider's analytics where a variable exists).
 */
export const NONESSENTIAL_TRAFFIC_OFF: Readonly<Record<string, string>> = {
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  DISABLE_TELEMETRY: "1",
  DISABLE_ERROR_REPORTING: "1",
  DISABLE_AUTOUPDATER: "1",
  AIDER_ANALYTICS: "false",
  AIDER_CHECK_UPDATE: "false",
};

/**
 * How a session reaches its model API (docs/threat-model.md#the-gateway): through its gateway, which
 * meters, caps and holds loop's keys, for every runner that can reach one, whatever `network` says
 * ("open" only leaves other hosts unfiltered). On an open network, not for the demo agent (it reaches
 * none), nor for codex signed in with a ChatGPT account (loop's environment holds no OPENAI_API_KEY):
 * its model traffic goes to chatgpt.com, which the gateway does not serve, so it runs as it is (its
 * spend is what it prints). With a `network` setting every runner has one (the demo agent's is its
 * only way out). `unshare`: in the sandbox the network is unshared and the gateway reached through
 * the bridge (a `network` list or "none", never "open").
 */
export function modelRoute(o: { runner: string; network: NetworkPolicy | undefined; env: Record<string, string | undefined> }): {
  gateway: boolean;
  unshare: boolean;
} {
  if (o.network !== undefined) return { gateway: true, unshare: true };
  return { gateway: o.runner !== "demo" && !(o.runner === "codex" && !o.env.OPENAI_API_KEY), unshare: false };
}

/** The entries a session of `runner` may reach: the item's policy plus its preset's hosts; "none" stays "none". */
export function sessionAllowList(policy: NetworkPolicy | undefined, runner: string): NetworkPolicy | undefined {
  if (policy === undefined || policy === "none") return policy;
  return [...new Set([...policy, ...(PRESET_NETWORK[runner] ?? [])])].sort();
}

/** Whether `host:port` is allowed by a policy (undefined: open). Names compare case-insensitively; `*.x` matches `a.x` and `a.b.x`, not `x`. */
export function networkAllows(policy: NetworkPolicy | undefined, host: string, port: number): boolean {
  if (policy === undefined) return true;
  if (policy === "none") return false;
  const h = host.toLowerCase().replace(/\.$/, "");
  const bracketed = h.includes(":") && !h.startsWith("[") ? `[${h}]` : h;
  return policy.some((entry) => {
    const colon = entry.lastIndexOf(":");
    if (Number(entry.slice(colon + 1)) !== port) return false;
    const name = entry.slice(0, colon);
    return name.startsWith("*.") ? bracketed.endsWith(name.slice(1)) && bracketed.length > name.length - 1 : bracketed === name;
  });
}

/**
 * Codex 0.171 ignores OPENAI_BASE_URL: behind a gateway its preset names a model provider of loop's
 * on the command line (`-c` overrides, docs/runners.md#codex-behind-the-gateway). The gateway's URL
 * is known only once the session's wrapper has started it (an ephemeral port outside the sandbox),
 * so the preset writes this element, and the wrapper alone replaces it (gatewayArgv).
 */
export const GATEWAY_PROVIDER = "loop_gateway";
export const GATEWAY_OPENAI_URL_ARG = `model_providers.${GATEWAY_PROVIDER}.base_url=<the session gateway's OpenAI URL>`;

/** `argv` with the gateway URL placeholder element (exactly it, nowhere else) given the URL. */
export function gatewayArgv(argv: readonly string[], openaiUrl: string): string[] {
  return argv.map((a) => (a === GATEWAY_OPENAI_URL_ARG ? `model_providers.${GATEWAY_PROVIDER}.base_url=${JSON.stringify(openaiUrl)}` : a));
}

/**
 * What `workspace.setup` reaches in the sandbox when loop.json does not say (docs/loop-json.md#workspace):
 * the public registries of the ecosystems `loop init` proposes a setup for, each over HTTPS. A
 * lockfile install needs its registry, not the model API nor anywhere an agent's code would post to.
 */
export const SETUP_REGISTRIES: readonly string[] = [
  // npm, pnpm, yarn (classic and berry), bun
  "registry.npmjs.org:443",
  "registry.yarnpkg.com:443",
  "repo.yarnpkg.com:443",
  // pip, uv, poetry
  "pypi.org:443",
  "files.pythonhosted.org:443",
  // cargo
  "index.crates.io:443",
  "static.crates.io:443",
  "crates.io:443",
  // go
  "proxy.golang.org:443",
  "sum.golang.org:443",
];

/**
 * Variables by which an operator names a registry of their own (a mirror, a private index), each a
 * URL or a list of them: the hosts they name join SETUP_REGISTRIES. `CARGO_REGISTRIES_<NAME>_INDEX`
 * is matched by pattern.
 */
const REGISTRY_VARIABLES: readonly string[] = [
  "npm_config_registry",
  "NPM_CONFIG_REGISTRY",
  "YARN_NPM_REGISTRY_SERVER",
  "BUN_CONFIG_REGISTRY",
  "PIP_INDEX_URL",
  "PIP_EXTRA_INDEX_URL",
  "UV_INDEX_URL",
  "UV_DEFAULT_INDEX",
  "UV_EXTRA_INDEX_URL",
  "UV_INDEX",
  "POETRY_REPOSITORIES_*_URL",
  "GOPROXY",
  "CARGO_REGISTRIES_*_INDEX",
];

const REGISTRY_PATTERNS = REGISTRY_VARIABLES.map((n) => new RegExp(`^${n.replace("*", "[A-Z0-9_]+")}$`));

/** The `host:port` entries of the URLs in a registry variable's value (lists split on space, comma and `|`; `name=` and `sparse+` prefixes dropped; `direct`, `off` and what is not a URL skipped). */
function registryHosts(value: string): string[] {
  const out: string[] = [];
  for (const word of value.split(/[\s,|]+/)) {
    const url = word.replace(/^[A-Za-z0-9_.-]+=(?=[a-z+]+:\/\/)/, "").replace(/^sparse\+/, "");
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      continue;
    }
    if (u.protocol !== "https:" && u.protocol !== "http:") continue;
    const entry = `${u.hostname.toLowerCase()}:${u.port || (u.protocol === "https:" ? "443" : "80")}`;
    if (networkEntryProblem(entry) === undefined) out.push(entry);
  }
  return out;
}

/**
 * What setup may reach in the sandbox (normalized `workspace.setupNetwork`): "open" → undefined (the
 * network as it is); "none"; a list as it is; not set → SETUP_REGISTRIES and the hosts the
 * operator's registry variables name (`env`: loop's environment, which setup's is built from).
 */
export function setupAllowList(policy: "open" | NetworkPolicy | undefined, env: Record<string, string | undefined>): NetworkPolicy | undefined {
  if (policy === "open") return undefined;
  if (policy !== undefined) return policy;
  const named = Object.entries(env).flatMap(([k, v]) => (v && REGISTRY_PATTERNS.some((p) => p.test(k)) ? registryHosts(v) : []));
  return [...new Set([...SETUP_REGISTRIES, ...named])].sort();
}
