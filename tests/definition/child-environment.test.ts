// The environment policy (lib/definition/child-environment.ts) as a table: plain data in, the child's
// environment out. Loop's own secrets and its model keys never pass (but to the chained step, which
// starts the next gateways); "clean" passes only PATH, HOME, locale, TMPDIR and what is declared;
// patterns match whole names; a child given its working directory gets PWD naming it, no OLDPWD.
import { describe, expect, test } from "bun:test";
import {
  agentRule,
  childEnvironment,
  plannerRule,
  DEFAULT_ENVIRONMENT,
  type EnvRule,
  gatewayUpstream,
  loopKeys,
  loopSecrets,
  matchesName,
  runnerEnvironment,
  toolRule,
  verifyRule,
} from "../../lib/definition/child-environment.ts";
import { normalizeDefinition } from "../../lib/definition/normalize.ts";

const PARENT = {
  PATH: "/usr/bin",
  HOME: "/home/loop",
  LANG: "C.UTF-8",
  LC_ALL: "C",
  TMPDIR: "/tmp",
  GITHUB_TOKEN: "ghp_x",
  GH_TOKEN: "gho_x",
  LOOP_ALLOW_AUTO_MERGE: "1",
  FORGE_PAT: "pat_x",
  DEPLOY_KEY: "dk",
  ANTHROPIC_API_KEY: "sk-ant",
  OPENAI_API_KEY: "sk-oai",
  AWS_REGION: "eu-west-1",
  NPM_CONFIG_REGISTRY: "r",
  EDITOR: "vi",
};

const cases: { name: string; rule: EnvRule; want: string[] }[] = [
  {
    name: "inherit: everything but the built-in secrets",
    rule: { policy: "inherit", keep: [], drop: ["GITHUB_TOKEN", "GH_TOKEN", "LOOP_ALLOW_AUTO_MERGE"] },
    want: [
      "PATH",
      "HOME",
      "LANG",
      "LC_ALL",
      "TMPDIR",
      "FORGE_PAT",
      "DEPLOY_KEY",
      "ANTHROPIC_API_KEY",
      "OPENAI_API_KEY",
      "AWS_REGION",
      "NPM_CONFIG_REGISTRY",
      "EDITOR",
    ],
  },
  {
    name: "inherit: a forge's own tokenEnv and loop.json's secrets are dropped too",
    rule: { policy: "inherit", keep: [], drop: ["GITHUB_TOKEN", "GH_TOKEN", "LOOP_ALLOW_AUTO_MERGE", "FORGE_PAT", "DEPLOY_*"] },
    want: ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_REGION", "NPM_CONFIG_REGISTRY", "EDITOR"],
  },
  {
    name: "clean: PATH, HOME, locale, TMPDIR only",
    rule: { policy: "clean", keep: [], drop: ["GITHUB_TOKEN"] },
    want: ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"],
  },
  {
    name: "clean: what is declared passes, patterns included",
    rule: { policy: "clean", keep: ["ANTHROPIC_*", "AWS_*"], drop: ["GITHUB_TOKEN"] },
    want: ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "ANTHROPIC_API_KEY", "AWS_REGION"],
  },
  {
    name: "clean: a secret declared (or matched by a pattern) still never passes",
    rule: { policy: "clean", keep: ["*_TOKEN", "GH_*", "*"], drop: ["GITHUB_TOKEN", "GH_TOKEN", "LOOP_ALLOW_AUTO_MERGE"] },
    want: [
      "PATH",
      "HOME",
      "LANG",
      "LC_ALL",
      "TMPDIR",
      "FORGE_PAT",
      "DEPLOY_KEY",
      "ANTHROPIC_API_KEY",
      "OPENAI_API_KEY",
      "AWS_REGION",
      "NPM_CONFIG_REGISTRY",
      "EDITOR",
    ],
  },
];

describe("childEnvironment", () => {
  for (const c of cases)
    test(c.name, () => {
      const out = childEnvironment(PARENT, c.rule);
      expect(Object.keys(out).sort()).toEqual([...c.want].sort());
      for (const k of c.want) expect(out[k]).toBe(PARENT[k as keyof typeof PARENT]);
    });

  test("undefined values are not passed", () => {
    expect(childEnvironment({ PATH: "/bin", GONE: undefined }, { policy: "inherit", keep: [], drop: [] })).toEqual({ PATH: "/bin" });
  });

  test("given its working directory, a child's PWD names it and OLDPWD is gone, under either policy", () => {
    const parent = { PATH: "/bin", PWD: "/srv/api", OLDPWD: "/home/op" };
    for (const policy of ["inherit", "clean"] as const)
      expect(childEnvironment(parent, { policy, keep: [], drop: [] }, { cwd: "/srv/wt/a" })).toEqual({ PATH: "/bin", PWD: "/srv/wt/a" });
    // Without one, as it was (loop's own uses that need no PWD).
    expect(childEnvironment(parent, { policy: "inherit", keep: [], drop: [] })).toEqual(parent);
  });
});

describe("matchesName", () => {
  const table: [string, string, boolean][] = [
    ["GH_TOKEN", "GH_TOKEN", true],
    ["GH_TOKEN", "GH_TOKENS", false],
    ["AWS_*", "AWS_REGION", true],
    ["AWS_*", "XAWS_REGION", false],
    ["*_API_KEY", "OPENAI_API_KEY", true],
    ["*_API_KEY", "OPENAI_API_KEYS", false],
    ["A*B*C", "AxxBxxC", true],
    ["A*B*C", "AxxC", false],
    ["*", "ANYTHING", true],
    ["LC_*", "LC_", true],
  ];
  for (const [pattern, name, want] of table) test(`${pattern} ~ ${name}: ${want}`, () => expect(matchesName(pattern, name)).toBe(want));
});

describe("rules from a definition", () => {
  const def = normalizeDefinition({
    name: "t",
    forge: { provider: "github", repo: "acme/api", tokenEnv: "FORGE_PAT" },
    environment: { policy: "clean", pass: ["NPM_*"], secrets: ["DEPLOY_KEY"] },
    runners: { mine: { command: ["my-agent"], environment: ["OPENAI_API_KEY"] } },
    items: [],
  });

  test("loop's secrets: the built-in ones, the forge's tokenEnv, environment.secrets; loop's keys add the model keys", () => {
    expect(loopSecrets(def).sort()).toEqual(["DEPLOY_KEY", "FORGE_PAT", "GH_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN", "LOOP_ALLOW_AUTO_MERGE"]);
    expect(loopKeys(def).sort()).toEqual([
      "ANTHROPIC_API_KEY",
      "DEPLOY_KEY",
      "FORGE_PAT",
      "GEMINI_API_KEY",
      "GH_TOKEN",
      "GITHUB_TOKEN",
      "GITLAB_TOKEN",
      "LOOP_ALLOW_AUTO_MERGE",
      "OPENAI_API_KEY",
    ]);
  });

  test("an agent gets pass and its runner's declared variables, never a model key (its gateway gives it a stand-in); a verify command gets pass only", () => {
    expect(Object.keys(childEnvironment(PARENT, agentRule(def, "mine"))).sort()).toEqual(["HOME", "LANG", "LC_ALL", "NPM_CONFIG_REGISTRY", "PATH", "TMPDIR"]);
    expect(Object.keys(childEnvironment(PARENT, verifyRule(def))).sort()).toEqual(["HOME", "LANG", "LC_ALL", "NPM_CONFIG_REGISTRY", "PATH", "TMPDIR"]);
    // The claude preset knows its variables, its provider's key excepted.
    expect(Object.keys(childEnvironment(PARENT, agentRule(def, "claude")))).not.toContain("ANTHROPIC_API_KEY");
    expect(Object.keys(childEnvironment(PARENT, agentRule(def, "claude")))).toContain("AWS_REGION");
  });

  test("a verify (the agent's code) gets none of the model keys, whatever the policy or pass says", () => {
    const open = normalizeDefinition({ name: "t", environment: { pass: ["*_API_KEY"] }, items: [] });
    const held = Object.keys(childEnvironment(PARENT, verifyRule(open)));
    expect(held.filter((k) => k.endsWith("_API_KEY"))).toEqual([]);
    expect(held).toContain("AWS_REGION");
  });

  test("loop's own commands (notify) get everything but loop's keys, whatever the policy; the chained step keeps the model keys, for the next gateways", () => {
    expect(Object.keys(childEnvironment(PARENT, toolRule(def))).sort()).toEqual([
      "AWS_REGION",
      "EDITOR",
      "HOME",
      "LANG",
      "LC_ALL",
      "NPM_CONFIG_REGISTRY",
      "PATH",
      "TMPDIR",
    ]);
    expect(Object.keys(childEnvironment(PARENT, toolRule(def, { keepModelKeys: true }))).sort()).toEqual([
      "ANTHROPIC_API_KEY",
      "AWS_REGION",
      "EDITOR",
      "HOME",
      "LANG",
      "LC_ALL",
      "NPM_CONFIG_REGISTRY",
      "OPENAI_API_KEY",
      "PATH",
      "TMPDIR",
    ]);
  });

  test("a planner (loop plan) is an agent but for the model keys, which it gets: it calls its model itself, behind no gateway", () => {
    expect(Object.keys(childEnvironment(PARENT, plannerRule(def, "claude"))).sort()).toEqual([
      "ANTHROPIC_API_KEY",
      "AWS_REGION",
      "HOME",
      "LANG",
      "LC_ALL",
      "NPM_CONFIG_REGISTRY",
      "PATH",
      "TMPDIR",
    ]);
  });

  test("a gateway is handed the model keys and their upstreams, nothing else", () => {
    expect(gatewayUpstream({ ...PARENT, ANTHROPIC_BASE_URL: "https://a.example", OPENAI_BASE_URL: "" })).toEqual({
      ANTHROPIC_API_KEY: "sk-ant",
      OPENAI_API_KEY: "sk-oai",
      ANTHROPIC_BASE_URL: "https://a.example",
    });
    // Gemini's key and upstream likewise: the gemini preset's model requests go through the gateway, which holds the key.
    expect(gatewayUpstream({ GEMINI_API_KEY: "g-key", GOOGLE_GEMINI_BASE_URL: "https://g.example", GOOGLE_API_KEY: "other" })).toEqual({
      GEMINI_API_KEY: "g-key",
      GOOGLE_GEMINI_BASE_URL: "https://g.example",
    });
  });

  test("each preset declares its providers' keys and config homes; the demo and unknown runners nothing", () => {
    expect(runnerEnvironment("claude", DEFAULT_ENVIRONMENT)).toEqual(expect.arrayContaining(["ANTHROPIC_*", "CLAUDE_*", "IS_SANDBOX", "HTTPS_PROXY"]));
    expect(runnerEnvironment("gemini", DEFAULT_ENVIRONMENT)).toEqual(expect.arrayContaining(["GEMINI_*", "GOOGLE_GEMINI_BASE_URL", "HTTPS_PROXY"]));
    expect(runnerEnvironment("codex", DEFAULT_ENVIRONMENT)).toEqual(expect.arrayContaining(["CODEX_*", "OPENAI_*"]));
    expect(runnerEnvironment("aider", DEFAULT_ENVIRONMENT)).toEqual(expect.arrayContaining(["AIDER_*", "*_API_KEY"]));
    expect(runnerEnvironment("demo", DEFAULT_ENVIRONMENT)).toEqual([]);
  });

  test("a secret named for a runner or in pass is a definition error, at its path", () => {
    expect(() =>
      normalizeDefinition({
        name: "t",
        environment: { pass: ["GH_TOKEN"] },
        runners: { mine: { command: ["x"], environment: ["LOOP_ALLOW_AUTO_MERGE"] } },
        items: [],
      }),
    ).toThrow(
      /environment\.pass\[0\]: GH_TOKEN is one of loop's own secrets[\s\S]*runners\.mine\.environment\[0\]: LOOP_ALLOW_AUTO_MERGE is one of loop's own secrets/,
    );
    expect(() => normalizeDefinition({ name: "t", environment: { policy: "open" }, items: [] })).toThrow(/environment\.policy: must be "inherit" or "clean"/);
    expect(() => normalizeDefinition({ name: "t", environment: { pass: ["NOT-A-NAME"] }, items: [] })).toThrow(
      /environment\.pass\[0\]: must be an environment variable name/,
    );
  });
});
