// The exit codes of every tool, held to docs/cli/README.md#exit-codes and each tool's own table: one
// row per tool and documented outcome that needs no agent process, run in process through the tool's
// real entry (runTool). Prompts (3, 130) need a terminal and are tested with one in cli.test.ts;
// a `loop run` that launches belongs in a real process (tests/step/).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Store } from "../../lib/log/store.ts";
import { pidAlive } from "../../lib/shared/process.ts";
import { makeRepo } from "../helpers/repo.ts";
import { runInProcess as run } from "../helpers/cli.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function repo(definition?: unknown): string {
  const r = makeRepo({ prefix: "loop-exit-", ...(definition === undefined ? {} : { definition }) });
  dirs.push(r.dir);
  return r.root;
}

const def = (o: { base?: string; items?: unknown[] } = {}) => ({
  name: "codes",
  defaults: { runner: "demo", verify: "true" },
  workspace: { base: o.base ?? "main" },
  items: o.items ?? [
    { id: "a", prompt: "do a" },
    { id: "b", prompt: "do b" },
  ],
});

/**
 * The shared fixture: a loop whose items are imported and that is paused by an environment fault
 * (its base branch is missing), so no agent is ever started; `b` is cancelled (a settled item, with
 * state a reset can remove), `a` holds no state at all.
 */
let paused: string;
let empty: string;
beforeAll(async () => {
  paused = repo(def({ base: "no-such-branch" }));
  expect((await run(["run", "--json"], { cwd: paused })).code).toBe(1);
  expect((await run(["ctl", "cancel", "--work-item", "b", "--yes", "--json"], { cwd: paused })).code).toBe(0);
  empty = repo(def({ items: [] }));
});

/** Hold the step lease of `root`'s store while `fn` runs: every writer must answer busy (75). */
async function withLease<T>(root: string, fn: () => Promise<T>): Promise<T> {
  const store = Store.open(join(root, ".loop"), { actor: "test" });
  const got = store.acquireLease(60_000, pidAlive);
  if (!got.ok) throw new Error("lease not taken");
  try {
    return await fn();
  } finally {
    store.releaseLease(got.lease);
    store.close();
  }
}

type Row = { tool: string; what: string; argv: () => string[]; cwd: () => string; exit: number; code?: string; lease?: boolean; setup?: () => void };

const rows: Row[] = [
  // loop init
  { tool: "init", what: "a fresh repository", argv: () => ["init", "--json"], cwd: () => repo(), exit: 0 },
  { tool: "init", what: "loop.json exists, no --force", argv: () => ["init", "--json"], cwd: () => paused, exit: 2, code: "usage" },
  {
    tool: "init",
    what: "--state-root names a file (io_error)",
    argv: () => ["init", "--json", "--state-root", "README"],
    cwd: () => {
      const r = repo();
      writeFileSync(join(r, "README"), "a file\n");
      return r;
    },
    exit: 1,
    code: "io_error",
  },
  {
    tool: "init",
    what: "--adopt while a step holds the lease",
    argv: () => ["init", "--adopt", "--json"],
    cwd: () => paused,
    exit: 75,
    code: "busy",
    lease: true,
  },
  // loop run
  { tool: "run", what: "nothing to do: drained Succeeded", argv: () => ["run", "--json"], cwd: () => empty, exit: 0 },
  { tool: "run", what: "paused by an environment fault", argv: () => ["run", "--json"], cwd: () => paused, exit: 1 },
  { tool: "run", what: "invalid loop.json", argv: () => ["run", "--json"], cwd: () => repo("{ not json"), exit: 2, code: "invalid_definition" },
  { tool: "run", what: "another step holds the lease", argv: () => ["run", "--json"], cwd: () => paused, exit: 75, code: "busy", lease: true },
  // loop status
  { tool: "status", what: "healthy", argv: () => ["status", "--json"], cwd: () => paused, exit: 0 },
  { tool: "status", what: "an unknown item", argv: () => ["status", "--json", "--work-item", "zz"], cwd: () => paused, exit: 2, code: "unknown_item" },
  { tool: "status", what: "no store", argv: () => ["status", "--json"], cwd: () => repo(), exit: 2, code: "missing_store" },
  // loop replay
  { tool: "replay", what: "no findings", argv: () => ["replay", "--json"], cwd: () => paused, exit: 0 },
  { tool: "replay", what: "no store", argv: () => ["replay", "--json"], cwd: () => repo(), exit: 2, code: "missing_store" },
  // loop ctl
  { tool: "ctl", what: "pause a paused loop: nothing to do", argv: () => ["ctl", "pause", "--json"], cwd: () => paused, exit: 0 },
  {
    tool: "ctl",
    what: "a reply to a settled item is refused",
    argv: () => ["ctl", "reply", "--work-item", "b", "an answer", "--json"],
    cwd: () => paused,
    exit: 1,
    code: "refused",
  },
  { tool: "ctl", what: "an unknown verb", argv: () => ["ctl", "frobnicate", "--json"], cwd: () => paused, exit: 2, code: "usage" },
  {
    tool: "ctl",
    what: "a destructive verb without --yes off a terminal",
    argv: () => ["ctl", "stop", "--work-item", "a", "--json"],
    cwd: () => paused,
    exit: 2,
    code: "usage",
  },
  { tool: "ctl", what: "another step holds the lease", argv: () => ["ctl", "resume", "--json"], cwd: () => paused, exit: 75, code: "busy", lease: true },
  // loop reset
  {
    tool: "reset",
    what: "--work-item of an item holding no state: nothing to reset",
    argv: () => ["reset", "--work-item", "a", "--yes", "--json"],
    cwd: () => paused,
    exit: 1,
  },
  { tool: "reset", what: "--all --yes with nothing to reset", argv: () => ["reset", "--all", "--yes", "--json"], cwd: () => empty, exit: 1 },
  { tool: "reset", what: "a dry run of an item with state", argv: () => ["reset", "--work-item", "b", "--dry-run", "--json"], cwd: () => paused, exit: 0 },
  { tool: "reset", what: "no selector", argv: () => ["reset", "--yes", "--json"], cwd: () => paused, exit: 2, code: "usage" },
  { tool: "reset", what: "an unknown item", argv: () => ["reset", "--work-item", "zz", "--yes", "--json"], cwd: () => paused, exit: 2, code: "unknown_item" },
  {
    tool: "reset",
    what: "another step holds the lease",
    argv: () => ["reset", "--work-item", "b", "--yes", "--json"],
    cwd: () => paused,
    exit: 75,
    code: "busy",
    lease: true,
  },
  // loop logs
  { tool: "logs", what: "an item with no attempt yet", argv: () => ["logs", "a", "--json"], cwd: () => paused, exit: 2, code: "usage" },
  { tool: "logs", what: "an unknown item", argv: () => ["logs", "zz", "--json"], cwd: () => paused, exit: 2, code: "unknown_item" },
  // loop plan
  {
    tool: "plan",
    what: "the demo planner, --dry-run",
    argv: () => ["plan", "Add a README.", "--runner", "demo", "--dry-run", "--json"],
    cwd: () => paused,
    exit: 0,
  },
  {
    tool: "plan",
    what: "neither --yes nor --dry-run off a terminal",
    argv: () => ["plan", "Add a README.", "--runner", "demo", "--json"],
    cwd: () => paused,
    exit: 2,
    code: "usage",
  },
  {
    tool: "plan",
    what: "an unknown runner",
    argv: () => ["plan", "Add a README.", "--runner", "nope", "--dry-run", "--json"],
    cwd: () => paused,
    exit: 2,
    code: "usage",
  },
  // loop add
  { tool: "add", what: "one item", argv: () => ["add", "Write the changelog", "--json"], cwd: () => repo(def()), exit: 0 },
  { tool: "add", what: "an id already taken", argv: () => ["add", "again", "--id", "a", "--json"], cwd: () => paused, exit: 1, code: "refused" },
  { tool: "add", what: "--id ../x", argv: () => ["add", "x", "--id", "../x", "--json"], cwd: () => paused, exit: 2, code: "usage" },
  { tool: "add", what: "--id=-rf", argv: () => ["add", "x", "--id=-rf", "--json"], cwd: () => paused, exit: 2, code: "usage" },
  { tool: "add", what: "--ref ../x", argv: () => ["add", "x", "--ref", "../x", "--json"], cwd: () => paused, exit: 2, code: "invalid_ref" },
  // loop export
  { tool: "export", what: "the items", argv: () => ["export", "--json"], cwd: () => paused, exit: 0 },
  { tool: "export", what: "an unknown --status", argv: () => ["export", "--status", "nope", "--json"], cwd: () => paused, exit: 2, code: "usage" },
  // loop backup
  { tool: "backup", what: "a new file", argv: () => ["backup", join(paused, "..", "copy.db"), "--json"], cwd: () => paused, exit: 0 },
  { tool: "backup", what: "the file exists", argv: () => ["backup", join(paused, "loop.json"), "--json"], cwd: () => paused, exit: 2, code: "usage" },
  { tool: "backup", what: "no store", argv: () => ["backup", "copy.db", "--json"], cwd: () => repo(), exit: 2, code: "missing_store" },
];

describe("every tool's exit codes, as docs/cli/ says", () => {
  test("the table covers every tool", () => {
    expect([...new Set(rows.map((r) => r.tool))].sort()).toEqual([
      "add",
      "backup",
      "ctl",
      "export",
      "init",
      "logs",
      "plan",
      "replay",
      "reset",
      "run",
      "status",
    ]);
  });

  for (const r of rows)
    test(`loop ${r.tool}: ${r.what} → exit ${r.exit}${r.code ? ` (${r.code})` : ""}`, async () => {
      const cwd = r.cwd();
      const go = () => run(r.argv(), { cwd });
      const got = r.lease ? await withLease(cwd, go) : await go();
      expect({ exit: got.code, stderr: got.code === r.exit ? "" : got.stderr }).toEqual({ exit: r.exit, stderr: "" });
      if (r.code) {
        // An error that stops a tool is one JSON line on stderr under --json, naming its code.
        expect(JSON.parse(got.stderr.trim()).error.code).toBe(r.code);
        expect(got.stdout).toBe("");
      }
    });
});
