import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ACCEPTED_KEYS } from "../../lib/definition/schema.ts";
import { DefinitionError, JsonSyntaxError } from "../../lib/shared/errors.ts";
import { KNOWN_RUNNERS, type NormDefinition } from "../../lib/definition/normalized.ts";
import { branchNameProblem, itemBranch } from "../../lib/definition/branches.ts";
import { definitionHash, normalizeDefinition } from "../../lib/definition/normalize.ts";
import { loadDefinition, parseDefinitionText } from "../../lib/definition/loop-json.ts";
import { formatDuration, parseDuration } from "../../lib/definition/duration.ts";
import { formatJsonPath, parseStrictJson } from "../../lib/definition/json-strict.ts";
import { RESERVED_RUNNER_NAMES } from "../../lib/definition/runners.ts";

const MIN = 60_000;
const DEFAULT_TIMEOUTS = { launch: 5 * MIN, stall: 60 * MIN, verify: 15 * MIN };

/** The issues a definition is rejected with (fails the test if it is accepted). */
function issuesOf(raw: unknown): { path: string; message: string }[] {
  try {
    normalizeDefinition(raw);
  } catch (e) {
    if (e instanceof DefinitionError) return e.issues;
    throw e;
  }
  throw new Error("definition was accepted");
}

function textIssues(text: string): { path: string; message: string }[] {
  try {
    parseDefinitionText(text);
  } catch (e) {
    if (e instanceof DefinitionError) return e.issues;
    throw e;
  }
  throw new Error("definition was accepted");
}

/** A valid definition to break one field at a time. */
function valid(): any {
  return {
    name: "api-backlog",
    defaults: { verify: "bun test" },
    items: [
      { id: "a", prompt: "do a" },
      { id: "b", prompt: "do b", dependsOn: ["a"] },
    ],
  };
}

describe("duration", () => {
  test.each([
    ["500ms", 500],
    ["90s", 90_000],
    ["15m", 15 * MIN],
    ["2h", 120 * MIN],
    ["1d", 1440 * MIN],
  ])("parseDuration(%p) = %p", (s, ms) => expect(parseDuration(s)).toBe(ms));

  test.each(["0s", "0ms", "0d", "000m"])("parseDuration rejects the zero duration %p: zero is invalid everywhere", (s) =>
    expect(() => parseDuration(s)).toThrow(`invalid duration ${JSON.stringify(s)}: must be greater than zero`),
  );

  test.each(["", "5", "m", "1.5h", "1h30m", " 5m", "5m ", "-5m", "5M", "5min", "5 m", "99999999999999999d"])("parseDuration rejects %p, naming it", (s) =>
    expect(() => parseDuration(s)).toThrow(JSON.stringify(s)),
  );

  test.each([
    [500, "500ms"],
    [1500, "1500ms"],
    [90_000, "90s"],
    [5 * MIN, "5m"],
    [90 * MIN, "90m"],
    [120 * MIN, "2h"],
    [1440 * MIN, "1d"],
  ])("formatDuration(%p) = %p and reads back", (ms, s) => {
    expect(formatDuration(ms)).toBe(s);
    expect(parseDuration(s)).toBe(ms);
  });

  test("formatDuration rejects negative and non-finite values", () => {
    expect(() => formatDuration(-1)).toThrow();
    expect(() => formatDuration(Number.NaN)).toThrow();
  });
});

describe("valid definitions", () => {
  test("minimal", () => {
    expect(normalizeDefinition({ name: "x", items: [] })).toEqual({
      name: "x",
      landing: "none",
      base: "main",
      target: "loop/x/landed",
      tmux: false,
      keepCheckoutOnClose: false,
      requireStartCommand: false,
      runners: {},
      notify: null,
      environment: { policy: "inherit", pass: [], secrets: [], runners: {} },
      items: [],
    });
  });

  test("minimal item takes every default", () => {
    const def = normalizeDefinition({ name: "x", items: [{ id: "one", prompt: "p", verify: false }] });
    expect(def.items).toEqual([
      {
        id: "one",
        ref: null,
        prompt: "p",
        dependsOn: [],
        verify: false,
        runner: "demo",
        model: null,
        maxAttempts: 2,
        timeouts: DEFAULT_TIMEOUTS,
      },
    ]);
  });

  test("maximal", () => {
    const raw = {
      $schema: "./schema/loop.schema.json",
      $comment: "the backlog",
      name: "api-backlog",
      defaults: {
        $comment: "inherited",
        runner: "claude",
        model: "sonnet",
        verify: "bun test",
        maxAttempts: 3,
        timeouts: { launch: "90s", stall: "2h", verify: "500ms" },
        landing: "merge",
      },
      runners: { mine: { $comment: "ours", command: ["my-agent", "--prompt-file", "{handoff}", "--cwd={workdir}"] } },
      control: { requireStartCommand: true },
      sessions: { tmux: true },
      workspace: { keepCheckoutOnClose: true, base: "develop", target: "integration/api" },
      items: [
        {
          $comment: "first",
          id: "fix-login",
          ref: "github:acme/api#042",
          prompt: "Fix the login redirect loop",
          dependsOn: [],
          verify: "bun test tests/login.test.ts",
          runner: "codex",
          model: "o4",
          maxAttempts: 5,
          timeouts: { stall: "30m" },
        },
        { ref: "gitlab:git.example.com:8443/acme/Web.App#7", prompt: "Second", dependsOn: ["fix-login"], runner: "mine", model: null },
        { id: "third", prompt: "Third", verify: false },
      ],
    };
    const expected: NormDefinition = {
      name: "api-backlog",
      landing: "merge",
      base: "develop",
      target: "integration/api",
      tmux: true,
      keepCheckoutOnClose: true,
      requireStartCommand: true,
      baseVerify: "bun test",
      runners: { mine: { command: ["my-agent", "--prompt-file", "{handoff}", "--cwd={workdir}"] } },
      notify: null,
      environment: { policy: "inherit", pass: [], secrets: [], runners: {} },
      items: [
        {
          id: "fix-login",
          ref: "github:acme/api#42",
          prompt: "Fix the login redirect loop",
          dependsOn: [],
          verify: "bun test tests/login.test.ts",
          runner: "codex",
          model: "o4",
          maxAttempts: 5,
          timeouts: { launch: 90_000, stall: 30 * MIN, verify: 500 },
        },
        {
          id: "web-app-7",
          ref: "gitlab:git.example.com:8443/acme/Web.App#7",
          prompt: "Second",
          dependsOn: ["fix-login"],
          verify: "bun test",
          runner: "mine",
          model: null, // explicit null overrides defaults.model
          maxAttempts: 3,
          timeouts: { launch: 90_000, stall: 120 * MIN, verify: 500 },
        },
        {
          id: "third",
          ref: null,
          prompt: "Third",
          dependsOn: [],
          verify: false,
          runner: "claude",
          model: "sonnet",
          maxAttempts: 3,
          timeouts: { launch: 90_000, stall: 120 * MIN, verify: 500 },
        },
      ],
    };
    expect(normalizeDefinition(raw)).toEqual(expected);
  });

  test("the docs/loop-json.md example is valid", () => {
    const def = normalizeDefinition({
      name: "api-backlog",
      defaults: {
        runner: "claude",
        model: null,
        verify: "bun test",
        maxAttempts: 2,
        timeouts: { launch: "5m", stall: "60m", verify: "15m" },
        landing: "none",
      },
      runners: { mine: { command: ["my-agent", "--prompt-file", "{handoff}"] } },
      control: { requireStartCommand: false },
      sessions: { tmux: false },
      workspace: { keepCheckoutOnClose: false, base: "main" },
      items: [
        {
          id: "fix-login",
          ref: "github:acme/api#42",
          prompt: "Fix the login redirect loop",
          dependsOn: [],
          verify: "bun test tests/login.test.ts",
          runner: "codex",
          model: "o4",
        },
      ],
    });
    expect(def.items[0]!.runner).toBe("codex");
    expect(def.target).toBe("loop/api-backlog/landed");
  });

  test("forward dependencies and every built-in runner are accepted", () => {
    const def = normalizeDefinition({
      name: "x",
      defaults: { verify: "true" },
      items: KNOWN_RUNNERS.map((runner, i) => ({ id: `i${i}`, prompt: "p", runner, dependsOn: i ? [] : ["i1"] })),
    });
    expect(def.items.map((i) => i.runner)).toEqual([...KNOWN_RUNNERS]);
  });

  test("the built-in runners are the ones lib/definition/runners.ts reserves", () => {
    expect([...KNOWN_RUNNERS]).toEqual(["claude", "codex", "gemini", "opencode", "aider", "demo"]);
    expect(KNOWN_RUNNERS).toEqual(RESERVED_RUNNER_NAMES);
  });

  test.each([["loop/api-backlog/items"], ["loop/api-backlog/landed"], ["loop/api-backlog-2"], ["loop/other/item/x"], ["integration/loop/api-backlog/item/x"]])(
    "target %p does not collide with item branches",
    (target) => {
      const raw = valid();
      raw.workspace = { target };
      expect(normalizeDefinition(raw).target).toBe(target);
    },
  );

  test("a base other than main may hold the default target's neighbours", () => {
    const raw = valid();
    raw.workspace = { base: "loop/api-backlog-landed" };
    expect(normalizeDefinition(raw)).toMatchObject({ base: "loop/api-backlog-landed", target: "loop/api-backlog/landed" });
  });
});

describe("branch names", () => {
  test("item branches are loop/<name>/item/<id>", () => {
    expect(itemBranch("api-backlog", "fix-login")).toBe("loop/api-backlog/item/fix-login");
    expect(itemBranch("a.b", "api-42")).toBe("loop/a.b/item/api-42");
  });

  test("the default target is loop/<name>/landed, outside the item branches", () => {
    const def = normalizeDefinition(valid());
    expect(def.target).toBe("loop/api-backlog/landed");
    expect(def.target.startsWith(itemBranch(def.name, ""))).toBe(false);
    for (const item of def.items) expect(branchNameProblem(itemBranch(def.name, item.id))).toBeUndefined();
  });

  test("a name unusable in branches is reported once, at name, even with a target set", () => {
    const raw = valid();
    raw.name = "x.lock";
    raw.workspace = { target: "integration" };
    expect(issuesOf(raw)).toEqual([{ path: "name", message: `cannot be used in branch names: "loop/x.lock/item/<id>" has a component ending in '.lock'` }]);
  });
});

describe("derived ids", () => {
  test.each([
    ["github:acme/api#42", "api-42", "github:acme/api#42"],
    ["github:acme/api#0042", "api-42", "github:acme/api#42"],
    ["github:github.com/acme/api#1", "api-1", "github:acme/api#1"],
    ["gitlab:acme/My_Repo.js#9", "my-repo-js-9", "gitlab:acme/My_Repo.js#9"],
  ])("%p -> id %p, ref %p", (ref, id, canonical) => {
    const def = normalizeDefinition({ name: "x", items: [{ ref, prompt: "p", verify: false }] });
    expect(def.items[0]).toMatchObject({ id, ref: canonical });
  });

  test("an explicit id wins over the ref", () => {
    const def = normalizeDefinition({ name: "x", items: [{ id: "mine", ref: "github:a/b#1", prompt: "p", verify: false }] });
    expect(def.items[0]).toMatchObject({ id: "mine", ref: "github:a/b#1" });
  });

  test("dependsOn may name a derived id", () => {
    const def = normalizeDefinition({
      name: "x",
      defaults: { verify: false },
      items: [
        { ref: "github:a/api#4", prompt: "p" },
        { id: "b", prompt: "p", dependsOn: ["api-4"] },
      ],
    });
    expect(def.items[1]!.dependsOn).toEqual(["api-4"]);
  });
});

describe("errors, each at its path", () => {
  const ID_RULE = "lowercase letters, digits and '-', with single '.' or '_' between them, at most 64 characters";
  const NO_VERIFY = 'no verify command and no default (set "verify": false to accept an agent exit 0 with a change on its branch)';
  const RUNNERS = "claude, codex, gemini, opencode, aider, demo";
  const cases: [string, (d: any) => void, string, string][] = [
    ["missing name", (d) => delete d.name, "name", "required"],
    ["name not a string", (d) => (d.name = 3), "name", "must be a string"],
    ["name with uppercase", (d) => (d.name = "Api"), "name", `must be ${ID_RULE} (it is used in branch names)`],
    ["name too long", (d) => (d.name = "a".repeat(65)), "name", `must be ${ID_RULE} (it is used in branch names)`],
    [
      "name making invalid branch names",
      (d) => (d.name = "x.lock"),
      "name",
      `cannot be used in branch names: "loop/x.lock/item/<id>" has a component ending in '.lock'`,
    ],
    [
      "item id making an invalid item branch",
      (d) => (d.items[1].id = "b.lock"),
      "items[1].id",
      `"loop/api-backlog/item/b.lock" is not a valid git branch name: has a component ending in '.lock'`,
    ],
    ["missing items", (d) => delete d.items, "items", "required"],
    ["items not an array", (d) => (d.items = {}), "items", "must be an array of items"],
    ["item not an object", (d) => (d.items[1] = "b"), "items[1]", 'expected an object, got "b"'],
    [
      "unknown top-level key",
      (d) => (d.itmes = []),
      "itmes",
      'unknown key; did you mean "items"? (allowed: $schema, name, defaults, runners, control, sessions, workspace, forge, tracker, notify, protect, environment, reactions, budget, prices, guards, items, $comment)',
    ],
    [
      "unknown item key",
      (d) => (d.items[0].depends = []),
      "items[0].depends",
      'unknown key; did you mean "dependsOn"? (allowed: id, ref, prompt, dependsOn, verify, runner, model, maxAttempts, timeouts, reactions, budget, $comment)',
    ],
    // One problem, not two: the items' "no verify command and no default" would follow from the typo.
    [
      "defaults.verify misspelt",
      (d) => ((d.defaults.verfy = d.defaults.verify), delete d.defaults.verify),
      "defaults.verfy",
      'unknown key; did you mean "verify"? (allowed: runner, model, verify, maxAttempts, timeouts, landing, sandbox, network, verifyNetwork, budget, $comment)',
    ],
    [
      "a key far from any",
      (d) => (d.items[0].zzzzzz = 1),
      "items[0].zzzzzz",
      "unknown key (allowed: id, ref, prompt, dependsOn, verify, runner, model, maxAttempts, timeouts, reactions, budget, $comment)",
    ],
    [
      "unknown defaults key",
      (d) => (d.defaults.retries = 1),
      "defaults.retries",
      "unknown key (allowed: runner, model, verify, maxAttempts, timeouts, landing, sandbox, network, verifyNetwork, budget, $comment)",
    ],
    [
      "unknown timeouts key",
      (d) => (d.items[0].timeouts = { idle: "1m" }),
      "items[0].timeouts.idle",
      "unknown key (allowed: launch, stall, verify, landing, setup, $comment)",
    ],
    [
      "unknown workspace key",
      (d) => (d.workspace = { dir: "x" }),
      "workspace.dir",
      "unknown key (allowed: keepCheckoutOnClose, base, target, setup, setupNetwork, stacked, baseVerify, setupKey, $comment)",
    ],
    [
      "setupKey outside the repository",
      (d) => (d.workspace = { setup: "npm ci", setupKey: ["../x"] }),
      "workspace.setupKey[0]",
      "must be a path inside the repository (no leading /, no ..)",
    ],
    [
      "$schema inside an item",
      (d) => (d.items[0].$schema = "x"),
      "items[0].$schema",
      "unknown key (allowed: id, ref, prompt, dependsOn, verify, runner, model, maxAttempts, timeouts, reactions, budget, $comment)",
    ],
    ["$comment not a string", (d) => (d.$comment = 1), "$comment", '"$comment" must be a string'],
    ["invalid item id", (d) => (d.items[1].id = "A b"), "items[1].id", `must be ${ID_RULE}`],
    ["neither id nor ref", (d) => delete d.items[1].id, "items[1]", 'needs an "id" (or a "ref" to derive one from)'],
    ["duplicate id", (d) => d.items.push({ id: "a", prompt: "p" }), "items[2].id", 'duplicate id "a" (also items[0])'],
    [
      "invalid ref",
      (d) => (d.items[0].ref = "github:acme/../x#1"),
      "items[0].ref",
      `invalid work-item ref "github:acme/../x#1": path segment ".." must not contain '..'`,
    ],
    ["ref not a string", (d) => (d.items[0].ref = 42), "items[0].ref", "must be a string"],
    ["missing prompt", (d) => delete d.items[0].prompt, "items[0].prompt", "required"],
    ["empty prompt", (d) => (d.items[0].prompt = ""), "items[0].prompt", "must not be empty"],
    ["blank prompt", (d) => (d.items[0].prompt = " \n "), "items[0].prompt", "must not be empty"],
    ["unknown dependency", (d) => (d.items[1].dependsOn = ["x"]), "items[1].dependsOn[0]", 'unknown item "x"'],
    ["self dependency", (d) => (d.items[0].dependsOn = ["a"]), "items[0].dependsOn[0]", 'item "a" depends on itself'],
    ["duplicate dependency", (d) => (d.items[1].dependsOn = ["a", "a"]), "items[1].dependsOn[1]", 'duplicate dependency "a"'],
    ["dependsOn not an array", (d) => (d.items[1].dependsOn = "a"), "items[1].dependsOn", "must be an array of item ids"],
    ["dependsOn entry not a string", (d) => (d.items[1].dependsOn = [1]), "items[1].dependsOn[0]", "must be an item id"],
    ["dependency cycle", (d) => (d.items[0].dependsOn = ["b"]), "items[0].dependsOn", "dependency cycle a -> b -> a"],
    ["unknown item runner", (d) => (d.items[0].runner = "x"), "items[0].runner", `unknown runner "x" (known: ${RUNNERS})`],
    ["unknown default runner", (d) => (d.defaults.runner = "x"), "defaults.runner", `unknown runner "x" (known: ${RUNNERS})`],
    [
      "unknown runner lists declared ones",
      (d) => ((d.runners = { mine: { command: ["m"] } }), (d.items[0].runner = "x")),
      "items[0].runner",
      `unknown runner "x" (known: ${RUNNERS}, mine)`,
    ],
    ["runner name invalid", (d) => (d.runners = { "My Agent": { command: ["m"] } }), 'runners["My Agent"]', `runner names are ${ID_RULE}`],
    ["runner without command", (d) => (d.runners = { mine: {} }), "runners.mine.command", "required"],
    ["runner command empty", (d) => (d.runners = { mine: { command: [] } }), "runners.mine.command", "must name a program to run"],
    ["runner command a string", (d) => (d.runners = { mine: { command: "m" } }), "runners.mine.command", "must be an array of strings"],
    ["runner argument empty", (d) => (d.runners = { mine: { command: ["m", ""] } }), "runners.mine.command[1]", "must not be empty"],
    [
      "unknown placeholder",
      (d) => (d.runners = { mine: { command: ["m", "--p={promt}", "{}", '{"json":1}'] } }),
      "runners.mine.command[1]",
      "{promt} is not a placeholder (did you mean {prompt}?) (known: {prompt}, {handoff}, {workdir}, {model}, {session_id}; other brace text is left as it is)",
    ],
    ["no verify and no default", (d) => ((d.defaults = {}), (d.items[1].verify = false)), "items[0].verify", NO_VERIFY],
    ["defaults not an object", (d) => (d.defaults = []), "defaults", "expected an object, got an array"],
    ["item an array", (d) => (d.items[1] = []), "items[1]", "expected an object, got an array"],
    ["empty verify", (d) => (d.items[0].verify = ""), "items[0].verify", "must not be empty"],
    [
      "verify true",
      (d) => (d.items[0].verify = true),
      "items[0].verify",
      "must be a command string, or false to accept an agent exit 0 with a change on its branch",
    ],
    ["empty default verify", (d) => (d.defaults.verify = " "), "defaults.verify", "must not be empty"],
    [
      "verify null",
      (d) => (d.defaults.verify = null),
      "defaults.verify",
      "must be a command string, or false to accept an agent exit 0 with a change on its branch",
    ],
    ["empty model", (d) => (d.items[0].model = ""), "items[0].model", "must not be empty"],
    ["maxAttempts 0", (d) => (d.defaults.maxAttempts = 0), "defaults.maxAttempts", "must be an integer from 1 to 100"],
    ["maxAttempts 101", (d) => (d.items[0].maxAttempts = 101), "items[0].maxAttempts", "must be an integer from 1 to 100"],
    ["maxAttempts fraction", (d) => (d.items[0].maxAttempts = 1.5), "items[0].maxAttempts", "must be an integer from 1 to 100"],
    ["maxAttempts string", (d) => (d.items[0].maxAttempts = "2"), "items[0].maxAttempts", "must be an integer from 1 to 100"],
    [
      "bad default timeout",
      (d) => (d.defaults.timeouts = { stall: "1h30m" }),
      "defaults.timeouts.stall",
      'invalid duration "1h30m": expected an integer and one unit (ms, s, m, h, d), e.g. "90s" or "15m"',
    ],
    ["bad item timeout", (d) => (d.items[1].timeouts = { launch: 300 }), "items[1].timeouts.launch", 'must be a duration string such as "15m"'],
    ["zero timeout", (d) => (d.items[1].timeouts = { verify: "0m" }), "items[1].timeouts.verify", 'invalid duration "0m": must be greater than zero'],
    ["unknown landing", (d) => (d.defaults.landing = "push"), "defaults.landing", 'must be "none", "merge" or "pr"'],
    ["tmux not boolean", (d) => (d.sessions = { tmux: "yes" }), "sessions.tmux", "must be true or false"],
    ["requireStartCommand not boolean", (d) => (d.control = { requireStartCommand: 1 }), "control.requireStartCommand", "must be true or false"],
    ["keepCheckoutOnClose not boolean", (d) => (d.workspace = { keepCheckoutOnClose: null }), "workspace.keepCheckoutOnClose", "must be true or false"],
    [
      "base with space",
      (d) => (d.workspace = { base: "my branch" }),
      "workspace.base",
      '"my branch" is not a valid git branch name: contains whitespace or a control character',
    ],
    ["base with ..", (d) => (d.workspace = { base: "a..b" }), "workspace.base", `"a..b" is not a valid git branch name: contains '..'`],
    ["target with leading -", (d) => (d.workspace = { target: "-f" }), "workspace.target", `"-f" is not a valid git branch name: starts with '-'`],
    ["target with ~", (d) => (d.workspace = { target: "a~1" }), "workspace.target", '"a~1" is not a valid git branch name: contains one of ~ ^ : ? * [ \\'],
    [
      "target ending in /",
      (d) => (d.workspace = { target: "loop/" }),
      "workspace.target",
      `"loop/" is not a valid git branch name: has an empty path component (leading, trailing or double '/')`,
    ],
    [
      "target ending in .lock",
      (d) => (d.workspace = { target: "x.lock" }),
      "workspace.target",
      `"x.lock" is not a valid git branch name: has a component ending in '.lock'`,
    ],
    ["target equal to base", (d) => (d.workspace = { base: "dev", target: "dev" }), "workspace.target", 'must differ from the base branch "dev"'],
    ["target equal to default base", (d) => (d.workspace = { target: "main" }), "workspace.target", 'must differ from the base branch "main"'],
    ...(["loop/api-backlog/item/x", "loop/api-backlog/item/x/y", "loop/api-backlog/item", "loop/api-backlog", "loop"] as const).map(
      (target): [string, (d: any) => void, string, string] => [
        `target ${target}`,
        (d) => (d.workspace = { target }),
        "workspace.target",
        `"${target}" would collide with the item branches "loop/api-backlog/item/<id>"`,
      ],
    ),
    [
      "base under the item branches",
      (d) => (d.workspace = { base: "loop/api-backlog/item/a", target: "integration" }),
      "workspace.base",
      `"loop/api-backlog/item/a" would collide with the item branches "loop/api-backlog/item/<id>"`,
    ],
    [
      "base equal to the default target",
      (d) => (d.workspace = { base: "loop/api-backlog/landed" }),
      "workspace.base",
      'must differ from the merge target "loop/api-backlog/landed" (or set "workspace.target")',
    ],
    ...RESERVED_RUNNER_NAMES.map((name): [string, (d: any) => void, string, string] => [
      `runner named like the built-in ${name}`,
      (d) => ((d.runners = { mine: { command: ["m"] }, [name]: { command: [name, "{prompt}"] } }), (d.items[0].runner = name)),
      `runners.${name}`,
      `"${name}" is a built-in runner; pick another name`,
    ]),
    // valibot's record() skips these keys unchecked: without the rule the runner would vanish.
    ...["constructor", "prototype", "__proto__"].map((name): [string, (d: any) => void, string, string] => [
      `runner named ${name}`,
      (d) => (d.runners = JSON.parse(`{"mine":{"command":["m"]},${JSON.stringify(name)}:{"command":5,"bogus":true}}`)),
      `runners.${name}`,
      `"${name}" cannot be a runner name; pick another`,
    ]),
  ];

  test.each(cases)("%s", (_name, mutate, path, message) => {
    const raw = valid();
    mutate(raw);
    expect(issuesOf(raw)).toEqual([{ path, message }]);
  });

  test("duplicate canonical refs", () => {
    const raw = valid();
    raw.items[0].ref = "github:acme/api#42";
    raw.items[1].ref = "github:github.com/acme/api#042";
    expect(issuesOf(raw)).toEqual([{ path: "items[1].ref", message: 'duplicate ref "github:acme/api#42" (also items[0])' }]);
  });

  test("a derived id colliding with an explicit one names both items", () => {
    const raw = valid();
    raw.items[0].id = "api-42";
    raw.items[1] = { ref: "github:acme/api#42", prompt: "p" };
    expect(issuesOf(raw)).toEqual([
      {
        path: "items[1].ref",
        message: 'id "api-42" (derived from ref "github:acme/api#42") collides with items[0] (explicit id); give one of them an explicit "id"',
      },
    ]);
  });

  test("two refs deriving the same id", () => {
    const raw = valid();
    raw.items = [
      { ref: "github:acme/api#42", prompt: "p" },
      { ref: "github:other/api#42", prompt: "p" },
    ];
    expect(issuesOf(raw)).toEqual([
      {
        path: "items[1].ref",
        message:
          'id "api-42" (derived from ref "github:other/api#42") collides with items[0] (derived from ref "github:acme/api#42"); give one of them an explicit "id"',
      },
    ]);
  });

  test("an explicit id colliding with a derived one", () => {
    const raw = valid();
    raw.items = [
      { ref: "github:acme/api#42", prompt: "p" },
      { id: "api-42", prompt: "p" },
    ];
    expect(issuesOf(raw)).toEqual([
      {
        path: "items[1].id",
        message: 'id "api-42" (explicit id) collides with items[0] (derived from ref "github:acme/api#42"); give one of them an explicit "id"',
      },
    ]);
  });

  test("a longer cycle is reported with its path", () => {
    const raw = valid();
    raw.items = ["a", "b", "c", "d"].map((id) => ({ id, prompt: "p" }));
    raw.items[0].dependsOn = ["d"];
    raw.items[3].dependsOn = ["c"];
    raw.items[2].dependsOn = ["a"];
    expect(issuesOf(raw)).toEqual([{ path: "items[0].dependsOn", message: "dependency cycle a -> d -> c -> a" }]);
  });

  test.each([[null], [[]], ["loop"], [3]])("root %p is not an object", (raw) => {
    expect(issuesOf(raw)).toEqual([{ path: "", message: expect.stringMatching(/^expected an object/) }]);
  });

  test("a __proto__ key is an unknown key, not a prototype", () => {
    const issues = textIssues('{"name":"x","items":[],"__proto__":{"name":"y"}}');
    expect(issues).toEqual([{ path: "__proto__", message: expect.stringMatching(/^unknown key/) }]);
  });

  test("the error message has one line per issue, prefixed with the file", () => {
    const raw = valid();
    raw.items[1].dependsOn = ["x"];
    raw.items[0].runner = "nope";
    let err: unknown;
    try {
      normalizeDefinition(raw, "conf/loop.json");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DefinitionError);
    expect((err as DefinitionError).file).toBe("conf/loop.json");
    expect((err as Error).message).toBe(
      [
        `conf/loop.json: items[0].runner: unknown runner "nope" (known: claude, codex, gemini, opencode, aider, demo)`,
        `conf/loop.json: items[1].dependsOn[0]: unknown item "x"`,
      ].join("\n"),
    );
  });
});

describe("every problem at once", () => {
  test("shape and meaning problems are reported together, grouped by item", () => {
    const raw = {
      name: "Bad Name",
      extra: true,
      defaults: { maxAttempts: 0, timeouts: { launch: "soon" } },
      runners: { mine: { command: ["x", "{modle}"] } },
      items: [
        { id: "a", prompt: "", dependsOn: ["ghost", "b"] },
        { id: "b", prompt: "p", dependsOn: ["a"], runner: "zzz", verify: false },
        { id: "a", prompt: "p", verify: "" },
        { ref: "not a ref", prompt: "p", verify: false },
        { prompt: "p", verify: false },
      ],
    };
    expect(issuesOf(raw).map((i) => i.path)).toEqual([
      "name",
      "defaults.maxAttempts",
      "defaults.timeouts.launch",
      "runners.mine.command[1]",
      "extra",
      "items[0].prompt",
      "items[0].verify",
      "items[0].dependsOn[0]",
      "items[0].dependsOn",
      "items[1].runner",
      "items[2].verify",
      "items[2].id",
      "items[3].ref",
      "items[4]",
    ]);
  });

  test("a malformed section does not hide problems elsewhere or cause spurious ones", () => {
    const raw = valid();
    raw.defaults = { verify: 3 }; // malformed default verify: no "missing verify" noise on the items
    raw.items[0].id = 7; // malformed id
    raw.items[1].dependsOn = ["zz"];
    expect(issuesOf(raw)).toEqual([
      { path: "defaults.verify", message: expect.any(String) },
      { path: "items[0].id", message: "must be a string" },
      { path: "items[1].dependsOn[0]", message: 'unknown item "zz"' },
    ]);
  });
});

describe("loop.json text", () => {
  const text = [
    "// loop.json: the backlog",
    "{",
    '  "$schema": "./schema/loop.schema.json",',
    '  "name": "x",',
    "  // every item inherits this",
    '  "defaults": { "verify": "bun test" },',
    '  "items": [',
    "     // the first item",
    '    { "id": "a", "prompt": "see http://example.com // not a comment", "$comment": "kept out" }',
    "  ]",
    "}",
    "",
  ].join("\r\n");

  test("full-line // comments and $comment keys are ignored", () => {
    const def = parseDefinitionText(text);
    expect(def.items).toEqual([
      {
        id: "a",
        ref: null,
        prompt: "see http://example.com // not a comment",
        dependsOn: [],
        verify: "bun test",
        runner: "demo",
        model: null,
        maxAttempts: 2,
        timeouts: DEFAULT_TIMEOUTS,
      },
    ]);
  });

  test("a leading byte-order mark is ignored", () => {
    expect(parseDefinitionText(`\uFEFF${text}`).name).toBe("x");
  });

  test.each([
    [
      '{"name": "x", "items": [] // trailing\n}',
      "invalid JSON at line 1, column 27: expected ',' or '}', found \"/\" (only full-line // comments are supported)",
    ],
    ['{\n  "name": "x",\n  "items": [1,]\n}', 'invalid JSON at line 3, column 15: expected a value, found "]" (trailing commas are not allowed)'],
    ['{"name": "x", "items": [],}', 'invalid JSON at line 1, column 27: expected a string key, found "}" (trailing commas are not allowed)'],
    ["{'name': 'x'}", 'invalid JSON at line 1, column 2: expected a string key, found "\'"'],
    ['{"name": "x"', "invalid JSON at line 1, column 13: expected ',' or '}', found end of file"],
    ["", "invalid JSON at line 1, column 1: expected a value, found end of file"],
    ['{"name": "x", "items": []} {}', 'invalid JSON at line 1, column 28: expected end of file after the document, found "{"'],
    ['{"name": "a\tb"}', "invalid JSON at line 1, column 10: expected a complete string (control characters must be escaped), found '\"'"],
    ['{"name": "\\ud800", "items": []}', "invalid JSON at line 1, column 10: expected a string without unpaired surrogate escapes, found '\"'"],
    ['{"n": 01}', 'invalid JSON at line 1, column 7: expected a value, found "0"'],
  ])("syntax error in %p", (input, message) => {
    expect(textIssues(input)).toEqual([{ path: "", message: message.replaceAll("'\"'", JSON.stringify('"')) }]);
  });

  test("deep nesting is a syntax error, not a crash", () => {
    const issues = textIssues("[".repeat(10_000));
    expect(issues[0]!.message).toContain("levels of nesting");
  });

  test("duplicate keys are reported with the other problems", () => {
    const issues = textIssues('{"name": "x", "items": [{"id": "a", "prompt": "p", "verify": "one", "verify": "two", "runner": "nope"}], "name": "x"}');
    expect(issues).toEqual([
      { path: "name", message: "duplicate key" },
      { path: "items[0].verify", message: "duplicate key" },
      { path: "items[0].runner", message: `unknown runner "nope" (known: ${KNOWN_RUNNERS.join(", ")})` },
    ]);
  });
});

describe("parseStrictJson (lib/definition/json-strict.ts)", () => {
  test("parses like JSON.parse where both accept", () => {
    const text = '{"a": [1, -2.5e3, true, false, null, "s\\u00e9\\n"], "b": {}, "c": [], "d": "\\ud83d\\ude00"}';
    expect(parseStrictJson(text)).toEqual({ value: JSON.parse(text), duplicates: [] });
  });

  test("strips a byte-order mark and full-line // comments, keeping line numbers", () => {
    expect(parseStrictJson('\uFEFF// head\n{\n  // "a": 1,\n  "b": "// kept"\n}').value).toEqual({ b: "// kept" });
    let err: unknown;
    try {
      parseStrictJson("// one\n// two\n{ x }");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(JsonSyntaxError);
    expect(err).toMatchObject({ line: 3, column: 3 });
    expect((err as Error).message).toBe('invalid JSON at line 3, column 3: expected a string key, found "x"');
  });

  test("reports each repeated key at its path, keeping the last value", () => {
    const parsed = parseStrictJson('{"a": 1, "a": 2, "l": [{"k": 1, "k": 2}], "s p": {"x": 0, "x": 0}, "a": 3}');
    expect(parsed.duplicates).toEqual(["a", "l[0].k", '["s p"].x', "a"]);
    expect(parsed.value).toEqual({ a: 3, l: [{ k: 2 }], "s p": { x: 0 } });
  });

  test.each(['"\\ud800"', '"\\udc00x"', '"\\ude00\\ud83d"', '{"\\ud800": 1}'])("rejects the lone surrogate in %s", (text) => {
    expect(() => parseStrictJson(text)).toThrow("expected a string without unpaired surrogate escapes");
  });

  test("a string of several megabytes is a string, plain or full of escapes (docs/loop-json.md#the-file; it was once 'expected a complete string')", () => {
    const plain = "p".repeat(3_000_000);
    const escaped = 'a\\"\u00e9\n'.repeat(400_000);
    const text = JSON.stringify({
      name: "big",
      items: [
        { id: "a", prompt: plain },
        { id: "b", prompt: escaped },
      ],
    });
    expect(parseStrictJson(text).value).toEqual(JSON.parse(text));
    // And one that never closes is still said to be incomplete, at its opening quote.
    expect(() => parseStrictJson(`{"a": "${plain}`)).toThrow(
      'invalid JSON at line 1, column 7: expected a complete string (control characters must be escaped), found "\\""',
    );
  });

  test("a __proto__ key is an own key", () => {
    const value = parseStrictJson('{"__proto__": {"polluted": true}}').value as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test("formatJsonPath", () => {
    expect(formatJsonPath([])).toBe("");
    expect(formatJsonPath(["items", 3, "dependsOn", 0])).toBe("items[3].dependsOn[0]");
    expect(formatJsonPath(["runners", "My Agent", "command"])).toBe('runners["My Agent"].command');
    expect(formatJsonPath([0, "$schema"])).toBe("[0].$schema");
  });
});

describe("loadDefinition", () => {
  const withRoot = (fn: (root: string) => void) => {
    const root = mkdtempSync(join(tmpdir(), "loop-def-"));
    try {
      fn(root);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  };

  test("reads <root>/loop.json", () =>
    withRoot((root) => {
      writeFileSync(join(root, "loop.json"), JSON.stringify(valid()));
      expect(loadDefinition(root).items.map((i) => i.id)).toEqual(["a", "b"]);
    }));

  test("a missing file is a DefinitionError naming the root", () =>
    withRoot((root) => {
      expect(() => loadDefinition(root)).toThrow(DefinitionError);
      expect(() => loadDefinition(root)).toThrow(`loop.json: not found in ${root} (create one with "loop init")`);
    }));

  test("invalid UTF-8 is a DefinitionError", () =>
    withRoot((root) => {
      writeFileSync(join(root, "loop.json"), Buffer.from([0x7b, 0xff, 0x7d]));
      expect(() => loadDefinition(root)).toThrow("loop.json: is not valid UTF-8");
    }));

  test("validation problems carry the file name", () =>
    withRoot((root) => {
      writeFileSync(join(root, "loop.json"), '{"name": "x", "items": [{"id": "a", "prompt": "p", "dependsOn": ["x"], "verify": false}]}');
      expect(() => loadDefinition(root)).toThrow('loop.json: items[0].dependsOn[0]: unknown item "x"');
    }));
});

describe("definitionHash", () => {
  const a = '{"name": "x", "defaults": {"verify": "t", "maxAttempts": 3}, "items": [{"id": "a", "prompt": "p", "runner": "codex"}]}';
  const b = '{"items": [{"runner": "codex", "prompt": "p", "id": "a"}], "defaults": {"maxAttempts": 3, "verify": "t"}, "name": "x"}';

  test("is sha256 hex, stable under key reordering", () => {
    const h = definitionHash(parseDefinitionText(a));
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(definitionHash(parseDefinitionText(b))).toBe(h);
  });

  test("is equal for spellings that normalize the same", () => {
    const explicit = a.replace('"runner": "codex"', '"runner": "codex", "maxAttempts": 3, "timeouts": {"stall": "1h"}');
    expect(definitionHash(parseDefinitionText(explicit))).toBe(definitionHash(parseDefinitionText(a)));
  });

  test.each([
    ["prompt", a.replace('"prompt": "p"', '"prompt": "q"')],
    ["runner", a.replace('"codex"', '"aider"')],
    ["default", a.replace('"maxAttempts": 3', '"maxAttempts": 4')],
    ["name", a.replace('"name": "x"', '"name": "y"')],
    ["timeout", a.replace('"verify": "t"', '"verify": "t", "timeouts": {"verify": "16m"}')],
  ])("changes with the %s", (_what, changed) => {
    expect(definitionHash(parseDefinitionText(changed))).not.toBe(definitionHash(parseDefinitionText(a)));
  });
});

describe("branchNameProblem", () => {
  test.each(["main", "loop/api-backlog", "feature/x.y", "release-1.2"])("%p is valid", (name) => expect(branchNameProblem(name)).toBeUndefined());
  test.each(["", "a b", "a..b", "-a", "a~", "a^", "a:b", "a?", "a*", "a[", "a\\b", "a/", "/a", "a//b", "a.lock", "a.", ".a", "a/.b", "@", "a@{b", "a\tb"])(
    "%p is rejected",
    (name) => expect(branchNameProblem(name)).toContain("is not a valid git branch name"),
  );
});

describe("JSON Schema", () => {
  const schema = JSON.parse(readFileSync(join(import.meta.dir, "..", "..", "schema", "loop.schema.json"), "utf8"));
  const keys = (obj: { properties?: object }) => Object.keys(obj.properties ?? {}).sort();

  test("is draft 2020-12 and closed at every level", () => {
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    for (const obj of [schema, ...Object.values(schema.properties), ...Object.values(schema.$defs)] as any[])
      if (obj.type === "object" && obj.properties) expect(obj.additionalProperties).toBe(false);
  });

  test.each([
    ["definition", () => schema],
    ["defaults", () => schema.$defs.defaults],
    ["timeouts", () => schema.$defs.timeouts],
    ["runner", () => schema.$defs.runner],
    ["item", () => schema.$defs.item],
    ["control", () => schema.properties.control],
    ["sessions", () => schema.properties.sessions],
    ["workspace", () => schema.properties.workspace],
    ["forge", () => schema.properties.forge],
    ["tracker", () => schema.properties.tracker],
    ["moveTo", () => schema.properties.tracker.properties.moveTo],
    ["notify", () => schema.properties.notify],
    ["channel", () => schema.$defs.channel],
    ["environment", () => schema.properties.environment],
    ["reactions", () => schema.$defs.reactions],
    ["budget", () => schema.$defs.budget],
    ["loopBudget", () => schema.properties.budget],
    ["daily", () => schema.$defs.budget],
    ["price", () => schema.properties.prices.additionalProperties],
    ["guards", () => schema.properties.guards],
  ])("%s keys match the validator", (section, get) => {
    expect(keys(get())).toEqual([...ACCEPTED_KEYS[section]!].sort());
  });

  test("covers every section the validator has", () => {
    expect(Object.keys(ACCEPTED_KEYS).sort()).toEqual([
      "budget",
      "channel",
      "control",
      "daily",
      "defaults",
      "definition",
      "environment",
      "forge",
      "guards",
      "item",
      "loopBudget",
      "moveTo",
      "notify",
      "price",
      "reactions",
      "runner",
      "sessions",
      "timeouts",
      "tracker",
      "workspace",
    ]);
  });

  test("every property has a description or a $ref to one", () => {
    const missing: string[] = [];
    const walk = (obj: any, at: string) => {
      for (const [k, p] of Object.entries<any>(obj.properties ?? {})) {
        if (k === "$comment") continue;
        const target = p.$ref ? schema.$defs[p.$ref.split("/").pop()] : undefined;
        if (!p.description && !target?.description) missing.push(`${at}.${k}`);
      }
    };
    walk(schema, "");
    for (const [name, def] of Object.entries<any>(schema.$defs)) walk(def, name);
    walk(schema.properties.control, "control");
    walk(schema.properties.sessions, "sessions");
    walk(schema.properties.workspace, "workspace");
    walk(schema.properties.forge, "forge");
    walk(schema.properties.tracker, "tracker");
    expect(missing).toEqual([]);
  });

  test("describes the branch names and reserves the built-in runner names", () => {
    expect(schema.properties.workspace.properties.target.description).toContain("`loop/<name>/landed`");
    expect(schema.properties.workspace.properties.target.description).toContain("`loop/<name>/item/`");
    expect(schema.properties.runners.propertyNames.not.enum).toEqual([...RESERVED_RUNNER_NAMES]);
  });

  test("its patterns agree with the validator on ids and durations", () => {
    const id = new RegExp(schema.$defs.id.pattern);
    for (const s of ["a", "fix-login", "a.b_c", "api-42"]) expect(id.test(s)).toBe(true);
    for (const s of ["A", "-a", "a..b", "a_"]) expect(id.test(s)).toBe(false);
    const duration = new RegExp(schema.$defs.duration.pattern);
    for (const s of ["500ms", "90s", "15m", "2h", "1d"]) expect(duration.test(s)).toBe(true);
    for (const s of ["1.5h", "5", "1h30m"]) expect(duration.test(s)).toBe(false);
  });
});

describe("the forge section", () => {
  const base = () => ({
    name: "x",
    defaults: { verify: "true", landing: "pr" },
    forge: { provider: "github", repo: "acme/api" },
    items: [{ ref: "github:acme/api#42", prompt: "p" }],
  });
  test("defaults: api.github.com, origin, GITHUB_TOKEN, nobody authorized, 60s; landing timeout 30m on every item", () => {
    const def = normalizeDefinition(base());
    expect(def.forge).toEqual({
      provider: "github",
      repo: "acme/api",
      apiUrl: "https://api.github.com",
      remote: "origin",
      tokenEnv: "GITHUB_TOKEN",
      authorizedUsers: [],
      authorizeWriters: false,
      pollInterval: 60_000,
    });
    expect(def.landing).toBe("pr");
    expect(def.items[0]!.timeouts.landing).toBe(30 * 60_000);
  });
  test("a loop without a forge normalizes as before: no forge key, no landing timeout", () => {
    const def = normalizeDefinition({ name: "x", defaults: { verify: "true" }, items: [{ id: "a", prompt: "p" }] });
    expect("forge" in def).toBe(false);
    expect("landing" in def.items[0]!.timeouts).toBe(false);
  });
  const bad: [string, (d: any) => void, string, string][] = [
    ["pr without a forge", (d) => delete d.forge, "defaults.landing", 'needs a "forge" section'],
    ["a ref of another repository", (d) => (d.items[0].ref = "github:acme/web#1"), "items[0].ref", "is not an issue of the forge's repository"],
    ["a ref of another provider", (d) => (d.items[0].ref = "gitlab:acme/api#1"), "items[0].ref", "is not an issue of the forge's repository"],
    ["a ref on another host", (d) => (d.items[0].ref = "github:ghe.example.com/acme/api#1"), "items[0].ref", "is not an issue"],
    ["a token in place of its variable's name", (d) => (d.forge.tokenEnv = "ghp_abc-123"), "forge.tokenEnv", "name of an environment variable"],
    ["credentials in apiUrl", (d) => (d.forge.apiUrl = "https://u:p@api.github.com"), "forge.apiUrl", "must not hold credentials"],
    ["plain http to another host", (d) => (d.forge.apiUrl = "http://example.com"), "forge.apiUrl", "must be https"],
    ["a repo without owner", (d) => (d.forge.repo = "api"), "forge.repo", "<owner>/<repo>"],
    ["an unknown provider", (d) => (d.forge.provider = "gitea"), "forge.provider", '"github" or "gitlab"'],
    ["a nested path on GitHub", (d) => (d.forge.repo = "acme/platform/api"), "forge.repo", '"<owner>/<repo>" for github'],
    ["a GitLab username as a GitHub login", (d) => (d.forge.authorizedUsers = ["jane.doe"]), "forge.authorizedUsers[0]", "a GitHub login"],
    ["a login of neither forge", (d) => (d.forge.authorizedUsers = ["K\u212Aate"]), "forge.authorizedUsers[0]", "must be a forge login"],
    ["an unknown key", (d) => (d.forge.token = "x"), "forge.token", "unknown key"],
    ["credentials in gitUrl", (d) => (d.forge.gitUrl = "https://x-access-token:ghp_1@github.com/acme/api.git"), "forge.gitUrl", "must not hold credentials"],
    ["a user name in an https gitUrl", (d) => (d.forge.gitUrl = "https://bot@github.com/acme/api.git"), "forge.gitUrl", "must not hold credentials"],
    ["a transport helper in gitUrl", (d) => (d.forge.gitUrl = "ext::sh -c evil"), "forge.gitUrl", "must be an https or ssh URL"],
    ["an option as gitUrl", (d) => (d.forge.gitUrl = "--upload-pack=evil"), "forge.gitUrl", "must be an https or ssh URL"],
    ["an option as the ssh host of gitUrl", (d) => (d.forge.gitUrl = "-oProxyCommand=evil:acme/api.git"), "forge.gitUrl", "must be an https or ssh URL"],
    ["plain http to another host in gitUrl", (d) => (d.forge.gitUrl = "http://github.com/acme/api.git"), "forge.gitUrl", "must be an https or ssh URL"],
    ["a relative path as gitUrl", (d) => (d.forge.gitUrl = "../api.git"), "forge.gitUrl", "must be an https or ssh URL"],
  ];
  test.each([
    "https://github.com/acme/api.git",
    "git@github.com:acme/api.git",
    "ssh://git@github.com:22/acme/api.git",
    "http://127.0.0.1:8080/acme/api.git",
    "/srv/mirrors/api.git",
    "file:///srv/mirrors/api.git",
  ])("gitUrl %s is accepted and kept; without one the definition is as before", (gitUrl) => {
    const d: any = base();
    d.forge.gitUrl = gitUrl;
    expect(normalizeDefinition(d).forge!.gitUrl).toBe(gitUrl);
    expect("gitUrl" in normalizeDefinition(base()).forge!).toBe(false);
  });
  test.each(bad)("%s is refused", (_, edit, path, message) => {
    const d = base();
    edit(d);
    try {
      normalizeDefinition(d);
      throw new Error("accepted");
    } catch (e: any) {
      expect(e.issues.some((i: any) => i.path === path && i.message.includes(message))).toBe(true);
    }
  });
  test("GitLab: gitlab.com/api/v4 and GITLAB_TOKEN by default; the project's full path with nested groups; refs without the host; usernames with '.' and '_'", () => {
    const def = normalizeDefinition({
      name: "x",
      defaults: { verify: "true", landing: "pr" },
      forge: { provider: "gitlab", repo: "acme/platform/api", authorizedUsers: ["jane.doe", "bot_1"] },
      items: [
        { ref: "gitlab:acme/platform/api#42", prompt: "p" },
        { ref: "gitlab:gitlab.com/acme/platform/api#43", prompt: "q" },
      ],
    });
    expect(def.forge).toEqual({
      provider: "gitlab",
      repo: "acme/platform/api",
      apiUrl: "https://gitlab.com/api/v4",
      remote: "origin",
      tokenEnv: "GITLAB_TOKEN",
      authorizedUsers: ["jane.doe", "bot_1"],
      authorizeWriters: false,
      pollInterval: 60_000,
    });
    expect(def.items.map((i) => [i.id, i.ref])).toEqual([
      ["api-42", "gitlab:acme/platform/api#42"],
      ["api-43", "gitlab:acme/platform/api#43"],
    ]);
  });
  test.each([
    ["a ref of the parent group's project", "gitlab:acme/api#1", "must be gitlab:acme/platform/api#<number>"],
    ["a self-managed ref against gitlab.com", "gitlab:git.example.com/acme/platform/api#1", "must be gitlab:acme/platform/api#<number>"],
    ["a GitHub ref", "github:acme/platform#1", "must be gitlab:acme/platform/api#<number>"],
  ])("GitLab: %s is refused", (_, ref, message) => {
    try {
      normalizeDefinition({ name: "x", defaults: { verify: "true" }, forge: { provider: "gitlab", repo: "acme/platform/api" }, items: [{ ref, prompt: "p" }] });
      throw new Error("accepted");
    } catch (e: any) {
      expect(e.issues.some((i: any) => i.path === "items[0].ref" && i.message.includes(message))).toBe(true);
    }
  });
  test("a self-managed GitLab: refs name the apiUrl's host and port", () => {
    const def = normalizeDefinition({
      name: "x",
      defaults: { verify: "true" },
      forge: { provider: "gitlab", repo: "team/app", apiUrl: "https://git.corp.example:8443/api/v4" },
      items: [{ ref: "gitlab:git.corp.example:8443/team/app#5", prompt: "p" }],
    });
    expect(def.forge!.apiUrl).toBe("https://git.corp.example:8443/api/v4");
  });
  test("GitHub Enterprise Server: refs name the apiUrl's host", () => {
    const d: any = base();
    d.forge.apiUrl = "https://ghe.example.com/api/v3/";
    d.items[0].ref = "github:ghe.example.com/acme/api#3";
    expect(normalizeDefinition(d).forge!.apiUrl).toBe("https://ghe.example.com/api/v3");
  });
});

describe("notify", () => {
  test("a command, with the default timeout; absent means null", () => {
    expect(normalizeDefinition({ name: "x", notify: { command: ["mail", "-s", "loop", "ops@example.com"] }, items: [] }).notify).toEqual({
      command: ["mail", "-s", "loop", "ops@example.com"],
      timeout: 30_000,
      channels: [],
      pageUrl: null,
    });
    expect(normalizeDefinition({ name: "x", notify: { command: ["x"], timeout: "2m" }, items: [] }).notify!.timeout).toBe(2 * MIN);
    expect(normalizeDefinition({ name: "x", items: [] }).notify).toBeNull();
  });

  test("a runner's brace text other than a placeholder is left as it is (curl's %{http_code}, ${HOME}, {PROMPT}); a typo of one is refused", () => {
    const command = ["sh", "-c", "curl -w '%{http_code}' \"${HOME}\" {PROMPT} { prompt } {other}", "{prompt}"];
    expect(normalizeDefinition({ name: "x", runners: { mine: { command } }, items: [] }).runners.mine!.command).toEqual(command);
    expect(issuesOf({ name: "x", runners: { mine: { command: ["m", "--model={modle}"] } }, items: [] })).toContainEqual({
      path: "runners.mine.command[1]",
      message:
        "{modle} is not a placeholder (did you mean {model}?) (known: {prompt}, {handoff}, {workdir}, {model}, {session_id}; other brace text is left as it is)",
    });
  });

  test("braces are literal (a jq program), never placeholders", () => {
    const def = normalizeDefinition({ name: "x", notify: { command: ["sh", "-c", "jq '{text: .subject}' | curl -d @- \"$HOOK\""] }, items: [] });
    expect(def.notify!.command![2]).toContain("{text: .subject}");
  });

  test.each([
    ["an empty command", { command: [] }, "notify.command", "must name a program to run"],
    ["an empty argument", { command: ["x", ""] }, "notify.command[1]", "must not be empty"],
    ["not an array", { command: "mail" }, "notify.command", "must be an array of strings"],
    ["a timeout over 5m", { command: ["x"], timeout: "10m" }, "notify.timeout", "must be at most 5m (the step waits for it)"],
    ["a zero timeout", { command: ["x"], timeout: "0s" }, "notify.timeout", 'invalid duration "0s": must be greater than zero'],
    ["an unknown key", { command: ["x"], on: ["failed"] }, "notify.on", "unknown key (allowed: command, timeout, channels, pageUrl, $comment)"],
    ["neither a command nor a channel", {}, "notify", 'must have a "command" or at least one of "channels"'],
    ["no channel", { channels: [] }, "notify", 'must have a "command" or at least one of "channels"'],
    [
      "an unknown kind",
      { channels: [{ kind: "discord", url: "https://x.example/h" }] },
      "notify.channels[0].kind",
      'must be one of "webhook", "slack", "ntfy"',
    ],
    [
      "neither url nor urlFrom",
      { channels: [{ kind: "slack" }] },
      "notify.channels[0]",
      'must have one of "url" (the address) or "urlFrom" (the variable that holds it)',
    ],
    [
      "both url and urlFrom",
      { channels: [{ kind: "slack", url: "https://x.example/h", urlFrom: "HOOK" }] },
      "notify.channels[0]",
      'must have one of "url" (the address) or "urlFrom" (the variable that holds it)',
    ],
    [
      "plain http elsewhere",
      { channels: [{ kind: "webhook", url: "http://hooks.example.com/x" }] },
      "notify.channels[0].url",
      "must be https (http only to 127.0.0.1 or localhost)",
    ],
    [
      "credentials in the url",
      { channels: [{ kind: "webhook", url: "https://u:p@hooks.example.com/x" }] },
      "notify.channels[0].url",
      "must not hold credentials (put a secret address in a variable and name it in urlFrom)",
    ],
    [
      "a secret on slack",
      { channels: [{ kind: "slack", urlFrom: "HOOK", secretFrom: "KEY" }] },
      "notify.channels[0]",
      `"secretFrom" signs a webhook's body: slack and ntfy take none`,
    ],
    [
      "a variable that is not a name",
      { channels: [{ kind: "webhook", urlFrom: "$HOOK" }] },
      "notify.channels[0].urlFrom",
      "must be an environment variable name (the value stays out of loop.json)",
    ],
    [
      "an unknown event",
      { channels: [{ kind: "ntfy", url: "https://ntfy.sh/t", events: ["done"] }] },
      "notify.channels[0].events[0]",
      'must be one of "attention", "passed", "failed", "landed", "budget_80", "budget_100", "review"',
    ],
    [
      "no events",
      { channels: [{ kind: "ntfy", url: "https://ntfy.sh/t", events: [] }] },
      "notify.channels[0].events",
      "must name at least one event (leave it out for all)",
    ],
    [
      "a timeout over 30s",
      { channels: [{ kind: "ntfy", url: "https://ntfy.sh/t", timeout: "1m" }] },
      "notify.channels[0].timeout",
      "must be at most 30s (a send never holds a step longer)",
    ],
    [
      "a page address that is not one",
      { command: ["x"], pageUrl: "loop.example.com" },
      "notify.pageUrl",
      "must be an http or https address (the loop's page, as people open it)",
    ],
  ])("%s", (_name, notify, path, message) => {
    expect(issuesOf({ name: "x", notify, items: [] })).toContainEqual({ path, message });
  });

  test("channels: each named by its kind and place, every event unless it names some, 10s to send (docs/operations.md#notification-channels)", () => {
    const def = normalizeDefinition({
      name: "x",
      notify: {
        channels: [
          { kind: "slack", urlFrom: "SLACK_HOOK" },
          { kind: "webhook", url: "https://hooks.example.com/loop", secretFrom: "HOOK_KEY", events: ["failed", "attention", "failed"], timeout: "3s" },
        ],
        pageUrl: "https://loop.example.com/loops/x/",
      },
      items: [],
    });
    expect(def.notify).toEqual({
      command: null,
      timeout: 30_000,
      channels: [
        {
          id: "slack-1",
          kind: "slack",
          url: null,
          urlFrom: "SLACK_HOOK",
          secretFrom: null,
          events: ["attention", "passed", "failed", "landed", "budget_80", "budget_100", "review"],
          timeout: 10_000,
        },
        {
          id: "webhook-2",
          kind: "webhook",
          url: "https://hooks.example.com/loop",
          urlFrom: null,
          secretFrom: "HOOK_KEY",
          events: ["failed", "attention"],
          timeout: 3_000,
        },
      ],
      pageUrl: "https://loop.example.com/loops/x/",
    });
  });

  test("is not part of the imported definition's identity: changing it re-imports nothing", () => {
    const a = normalizeDefinition({ name: "x", items: [] });
    const b = normalizeDefinition({ name: "x", notify: { command: ["x"] }, items: [] });
    expect(definitionHash(a)).toBe(definitionHash(b));
  });
});

describe("protect", () => {
  test("globs are kept once each, in order; absent or empty leaves the definition (and its hash) as before", () => {
    expect(normalizeDefinition({ name: "x", protect: ["tests/**", "ci/*.sh", "tests/**"], items: [] }).protect).toEqual(["tests/**", "ci/*.sh"]);
    const plain = normalizeDefinition({ name: "x", items: [] });
    expect("protect" in plain).toBe(false);
    expect(definitionHash(normalizeDefinition({ name: "x", protect: [], items: [] }))).toBe(definitionHash(plain));
    expect(definitionHash(normalizeDefinition({ name: "x", protect: ["a"], items: [] }))).not.toBe(definitionHash(plain));
  });

  test.each([
    ["not an array", "tests/**", "protect", "must be an array of globs"],
    ["not a string", [3], "protect[0]", "must be a string (a glob)"],
    ["empty", ["tests/**", ""], "protect[1]", "must not be empty"],
    ["absolute", ["/srv/api/tests"], "protect[0]", "must be relative to the repository's top level (no leading '/')"],
    ["a negation", ["!tests/keep.ts"], "protect[0]", "must not start with '!': protect only adds paths (the built-in ones always hold)"],
    ["a parent segment", ["../other"], "protect[0]", "must not contain '.' or '..' segments (paths are as git prints them, from the repository's top level)"],
    ["an unclosed bracket", ["tests/[ab.ts"], "protect[0]", "has a '[' without its ']' (write '\\[' for a literal bracket)"],
  ])("%s is refused at its path", (_name, protect, path, message) => {
    expect(issuesOf({ name: "x", protect, items: [] })).toEqual([{ path, message }]);
  });
});

describe("sandbox", () => {
  const runners = { mine: { command: ["m"] }, boxed: { command: ["b"], sandbox: "bwrap" }, open: { command: ["o"], sandbox: "none" } };
  const items = ["claude", "mine", "boxed", "open"].map((runner) => ({ id: runner, prompt: "p", verify: "true", runner }));

  test("none by default: no item carries a sandbox, and the definition (and its hash) is as before", () => {
    const def = normalizeDefinition({ name: "x", runners, items });
    expect(def.items.map((it) => it.sandbox ?? "none")).toEqual(["none", "none", "bwrap", "none"]);
    const { boxed: _boxed, ...unboxed } = runners;
    const plain = normalizeDefinition({ name: "x", runners: unboxed, items: items.filter((it) => it.runner !== "boxed") });
    expect(plain.items.every((it) => !("sandbox" in it))).toBe(true);
    expect(
      definitionHash(normalizeDefinition({ name: "x", defaults: { sandbox: "none" }, runners: unboxed, items: items.filter((it) => it.runner !== "boxed") })),
    ).toBe(definitionHash(plain));
  });

  test("defaults.sandbox applies to the presets and to runners without their own; a runner's own wins", () => {
    const def = normalizeDefinition({ name: "x", defaults: { sandbox: "bwrap" }, runners, items });
    expect(def.items.map((it) => it.sandbox ?? "none")).toEqual(["bwrap", "bwrap", "bwrap", "none"]);
    expect(def.runners.boxed).toEqual({ command: ["b"] });
  });

  test.each([
    ["defaults", { defaults: { sandbox: "docker" } }, "defaults.sandbox"],
    ["a runner", { runners: { mine: { command: ["m"], sandbox: true } } }, "runners.mine.sandbox"],
  ])("an unknown kind in %s is refused at its path", (_name, over, path) => {
    expect(issuesOf({ name: "x", ...over, items: [] })).toEqual([
      { path, message: 'must be "bwrap" (run the agent and its verify under bubblewrap) or "none"' },
    ]);
  });
});
