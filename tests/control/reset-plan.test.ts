// The reset planner (lib/control/reset-plan.ts planReset), with plain data: projections folded from
// synthetic hash-chained logs and hand-written ItemFacts. Table-driven: each case names its
// scenario, the state of one item (log and disk), and what the plan must say about it.
import { describe, expect, test } from "bun:test";
import type { EventDraft, NormItemPayload, SettingsPayload } from "../../lib/log/events.ts";
import { fold } from "../../lib/log/reducer.ts";
import type { Projection } from "../../lib/log/projection.ts";
import { archiveName, type ItemFacts, type ItemPlan, type LoopFacts, planReset } from "../../lib/control/reset-plan.ts";
import {
  closed,
  control,
  ended,
  failingAttempt,
  itemDef,
  launch,
  LogBuilder,
  loopStarted,
  passingAttempt,
  resetDone,
  SETTINGS,
  settled,
  started,
} from "../helpers/events.ts";

function def(items: NormItemPayload[], settings: Partial<SettingsPayload> = {}): EventDraft {
  return { type: "definition_imported", payload: { revision: 1, hash: "h1", name: "demo", settings: { ...SETTINGS, ...settings }, items } };
}

function proj(drafts: EventDraft[], o: { settings?: Partial<SettingsPayload>; items?: NormItemPayload[]; started?: boolean } = {}): Projection {
  const b = new LogBuilder();
  b.push(
    def(o.items ?? [itemDef("a"), itemDef("b", { dependsOn: ["a"] }), itemDef("c")], o.settings),
    ...(o.started === false ? [] : [loopStarted]),
    ...drafts,
  );
  return fold(b.events);
}

/** Nothing on disk: no session folder, no checkout, no branch, nothing alive. */
function noFacts(id = "a"): ItemFacts {
  return {
    sessionDir: false,
    worktree: { path: `/state/workspaces/${id}`, exists: false, onItemBranch: false, dirty: null },
    aside: [],
    branchHead: null,
    archives: [],
    groupAlive: false,
    marked: 0,
  };
}

const QUIET: LoopFacts = { watcher: null, leaseHolder: null };

function planOne(
  p: Projection,
  facts: Partial<ItemFacts> = {},
  o: { loop?: LoopFacts; dryRun?: boolean; id?: string } = {},
): { plan: ItemPlan; warnings: string[] } {
  const id = o.id ?? "a";
  const r = planReset({ p, ids: [id], all: false, facts: { [id]: { ...noFacts(id), ...facts } }, loop: o.loop ?? QUIET, dryRun: o.dryRun ?? false });
  return { plan: r.items[0]!, warnings: r.warnings };
}

const running = (id: string, n = 1): EventDraft[] => [launch({ item: id, attempt: n }), started({ item: id, attempt: n })];
const asked = (id: string, q: string): EventDraft[] => [
  ...running(id),
  { type: "needs_input", item: id, payload: { attempt: 1, question: q } },
  closed({ item: id, attempt: 1, worktreeRemoved: false }),
  { type: "loop_paused", payload: { reason: `${id} needs input: ${q}` } },
];

describe("planReset: which pieces an item has and what is done to each", () => {
  const cases: {
    name: string;
    drafts: EventDraft[];
    facts?: Partial<ItemFacts>;
    settings?: Partial<SettingsPayload>;
    want: Partial<ItemPlan>;
  }[] = [
    {
      name: "imported, never touched: no state",
      drafts: [],
      want: { found: false, pieces: [], closeSession: false, wasLive: false, sweep: false, branch: null, deleteSessionDir: false },
    },
    {
      name: "only a recorded `start`: control",
      drafts: [control("a", "start")],
      want: { found: true, pieces: ["control"], closeSession: false, wasLive: false, sweep: false },
    },
    {
      name: "a hold from `ctl stop`: control",
      drafts: [control("a", "stop")],
      want: { found: true, pieces: ["control"] },
    },
    {
      name: "skipped before it ran: control and ledger (the settlement)",
      drafts: [control("a", "skip"), settled({ item: "a", attempt: 0, outcome: "skipped" })],
      want: { found: true, pieces: ["control", "ledger"] },
    },
    {
      name: "running, its agent alive: every piece; the session is ended through the close path",
      drafts: running("a"),
      facts: {
        sessionDir: true,
        groupAlive: true,
        worktree: { path: "/state/workspaces/a", exists: true, onItemBranch: true, dirty: false },
        branchHead: "c0ffee",
      },
      want: {
        found: true,
        pieces: ["session", "ledger", "workspace", "branch"],
        closeSession: true,
        wasLive: true,
        sweep: true,
        deleteSessionDir: true,
        checkout: { action: "remove", outcome: "removed", path: "/state/workspaces/a", why: null },
        branch: { kind: "rename", from: "loop/test/a", to: "loop/demo/reset/a/e0", head: "c0ffee" },
      },
    },
    {
      name: "recorded running but its processes are gone: the close path still closes it, not live",
      drafts: [...running("a"), ended({ item: "a", attempt: 1 })],
      facts: { sessionDir: true },
      want: { closeSession: true, wasLive: false, sweep: true },
    },
    {
      name: "passed, checkout removed at close, branch kept: session, ledger, branch",
      drafts: passingAttempt({ item: "a" }),
      facts: { sessionDir: true, branchHead: "abc" },
      want: {
        found: true,
        pieces: ["session", "ledger", "branch"],
        closeSession: false,
        wasLive: false,
        sweep: true,
        checkout: { action: "none", outcome: "absent", path: null, why: null },
      },
    },
    {
      name: "a closed session with a marked process left over: live, swept",
      drafts: passingAttempt({ item: "a" }),
      facts: { marked: 2 },
      want: { wasLive: true, sweep: true, closeSession: false },
    },
    {
      name: "failed, checkout kept: the checkout is removed",
      drafts: failingAttempt({ item: "a", attempt: 1, last: true }),
      facts: { worktree: { path: "/state/workspaces/a", exists: true, onItemBranch: true, dirty: true } },
      want: { pieces: ["session", "ledger", "workspace"], checkout: { action: "remove", outcome: "removed", path: "/state/workspaces/a", why: null } },
    },
    {
      name: "with keepCheckoutOnClose the checkout is kept",
      drafts: running("a"),
      settings: { keepCheckoutOnClose: true },
      facts: { worktree: { path: "/state/workspaces/a", exists: true, onItemBranch: true, dirty: false } },
      want: { checkout: { action: "keep", outcome: "kept", path: "/state/workspaces/a", why: "workspace.keepCheckoutOnClose" } },
    },
    {
      name: "the log says present, the directory is gone: the record is the piece, nothing to remove",
      drafts: running("a"),
      want: { pieces: ["session", "ledger", "workspace"], checkout: { action: "none", outcome: "absent", path: "/state/workspaces/a", why: "already gone" } },
    },
    {
      name: "no record, and what is at the path is a checkout of another branch: left alone, not a piece",
      drafts: [control("a", "start")],
      facts: { worktree: { path: "/state/workspaces/a", exists: true, onItemBranch: false, dirty: null } },
      want: {
        pieces: ["control"],
        checkout: {
          action: "none",
          outcome: "absent",
          path: "/state/workspaces/a",
          why: "/state/workspaces/a is not a checkout of loop/demo/item/a; left alone",
        },
      },
    },
    {
      name: "no record, but a checkout of the item branch is there: a piece",
      drafts: [],
      facts: { worktree: { path: "/state/workspaces/a", exists: true, onItemBranch: true, dirty: false } },
      want: { found: true, pieces: ["workspace"], checkout: { action: "remove", outcome: "removed", path: "/state/workspaces/a", why: null } },
    },
    {
      name: "only a session folder on disk: the session piece",
      drafts: [],
      facts: { sessionDir: true },
      want: { found: true, pieces: ["session"], deleteSessionDir: true, sweep: false },
    },
    {
      name: "only the branch, never launched: the branch piece",
      drafts: [],
      facts: { branchHead: "abc" },
      want: { found: true, pieces: ["branch"], branch: { kind: "rename", from: "loop/demo/item/a", to: "loop/demo/reset/a/e0", head: "abc" } },
    },
    {
      name: "the archive name of this epoch is taken (and the branch exists): the next free suffix",
      drafts: [control("a", "start")],
      facts: { branchHead: "abc", archives: ["loop/demo/reset/a/e0", "loop/demo/reset/a/e0-2"] },
      want: { branch: { kind: "rename", from: "loop/demo/item/a", to: "loop/demo/reset/a/e0-3", head: "abc" } },
    },
    {
      name: "no branch, and an archive of this epoch exists: a cut-short reset archived it; named, not archived again",
      drafts: [control("a", "start")],
      facts: { archives: ["loop/demo/reset/a/e0"] },
      want: { found: true, pieces: ["control", "branch"], branch: { kind: "archived", to: "loop/demo/reset/a/e0" } },
    },
    {
      name: "after a reset (epoch 1) the archive of epoch 0 is history, not state",
      drafts: [control("a", "start"), resetDone("a", { pieces: ["control"] })],
      facts: { archives: [] },
      want: { found: false, epoch: 1, branch: null },
    },
    {
      name: "directories moved aside are listed, never a piece",
      drafts: [],
      facts: { aside: ["/state/workspaces/a.aside-2026-01-01T00-00-00-000Z"] },
      want: { found: false, aside: ["/state/workspaces/a.aside-2026-01-01T00-00-00-000Z"] },
    },
    {
      name: "waiting with a question that paused the loop: control and ledger, and the loop is resumed",
      drafts: asked("a", "which db?"),
      want: { found: true, pieces: ["session", "control", "ledger", "workspace"], resumeLoop: true, closeSession: false },
    },
  ];

  for (const c of cases)
    test(c.name, () => {
      const { plan } = planOne(proj(c.drafts, { settings: c.settings }), c.facts);
      expect(plan).toMatchObject(c.want);
      // Effects say what will happen, in words; an item with nothing says so.
      expect(plan.effects.length).toBeGreaterThan(0);
      if (!plan.found) expect(plan.effects).toEqual(["a: nothing to reset"]);
    });
});

describe("planReset: selection", () => {
  test("--all plans only the items with state, in the order given; --work-item plans every item named", () => {
    const p = proj([control("c", "start"), ...passingAttempt({ item: "a" })]);
    const facts = { a: noFacts("a"), b: noFacts("b"), c: noFacts("c") };
    const all = planReset({ p, ids: ["a", "b", "c"], all: true, facts, loop: QUIET, dryRun: false });
    expect(all.items.map((x) => x.item)).toEqual(["a", "c"]);
    const named = planReset({ p, ids: ["c", "b"], all: false, facts, loop: QUIET, dryRun: false });
    expect(named.items.map((x) => [x.item, x.found])).toEqual([
      ["c", true],
      ["b", false],
    ]);
    expect(named.loopName).toBe("demo");
  });

  test("nothing found: no warnings at all", () => {
    const p = proj([]);
    const r = planReset({
      p,
      ids: ["a"],
      all: false,
      facts: { a: noFacts() },
      loop: { watcher: { pid: 9 }, leaseHolder: { pid: 8, host: "h" } },
      dryRun: false,
    });
    expect(r.warnings).toEqual([]);
  });
});

describe("planReset: warnings", () => {
  const has = (ws: string[], s: string) => ws.some((w) => w.includes(s));

  test("a running watcher and a lease holder are named; both may relaunch the item", () => {
    const { warnings } = planOne(proj([control("a", "start")]), {}, { loop: { watcher: { pid: 77 }, leaseHolder: { pid: 78, host: "box" } } });
    expect(has(warnings, "`loop run --watch` is running (pid 77)")).toBe(true);
    expect(has(warnings, "holds the lease (pid 78 on box)")).toBe(true);
  });

  test("a running loop without requireStartCommand relaunches the item; a paused one or requireStartCommand does not warn", () => {
    expect(has(planOne(proj([control("a", "start")])).warnings, "the next `loop run` launches a again")).toBe(true);
    expect(has(planOne(proj([control("a", "start")], { settings: { requireStartCommand: true } })).warnings, "launches a again")).toBe(false);
    expect(has(planOne(proj([control("a", "start"), { type: "loop_paused", payload: { reason: "x" } }])).warnings, "launches a again")).toBe(false);
  });

  test("a live agent being ended is always said, with its attempt and pid (would be, in a dry run)", () => {
    const p = proj(running("a"));
    expect(planOne(p, { groupAlive: true }).warnings).toContain("a: a live agent is being ended (attempt 1, pid 4242)");
    expect(planOne(p, { groupAlive: true }, { dryRun: true }).warnings).toContain("a: a live agent would be ended (attempt 1, pid 4242)");
  });

  test("a checkout with uncommitted changes being removed names its path and the branch that keeps the work", () => {
    const p = proj(failingAttempt({ item: "a", attempt: 1, last: true }));
    const facts = { worktree: { path: "/state/workspaces/a", exists: true, onItemBranch: true, dirty: true }, branchHead: "abc" };
    expect(planOne(p, facts).warnings).toContain(
      "a: the checkout /state/workspaces/a has uncommitted changes and is being removed; they are committed on loop/test/a, archived as loop/demo/reset/a/e0 first (files git ignores are lost)",
    );
    // Clean, or kept: nothing to say.
    expect(has(planOne(p, { ...facts, worktree: { ...facts.worktree, dirty: false } }).warnings, "uncommitted")).toBe(false);
  });

  test("items blocked by a failed item being reset are named: they stay blocked", () => {
    const p = proj([
      ...failingAttempt({ item: "a", attempt: 1, last: true }),
      settled({ item: "b", attempt: 0, outcome: "blocked", reason: 'dependency "a" failed' }),
    ]);
    expect(planOne(p).warnings).toContain("b stays blocked by a's failed: reset it too, or `loop ctl retry --work-item` it");
    // Reset together, nothing to say.
    const both = planReset({ p, ids: ["a", "b"], all: false, facts: { a: noFacts("a"), b: noFacts("b") }, loop: QUIET, dryRun: false });
    expect(has(both.warnings, "stays blocked")).toBe(false);
  });
});

describe("archiveName", () => {
  const cases: [string[], string][] = [
    [[], "loop/x/reset/i/e3"],
    [["loop/x/reset/i/e3"], "loop/x/reset/i/e3-2"],
    [["loop/x/reset/i/e3", "loop/x/reset/i/e3-2"], "loop/x/reset/i/e3-3"],
    [["loop/x/reset/i/e3-2"], "loop/x/reset/i/e3"],
  ];
  for (const [taken, want] of cases) test(`taken ${JSON.stringify(taken)} → ${want}`, () => expect(archiveName("x", "i", 3, taken)).toBe(want));
});
