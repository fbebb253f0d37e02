// loop.json's `tracker` section (docs/trackers.md): the tracker chosen apart from the forge. A forge
// alone, or a tracker naming the forge's own provider, normalizes exactly as before (same hash);
// Linear and Jira are checked field by field, each problem at its path; refs name the tracker's key.
import { describe, expect, test } from "bun:test";
import { definitionHash, normalizeDefinition } from "../../lib/definition/normalize.ts";
import { parseRef, itemIdFromRef } from "../../lib/definition/refs.ts";
import { loopSecrets } from "../../lib/definition/child-environment.ts";
import { DefinitionError, RefError } from "../../lib/shared/errors.ts";

function issuesOf(raw: unknown): { path: string; message: string }[] {
  try {
    normalizeDefinition(raw);
  } catch (e) {
    if (e instanceof DefinitionError) return e.issues;
    throw e;
  }
  throw new Error("definition was accepted");
}

const forge = { provider: "github", repo: "acme/api" };
const linear = (more: object = {}) => ({ provider: "linear", team: "ENG", ...more });
const jira = (more: object = {}) => ({ provider: "jira", apiUrl: "https://acme.atlassian.net", email: "bot@acme.dev", project: "PROJ", ...more });

describe("the tracker section", () => {
  test("a GitHub forge with no tracker, or with its own, normalizes as before (same definition, same hash)", () => {
    const before = normalizeDefinition({ name: "x", forge, items: [{ ref: "github:acme/api#1", prompt: "p", verify: false }] });
    const same = normalizeDefinition({ name: "x", forge, tracker: { provider: "github" }, items: [{ ref: "github:acme/api#1", prompt: "p", verify: false }] });
    expect(same).toEqual(before);
    expect(definitionHash(same)).toBe(definitionHash(before));
    expect(before.tracker).toBeUndefined();
  });

  test("the forge's own tracker needs that forge, and takes no settings of its own", () => {
    expect(issuesOf({ name: "x", tracker: { provider: "gitlab" }, items: [] })).toEqual([
      { path: "tracker.provider", message: expect.stringContaining('needs a "forge" section whose provider is "gitlab"') },
    ]);
    expect(issuesOf({ name: "x", forge, tracker: { provider: "github", team: "ENG" }, items: [] })).toEqual([
      { path: "tracker.team", message: expect.stringContaining("does not apply") },
    ]);
  });

  test("none: items from loop.json alone; a ref is refused at its path", () => {
    expect(normalizeDefinition({ name: "x", forge, tracker: { provider: "none" }, items: [{ id: "a", prompt: "p", verify: false }] }).trackerNone).toBe(true);
    expect(issuesOf({ name: "x", forge, tracker: { provider: "none" }, items: [{ ref: "github:acme/api#1", prompt: "p", verify: false }] })).toEqual([
      { path: "items[0].ref", message: expect.stringContaining('the tracker is "none"') },
    ]);
  });

  test("Linear: defaults, the team's refs, its key a loop secret", () => {
    const d = normalizeDefinition({
      name: "x",
      forge,
      tracker: linear({
        states: ["Todo"],
        labels: ["agent"],
        moveTo: { started: "In Progress", completed: "Done", reset: "Todo" },
        authorizedUsers: ["ada@acme.dev"],
      }),
      items: [{ ref: "linear:ENG-12", prompt: "p", verify: false }],
    });
    expect(d.tracker).toEqual({
      provider: "linear",
      apiUrl: "https://api.linear.app/graphql",
      tokenEnv: "LINEAR_API_KEY",
      tokenKind: "personal",
      key: "ENG",
      states: ["Todo"],
      labels: ["agent"],
      moveTo: { started: "In Progress", completed: "Done", reset: "Todo" },
      authorizedUsers: ["ada@acme.dev"],
      pollInterval: 60_000,
    });
    expect(d.items[0]!.id).toBe("eng-12");
    expect(loopSecrets(d)).toContain("LINEAR_API_KEY");
  });

  test("Linear: a ref of another team, or of the forge, is refused naming the field", () => {
    expect(
      issuesOf({
        name: "x",
        forge,
        tracker: linear(),
        items: [
          { ref: "linear:OPS-1", prompt: "p", verify: false },
          { ref: "github:acme/api#2", prompt: "p", verify: false },
        ],
      }),
    ).toEqual([
      { path: "items[0].ref", message: expect.stringContaining("refs of a loop with a linear tracker must be linear:ENG-<number>") },
      { path: "items[1].ref", message: expect.stringContaining("tracker.team") },
    ]);
  });

  test.each([
    ["no team", { provider: "linear" }, "tracker.team", "required for linear"],
    ["a lowercase team", linear({ team: "eng" }), "tracker.team", "must be a Linear team key"],
    ["a Jira key on Linear", linear({ project: "PROJ" }), "tracker.project", "does not apply to linear"],
    ["jql on Linear", linear({ jql: "x = 1" }), "tracker.jql", "does not apply to linear"],
    ["a user that is neither a UUID nor an email", linear({ authorizedUsers: ["ada"] }), "tracker.authorizedUsers[0]", "must be a Linear user id"],
    ["an unknown tokenKind", linear({ tokenKind: "bearer" }), "tracker.tokenKind", 'must be "personal" or "oauth"'],
    ["a state with a newline", linear({ states: ["To\ndo"] }), "tracker.states[0]", "must be a name of one line"],
    ["an unknown moment", linear({ moveTo: { landed: "Done" } }), "tracker.moveTo.landed", "unknown key"],
    ["a query that is not a boolean", linear({ query: "yes" }), "tracker.query", "must be true or false"],
    ["an http apiUrl off this machine", linear({ apiUrl: "http://api.linear.app/graphql" }), "tracker.apiUrl", "must be https"],
    ["Jira without its site", { provider: "jira", email: "a@b.c", project: "PROJ" }, "tracker.apiUrl", "required for jira"],
    ["Jira without the email", { provider: "jira", apiUrl: "https://acme.atlassian.net", project: "PROJ" }, "tracker.email", "required for jira"],
    ["Jira with a Linear tokenKind", jira({ tokenKind: "oauth" }), "tracker.tokenKind", "does not apply to jira"],
    ["an unknown provider", { provider: "trello" }, "tracker.provider", 'must be "github", "gitlab", "linear", "jira" or "none"'],
  ])("%s is refused at its path", (_name, tracker, path, message) => {
    expect(issuesOf({ name: "x", forge, tracker, items: [] })).toEqual([{ path, message: expect.stringContaining(message) }]);
  });

  test("tracker.query: true is kept (Linear and Jira); false or absent is the default, leaving the definition (and its hash) as before", () => {
    const of = (tracker: object) => normalizeDefinition({ name: "x", forge, tracker, items: [] });
    expect(of(linear({ query: true })).tracker?.query).toBe(true);
    expect(of(jira({ query: true })).tracker?.query).toBe(true);
    expect(of(linear({ query: false })).tracker).not.toHaveProperty("query");
    expect(definitionHash(of(linear({ query: false })))).toBe(definitionHash(of(linear())));
    expect(definitionHash(of(linear({ query: true })))).not.toBe(definitionHash(of(linear())));
  });

  test("Jira: Basic auth, the project's refs", () => {
    const d = normalizeDefinition({
      name: "x",
      forge,
      tracker: jira({ jql: "component = Backend" }),
      items: [{ ref: "jira:PROJ-42", prompt: "p", verify: false }],
    });
    expect(d.tracker).toMatchObject({
      provider: "jira",
      apiUrl: "https://acme.atlassian.net",
      tokenEnv: "JIRA_API_TOKEN",
      tokenKind: "basic",
      email: "bot@acme.dev",
      key: "PROJ",
      jql: "component = Backend",
    });
  });

  test("the tracker's token variable cannot be passed to agents", () => {
    expect(issuesOf({ name: "x", forge, tracker: linear(), environment: { pass: ["LINEAR_API_KEY"] }, items: [] })).toEqual([
      { path: "environment.pass[0]", message: expect.stringContaining("one of loop's own secrets") },
    ]);
  });
});

describe("tracker refs", () => {
  test("<provider>:<KEY>-<number>, the key in capitals, the item id from it", () => {
    const r = parseRef("linear:eng-7");
    expect(r).toMatchObject({ provider: "linear", owner: "", repo: "ENG", number: 7, canonical: "linear:ENG-7" });
    expect(itemIdFromRef(r)).toBe("eng-7");
    expect(parseRef("jira:PROJ_X-42").canonical).toBe("jira:PROJ_X-42");
  });

  test.each(["linear:ENG", "linear:ENG-0", "linear:ENG-x", "jira:-1", "linear:ENG-1#2", "linear:ABCDEFGHIJK-1", "jira:PROJ-99999999999999999"])(
    "%s is refused",
    (ref) => {
      expect(() => parseRef(ref)).toThrow(RefError);
    },
  );
});
