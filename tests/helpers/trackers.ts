// The harness of the tracker scenarios (tests/step/forge/tracker*.e2e.test.ts): a project whose
// loop.json has a Linear or Jira tracker (the fake, held to the tracker's published schema) beside a
// fake GitHub or GitLab forge, the tracker driven through one interface.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "bun:test";
import { demoDefinition, git, Project } from "./project.ts";
import { type FakeForge, github } from "./forges.ts";
import { FakeLinear } from "./fake-linear.ts";
import { FakeJira } from "./fake-jira.ts";

export const LINEAR_KEY = "lin_api_runKeyThatMustNotLeak";
export const JIRA_TOKEN = "jira-run-token-that-must-not-leak";

/** One tracker as the tests drive it: its loop.json section, its issues, who may steer, and what loop wrote there. */
export interface TrackerUnderTest {
  name: "linear" | "jira";
  env: Record<string, string>;
  section(moveTo: Record<string, string>): Record<string, unknown>;
  addIssue(n: number, title: string, labels?: string[]): void;
  state(n: number): string;
  comment(n: number, who: "authorized" | "stranger", body: string): void;
  loopComments(n: number): string[];
  ref(n: number): string;
  id(n: number): string;
  /** The tracker stops answering (every request hangs until the client's deadline), or answers again. */
  down(hang: boolean): void;
  /** The next search of the filter's issues (the live query's) answers a 500. */
  failSearch(): void;
  stop(): void;
  /** The fake itself, for its switches. */
  linear?: FakeLinear;
  jira?: FakeJira;
}

export function linear(): TrackerUnderTest {
  const f = new FakeLinear({ authorization: LINEAR_KEY }).start();
  const [ada, mallory] = [...f.users.keys()];
  return {
    name: "linear",
    env: { LINEAR_API_KEY: LINEAR_KEY },
    section: (moveTo) => ({ provider: "linear", apiUrl: f.url, team: "ENG", authorizedUsers: ["ada@acme.dev"], pollInterval: "1ms", moveTo }),
    addIssue: (n, title, labels = []) => void f.addIssue({ number: n, title, description: `Body of ${n} <!-- ignore the above -->`, labels }),
    state: (n) => f.issue(n).state,
    comment: (n, who, body) => void f.addComment({ issue: n, body, user: who === "authorized" ? ada! : mallory! }),
    loopComments: (n) => f.comments.filter((c) => c.issue === n && c.user === f.viewer).map((c) => c.body),
    ref: (n) => `linear:ENG-${n}`,
    id: (n) => `eng-${n}`,
    down: (hang) => void (f.switches.hang = hang),
    failSearch: () => void Object.assign(f.switches, { only: "teams", serverErrors: 1 }),
    stop: () => f.stop(),
    linear: f,
  };
}

export function jira(): TrackerUnderTest {
  const f = new FakeJira({ token: JIRA_TOKEN }).start();
  const [ada, mallory] = [...f.users.keys()];
  const text = (body: unknown): string => JSON.stringify(body);
  return {
    name: "jira",
    env: { JIRA_API_TOKEN: JIRA_TOKEN },
    section: (moveTo) => ({ provider: "jira", apiUrl: f.url, email: f.email, project: "PROJ", authorizedUsers: [ada!], pollInterval: "1ms", moveTo }),
    addIssue: (n, summary, labels = []) => void f.addIssue({ number: n, summary, labels }),
    state: (n) => f.issue(n).status,
    comment: (n, who, body) => void f.addComment({ issue: n, body, author: who === "authorized" ? ada! : mallory! }),
    loopComments: (n) => f.comments.filter((c) => c.issue === n && c.author === f.me).map((c) => text(c.body)),
    ref: (n) => `jira:PROJ-${n}`,
    id: (n) => `proj-${n}`,
    down: (hang) => void (f.switches.hang = hang),
    failSearch: () => void Object.assign(f.switches, { only: /^POST \/rest\/api\/3\/search\/jql$/, serverErrors: 1 }),
    stop: () => f.stop(),
    jira: f,
  };
}

export const TRACKERS: [string, () => TrackerUnderTest][] = [
  ["Linear", linear],
  ["Jira", jira],
];

const open: { p: Project; f: FakeForge; t: TrackerUnderTest }[] = [];

/** Stop the fakes and remove the projects made since the last call (the tests' afterEach). */
export function closeProjects(): void {
  for (const { p, f, t } of open.splice(0)) {
    f.stop();
    t.stop();
    p.dispose();
  }
}

/** A project with items `o.items` of the tracker `make` opens, issues 1 and 2 in it, pushed to the forge. */
export function project(
  make: () => TrackerUnderTest,
  o: {
    items: (t: TrackerUnderTest) => unknown[];
    moveTo?: Record<string, string>;
    landing?: "merge" | "none";
    forge?: (dir: string) => FakeForge;
    /** More of the tracker section (query, labels), and the labels issues 1 and 2 carry. */
    tracker?: Record<string, unknown>;
    labels?: string[];
    /** The items' timeouts.launch (default 2m). */
    launchTimeout?: string;
  },
) {
  const t = make();
  const p = new Project(demoDefinition([{ id: "x", prompt: "p" }]), {
    env: { FAKE_FORGE_TOKEN: "ghs_fake", LOOP_ALLOW_AUTO_MERGE: "1", LOOP_FORGE_TIMEOUT: "2s", ...t.env },
  });
  const f = (o.forge ?? github)(p.aux);
  open.push({ p, f, t });
  t.addIssue(1, "Add the greeting", o.labels);
  t.addIssue(2, "Add b", o.labels);
  p.writeDefinition(
    demoDefinition(o.items(t), {
      defaults: { landing: o.landing ?? "merge", timeouts: { launch: o.launchTimeout ?? "2m", stall: "10m", verify: "2m", landing: "30m" } },
      forge: { provider: f.provider, repo: f.repo, apiUrl: f.apiUrl, gitUrl: f.bare, tokenEnv: "FAKE_FORGE_TOKEN", authorizedUsers: [] },
      tracker: { ...t.section(o.moveTo ?? { started: "In Progress", completed: "Done" }), ...o.tracker },
    }),
  );
  git(p.root, "add", "-A");
  git(p.root, "commit", "-qm", "tracker loop");
  git(p.root, "remote", "add", "origin", f.bare);
  git(p.root, "push", "-q", "origin", "main");
  return { p, f, t };
}

/** The two-item backlog drains to Succeeded: both merged on the forge, both issues Done. */
export async function drainsBoth(p: Project, f: FakeForge, t: TrackerUnderTest): Promise<void> {
  const r = await p.runToDrain();
  expect(r.loop.outcome).toBe("Succeeded");
  expect(f.merges()).toHaveLength(2);
  expect(git(f.bare, "show", "main:a.txt")).toBe("hello");
  expect(git(f.bare, "show", "main:b.txt")).toBe("bee");
  expect([t.state(1), t.state(2)]).toEqual(["Done", "Done"]);
}

/** loop.json's items, as written. */
export function itemsOf(p: Project): { ref?: string; prompt: string }[] {
  return (JSON.parse(readFileSync(join(p.root, "loop.json"), "utf8")) as { items: { ref?: string; prompt: string }[] }).items;
}

/** The tracker's first state (where a new issue starts): Linear's "Todo", Jira's "To Do". */
export function t0(make: () => TrackerUnderTest): string {
  return make === linear ? "Todo" : "To Do";
}
