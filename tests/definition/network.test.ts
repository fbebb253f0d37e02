// loop.json's network settings (docs/loop-json.md#network): parsed, refused at their path,
// normalized (absent for "open", so old definitions hash as before), and the one matching rule.
import { describe, expect, test } from "bun:test";
import { definitionHash, normalizeDefinition } from "../../lib/definition/normalize.ts";
import {
  GATEWAY_OPENAI_URL_ARG,
  GATEWAY_PROVIDER,
  gatewayArgv,
  modelRoute,
  networkAllows,
  networkEntryProblem,
  sessionAllowList,
  SETUP_REGISTRIES,
  setupAllowList,
} from "../../lib/definition/network.ts";
import { buildRunnerCommand } from "../../lib/definition/runners.ts";

function issuesOf(raw: unknown): { path: string; message: string }[] {
  try {
    normalizeDefinition(raw);
    return [];
  } catch (e: any) {
    return e.issues.map((i: any) => ({ path: i.path, message: i.message }));
  }
}

const items = ["claude", "mine", "boxed"].map((runner) => ({ id: runner, prompt: "p", verify: "true", runner }));
const runners = { mine: { command: ["m"] }, boxed: { command: ["b"], sandbox: "bwrap", network: ["registry.npmjs.org:443"] } };

describe("network settings", () => {
  test('"open" by default: no item carries network or verifyNetwork outside the sandbox, and the hash is as before', () => {
    const plain = normalizeDefinition({ name: "x", runners: { mine: runners.mine }, items: items.slice(0, 2) });
    expect(plain.items.every((it) => !("network" in it) && !("verifyNetwork" in it))).toBe(true);
    const open = normalizeDefinition({
      name: "x",
      defaults: { network: "open", verifyNetwork: "open" },
      runners: { mine: runners.mine },
      items: items.slice(0, 2),
    });
    expect(definitionHash(open)).toBe(definitionHash(plain));
  });

  test("defaults.network applies to presets and runners without their own; a runner's own wins; entries lower-cased, sorted, unique", () => {
    const def = normalizeDefinition({ name: "x", defaults: { network: ["Example.COM:443", "*.pypi.org:443", "example.com:443"] }, runners, items });
    expect(def.items.map((it) => it.network)).toEqual([
      ["*.pypi.org:443", "example.com:443"],
      ["*.pypi.org:443", "example.com:443"],
      ["registry.npmjs.org:443"],
    ]);
    expect(normalizeDefinition({ name: "x", defaults: { network: "none" }, items: items.slice(0, 1) }).items[0]!.network).toBe("none");
  });

  test('verifyNetwork: "none" in the sandbox unless said, open outside it; defaults.verifyNetwork wins', () => {
    const def = normalizeDefinition({ name: "x", runners, items });
    expect(def.items.map((it) => it.verifyNetwork ?? "open")).toEqual(["open", "open", "none"]);
    const told = normalizeDefinition({ name: "x", defaults: { verifyNetwork: ["registry.npmjs.org:443"] }, runners, items });
    expect(told.items.map((it) => it.verifyNetwork)).toEqual([["registry.npmjs.org:443"], ["registry.npmjs.org:443"], ["registry.npmjs.org:443"]]);
    expect(
      normalizeDefinition({ name: "x", defaults: { sandbox: "bwrap", verifyNetwork: "open" }, items: items.slice(0, 1) }).items[0]!.verifyNetwork,
    ).toBeUndefined();
  });

  test.each([
    ["a word", { defaults: { network: "closed" } }, "defaults.network", 'must be "open", "none" or an array of "host:port" entries'],
    ["no port", { defaults: { network: ["example.com"] } }, "defaults.network[0]", 'must be "host:port"'],
    ["port 0", { defaults: { verifyNetwork: ["example.com:0"] } }, "defaults.verifyNetwork[0]", "the port must be 1 to 65535"],
    ["port 70000", { defaults: { network: ["example.com:70000"] } }, "defaults.network[0]", "the port must be 1 to 65535"],
    ["a URL", { defaults: { network: ["https://example.com:443"] } }, "defaults.network[0]", 'must be "host:port"'],
    ["a wildcard inside", { defaults: { network: ["a.*.com:443"] } }, "defaults.network[0]", 'must be "host:port"'],
    ["a wildcard over an address", { defaults: { network: ["*.10.0.0.1:443"] } }, "defaults.network[0]", "a wildcard (*.) goes before a name"],
    ["a bare wildcard", { defaults: { network: ["*:443"] } }, "defaults.network[0]", 'must be "host:port"'],
    ["a runner's", { runners: { mine: { command: ["m"], network: [1] } } }, "runners.mine.network", 'must be "open", "none" or an array'],
    ["setup's word", { workspace: { setupNetwork: "registries" } }, "workspace.setupNetwork", 'must be "open", "none" or an array of "host:port" entries'],
    ["setup's entry", { workspace: { setupNetwork: ["https://registry.npmjs.org"] } }, "workspace.setupNetwork[0]", 'must be "host:port"'],
    [
      "the sandbox gateway's own address",
      { defaults: { network: ["127.0.0.2:4873"] } },
      "defaults.network[0]",
      "127.0.0.2 is where a sandboxed session reaches its gateway",
    ],
    ["too many", { defaults: { network: Array.from({ length: 257 }, (_, i) => `h${i}.example.com:443`) } }, "defaults.network", "at most 256 entries"],
  ])("%s is refused at its path", (_name, over, path, message) => {
    const issues = issuesOf({ name: "x", ...over, items: [] });
    expect(issues.some((i) => i.path === path && i.message.includes(message))).toBe(true);
  });

  test('workspace.setupNetwork: unset is absent (the registries), "open" and "none" kept, a list normalized as network\'s', () => {
    const of = (setupNetwork?: unknown) =>
      normalizeDefinition({ name: "x", workspace: { setup: "true", ...(setupNetwork === undefined ? {} : { setupNetwork }) }, items: items.slice(0, 1) })
        .setupNetwork;
    expect([of(), of("open"), of("none"), of(["Mirror.example:4873", "127.0.0.1:4873", "mirror.example:4873"])]).toEqual([
      undefined,
      "open",
      "none",
      ["127.0.0.1:4873", "mirror.example:4873"],
    ]);
  });

  test("setup's allow-list: unset, the registries and the hosts of the operator's registry variables; a list exactly; open and none as they are", () => {
    const env = {
      npm_config_registry: "http://127.0.0.1:4873/",
      PIP_EXTRA_INDEX_URL: "https://pkgs.example.com/simple https://other.example.com:8443/simple",
      UV_INDEX: "internal=https://uv.example.com/simple",
      GOPROXY: "https://goproxy.example.com,direct",
      CARGO_REGISTRIES_MINE_INDEX: "sparse+https://cargo.example.com/index/",
      POETRY_REPOSITORIES_CORP_URL: "https://poetry.example.com/simple",
      PIP_INDEX_URL: "not a url",
      HOME: "https://not-a-registry.example.com",
      UV_INDEX_URL: "",
    };
    const named = [
      "127.0.0.1:4873",
      "cargo.example.com:443",
      "goproxy.example.com:443",
      "other.example.com:8443",
      "pkgs.example.com:443",
      "poetry.example.com:443",
      "uv.example.com:443",
    ];
    expect(setupAllowList(undefined, env)).toEqual([...SETUP_REGISTRIES, ...named].sort());
    expect(setupAllowList(undefined, {})).toEqual([...SETUP_REGISTRIES].sort());
    expect(SETUP_REGISTRIES).toContain("registry.npmjs.org:443");
    expect(SETUP_REGISTRIES).toContain("files.pythonhosted.org:443");
    // A model API is never among them.
    expect(SETUP_REGISTRIES.some((h) => /anthropic|openai/.test(h))).toBe(false);
    expect(setupAllowList(["mirror.example:4873"], env)).toEqual(["mirror.example:4873"]);
    expect(setupAllowList("open", env)).toBeUndefined();
    expect(setupAllowList("none", env)).toBe("none");
  });

  test("the matching rule: exact host and port; *.x matches subdomains only; case and a trailing dot do not matter; IPv6 bracketed", () => {
    const list = ["registry.npmjs.org:443", "*.pypi.org:443", "127.0.0.1:8080", "[::1]:9000"];
    expect(networkAllows(list, "registry.npmjs.org", 443)).toBe(true);
    expect(networkAllows(list, "REGISTRY.npmjs.org.", 443)).toBe(true);
    expect(networkAllows(list, "registry.npmjs.org", 80)).toBe(false);
    expect(networkAllows(list, "evil-registry.npmjs.org", 443)).toBe(false);
    expect(networkAllows(list, "files.pypi.org", 443)).toBe(true);
    expect(networkAllows(list, "a.b.pypi.org", 443)).toBe(true);
    expect(networkAllows(list, "pypi.org", 443)).toBe(false);
    expect(networkAllows(list, "evilpypi.org", 443)).toBe(false);
    expect(networkAllows(list, "127.0.0.1", 8080)).toBe(true);
    expect(networkAllows(list, "127.0.0.1", 8081)).toBe(false);
    expect(networkAllows(list, "::1", 9000)).toBe(true);
    expect(networkAllows(list, "[::1]", 9000)).toBe(true);
    expect(networkAllows("none", "127.0.0.1", 8080)).toBe(false);
    expect(networkAllows(undefined, "anything", 1)).toBe(true);
    expect(networkEntryProblem("*.Example.com:443")).toBeUndefined();
  });

  test("a preset brings its CLI's hosts; none stays none, open stays open", () => {
    expect(sessionAllowList(["example.com:443"], "codex")).toEqual(["auth.openai.com:443", "example.com:443"]);
    expect(sessionAllowList(["example.com:443"], "claude")).toEqual(["example.com:443", "platform.claude.com:443"]);
    expect(sessionAllowList(["example.com:443"], "mine")).toEqual(["example.com:443"]);
    expect(sessionAllowList("none", "codex")).toBe("none");
    expect(sessionAllowList(undefined, "codex")).toBeUndefined();
  });
});

describe("modelRoute: a gateway for every session that can reach a model API", () => {
  const key = { OPENAI_API_KEY: "sk" };
  const cases: [string, Parameters<typeof modelRoute>[0], ReturnType<typeof modelRoute>][] = [
    ["claude on an open network: a gateway, the network not unshared", { runner: "claude", network: undefined, env: {} }, { gateway: true, unshare: false }],
    ["a command runner on an open network: a gateway", { runner: "mine", network: undefined, env: {} }, { gateway: true, unshare: false }],
    ["aider on an open network: a gateway", { runner: "aider", network: undefined, env: {} }, { gateway: true, unshare: false }],
    ["codex with loop's OpenAI key: a gateway", { runner: "codex", network: undefined, env: key }, { gateway: true, unshare: false }],
    [
      "codex signed in with ChatGPT (no key) on an open network: none (the gateway does not serve chatgpt.com)",
      { runner: "codex", network: undefined, env: {} },
      { gateway: false, unshare: false },
    ],
    ["the demo agent on an open network: none (it reaches no model)", { runner: "demo", network: undefined, env: key }, { gateway: false, unshare: false }],
    [
      "any runner with a list: a gateway, the network unshared in the sandbox",
      { runner: "codex", network: ["example.com:443"], env: {} },
      { gateway: true, unshare: true },
    ],
    ["the demo agent with none: its gateway is its only way out", { runner: "demo", network: "none", env: {} }, { gateway: true, unshare: true }],
  ];
  for (const [name, input, want] of cases) test(name, () => expect(modelRoute(input)).toEqual(want));
});

describe("codex behind the gateway (lib/definition/runners.ts, network.ts gatewayArgv)", () => {
  const ctx = { item: "a", attempt: 1, prompt: "p", handoffPath: "/h.md", workdir: "/w", model: null, sessionId: "s" };
  test("the preset names loop's provider before exec only behind a gateway, fresh and resumed; the wrapper fills in the URL, in that element alone", () => {
    const plain = buildRunnerCommand("codex", ctx, {}, []).argv;
    expect(plain.some((a) => a.includes(GATEWAY_PROVIDER))).toBe(false);
    for (const c of [
      { ...ctx, gateway: true },
      { ...ctx, gateway: true, resume: { conversationId: "t-1", replyFile: "/r.md" } },
    ]) {
      const argv = buildRunnerCommand("codex", c, {}, []).argv;
      const exec = argv.indexOf("exec");
      expect(argv.indexOf(GATEWAY_OPENAI_URL_ARG)).toBeGreaterThan(0);
      expect(argv.indexOf(GATEWAY_OPENAI_URL_ARG)).toBeLessThan(exec);
      expect(argv.slice(1, exec)).toContain(`model_provider="${GATEWAY_PROVIDER}"`);
      expect(argv.slice(1, exec)).toContain("analytics.enabled=false");
      const filled = gatewayArgv(argv, "http://127.0.0.1:41001/openai");
      expect(filled.filter((a, i) => a !== argv[i])).toEqual([`model_providers.${GATEWAY_PROVIDER}.base_url="http://127.0.0.1:41001/openai"`]);
    }
    // A prompt that merely holds the placeholder's text is left as it is.
    expect(gatewayArgv(["x", `say ${GATEWAY_OPENAI_URL_ARG}`], "http://u")).toEqual(["x", `say ${GATEWAY_OPENAI_URL_ARG}`]);
  });
});
