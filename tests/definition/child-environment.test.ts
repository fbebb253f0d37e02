// The environment policy (lib/definition/child-environment.ts) as a table: plain data in, the child's
// environment out. Loop's own secrets never pass; "clean" passes only PATH, HOME, locale, TMPDIR and
// what is declared; patterns match whole names.
import { describe, expect, test } from "bun:test";
import { agentRule, childEnvironment, DEFAULT_ENVIRONMENT, type EnvRule, loopSecrets, matchesName, runnerEnvironment, verifyRule } from "../../lib/definition/child-environment.ts";
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
    want: ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "FORGE_PAT", "DEPLOY_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_REGION", "NPM_CONFIG_REGISTRY", "EDITOR"],
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
    want: ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "FORGE_PAT", "DEPLOY_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_REGION", "NPM_CONFIG_REGISTRY", "EDITOR"],
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

  test("loop's secrets: the built-in ones, the forge's tokenEnv, environment.secrets", () => {
    expect(loopSecrets(def).sort()).toEqual(["DEPLOY_KEY", "FORGE_PAT", "GH_TOKEN", "GITHUB_TOKEN", "LOOP_ALLOW_AUTO_MERGE"]);
  });

  test("an agent gets pass and its runner's declared variables; a verify command gets pass only", () => {
    expect(Object.keys(childEnvironment(PARENT, agentRule(def, "mine"))).sort()).toEqual(["HOME", "LANG", "LC_ALL", "NPM_CONFIG_REGISTRY", "OPENAI_API_KEY", "PATH", "TMPDIR"]);
    expect(Object.keys(childEnvironment(PARENT, verifyRule(def))).sort()).toEqual(["HOME", "LANG", "LC_ALL", "NPM_CONFIG_REGISTRY", "PATH", "TMPDIR"]);
    // The claude preset knows its variables.
    expect(Object.keys(childEnvironment(PARENT, agentRule(def, "claude")))).toContain("ANTHROPIC_API_KEY");
    expect(Object.keys(childEnvironment(PARENT, agentRule(def, "claude")))).toContain("AWS_REGION");
  });

  test("behind a gateway, a verify (the agent's code) gets none of the model keys the gateway holds, whatever the policy or pass says", () => {
    const open = normalizeDefinition({ name: "t", environment: { pass: ["*_API_KEY"] }, items: [] });
    expect(Object.keys(childEnvironment(PARENT, verifyRule(open)))).toEqual(expect.arrayContaining(["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]));
    const held = Object.keys(childEnvironment(PARENT, verifyRule(open, { behindGateway: true })));
    expect(held.filter((k) => k.endsWith("_API_KEY"))).toEqual([]);
    expect(held).toContain("AWS_REGION");
  });

  test("each preset declares its providers' keys and config homes; the demo and unknown runners nothing", () => {
    expect(runnerEnvironment("claude", DEFAULT_ENVIRONMENT)).toEqual(expect.arrayContaining(["ANTHROPIC_*", "CLAUDE_*", "IS_SANDBOX", "HTTPS_PROXY"]));
    expect(runnerEnvironment("codex", DEFAULT_ENVIRONMENT)).toEqual(expect.arrayContaining(["CODEX_*", "OPENAI_*"]));
    expect(runnerEnvironment("aider", DEFAULT_ENVIRONMENT)).toEqual(expect.arrayContaining(["AIDER_*", "*_API_KEY"]));
    expect(runnerEnvironment("demo", DEFAULT_ENVIRONMENT)).toEqual([]);
  });

  test("a secret named for a runner or in pass is a definition error, at its path", () => {
    expect(() =>
      normalizeDefinition({ name: "t", environment: { pass: ["GH_TOKEN"] }, runners: { mine: { command: ["x"], environment: ["LOOP_ALLOW_AUTO_MERGE"] } }, items: [] }),
    ).toThrow(/environment\.pass\[0\]: GH_TOKEN is one of loop's own secrets[\s\S]*runners\.mine\.environment\[0\]: LOOP_ALLOW_AUTO_MERGE is one of loop's own secrets/);
    expect(() => normalizeDefinition({ name: "t", environment: { policy: "open" }, items: [] })).toThrow(/environment\.policy: must be "inherit" or "clean"/);
    expect(() => normalizeDefinition({ name: "t", environment: { pass: ["NOT-A-NAME"] }, items: [] })).toThrow(/environment\.pass\[0\]: must be an environment variable name/);
  });
});
