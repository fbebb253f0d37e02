// `loop reset` through the CLI: real `bun cmd/loop.ts reset …` processes against real loops (temp
// git repositories, real SQLite, agents played by the demo runner or shell scripts). Each scenario
// states its Given / When / Then, and ends (scenario()) with `loop status` and `loop replay`
// exiting 0 and no session process left. The pure planner is tested in reset-plan.test.ts; crashes
// at every boundary in tests/step/failpoints.e2e.test.ts (scenario "reset"); processes that leave their
// group in tests/supervisor/orphans.e2e.test.ts.
import { worktreesOf } from "../helpers/env.ts";
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processStartTime } from "../../lib/shared/process.ts";
import { tmuxSessionName } from "../../lib/supervisor/sessions.ts";
import { Store } from "../../lib/log/store.ts";
import { demoDefinition, git, gitOk, pollUntil, type Project, scenario } from "../helpers/project.ts";
import { snapshotTree } from "../helpers/fs.ts";

const T = 120_000;

interface ItemDoc {
  item: string;
  ref: string | null;
  found: boolean;
  removed: string[];
  was_live: boolean;
  archived_branch: string | null;
  checkout: { outcome: string; path: string | null; why: string | null };
  aside: string[];
  errors: { piece: string; message: string }[];
  effects: string[];
  stays: string[];
}
interface ResetDoc {
  schema: string;
  dry_run: boolean;
  ok: boolean;
  warnings: string[];
  items: ItemDoc[];
  transitions: { seq: number; type: string; item: string | null }[];
}

/** `loop reset <args> --json` as `actor`; stdout parsed when it is a document. */
async function reset(p: Project, args: string[], actor = "alice@test"): Promise<{ code: number; doc: ResetDoc; stderr: string; stdout: string }> {
  const r = await p.loop(["reset", ...args, "--root", p.root, ...(args.includes("--text") ? [] : ["--json"])], { LOOP_ACTOR: actor });
  let doc = null as unknown as ResetDoc;
  if (!args.includes("--text") && r.stdout) doc = JSON.parse(r.stdout);
  if (doc) expect(doc.schema).toBe("loop/reset@1");
  return { ...r, doc };
}

/** An agent that writes wip.txt (left uncommitted; renamed into place, so a test that sees it sees it whole) and then hangs until it is ended. */
const hanging = { command: ["sh", "-c", "echo start; echo wip > wip.tmp; mv wip.tmp wip.txt; sleep 600"] };

/** Branches of the repository: name -> commit. */
function branches(p: Project): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of git(p.root, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads").split("\n").filter(Boolean)) {
    const [name, sha] = line.split(" ");
    out[name!] = sha!;
  }
  return out;
}

async function launchHanging(p: Project, id = "h"): Promise<{ pid: number; wt: string }> {
  const r = await p.run();
  expect([r.action, r.item]).toEqual(["launched", id]);
  const pid = p.eventsOf("session_started", id).at(-1)!.payload.pid as number;
  const wt = p.projection().items[id]!.workspace!.worktree;
  await pollUntil(() => existsSync(join(wt, "wip.txt")), "the agent wrote wip.txt");
  // The wrapper may record its start after the agent's first write: wait for it, so the session's folder is settled.
  await pollUntil(() => existsSync(join(p.sessionDir(id, p.projection().items[id]!.attempts.length), "started.json")), "the wrapper recorded the start");
  expect(p.alive(pid)).toBe(true);
  return { pid, wt };
}

/** A file's text, or "" while it does not exist yet. */
function readTextOrEmpty(path: string): string {
  return existsSync(path) ? readFileSync(path, "utf8") : "";
}

/** Run steps until `id` passed (the demo agent works in a few steps). */
async function untilPassed(p: Project, id: string): Promise<void> {
  await p.runUntil((_r, pr) => pr.projection().items[id]!.status === "passed", { what: `${id} passed` });
}

describe("loop reset", () => {
  // A verify runs detached with no lease held (docs/cli/loop-run.md), so a reset can come while one runs.
  for (const closed of [false, true])
    test.concurrent(
      `a slow verify running${closed ? " after its session was recorded closed" : ""}: \`loop reset --yes\` ends the verify's process group; the item is pending at epoch 1; replay clean`,
      () =>
        scenario(
          (p) =>
            demoDefinition([{ id: "v", prompt: "x\n@demo write x.txt x", verify: `echo $$ > ${join(p.aux, "verify-pid")}; sleep 600` }], {
              defaults: { timeouts: { launch: "2m", stall: "10m", verify: "10m" } },
            }),
          {},
          async (p) => {
            // Given an item whose agent exited and whose verify command is running
            expect((await p.run()).action).toBe("launched");
            await pollUntil(() => existsSync(join(p.sessionDir("v", 1), "exit.json")), "the agent exited");
            expect((await p.run()).action).toBe("waiting");
            // The shell creates the file before `echo` writes to it: wait for the pid itself.
            await pollUntil(() => /^\d+\n$/.test(readTextOrEmpty(join(p.aux, "verify-pid"))), "the verify runs");
            const pgid = p.eventsOf("verify_started", "v").at(-1)!.payload.pgid as number;
            const shell = Number(readFileSync(join(p.aux, "verify-pid"), "utf8"));
            expect(p.alive(pgid)).toBe(true);
            // The verify carries the session's mark, as the agent did.
            const mark = p.projection().items.v!.session!.sessionId;
            expect(readFileSync(`/proc/${shell}/environ`, "utf8").split("\0")).toContain(`LOOP_SESSION_MARK=${mark}`);
            if (closed) {
              // (a close recorded while the verify went on: reset must still end the verify)
              const store = Store.open(p.stateRoot, { actor: "test" });
              try {
                store.append([{ type: "session_closed", item: "v", payload: { attempt: 1, how: "not_running", worktreeRemoved: false, reason: "test" } }], {
                  actor: "test",
                });
              } finally {
                store.close();
              }
              expect(p.projection().items.v!.session!.closed).not.toBeNull();
            }
            // When it is reset
            const r = await reset(p, ["--work-item", "v", "--yes"]);
            // Then the verify's process group is gone, and the item starts over at epoch 1
            expect(r.code).toBe(0);
            expect(r.doc.items[0]!.was_live).toBe(true);
            expect(p.alive(pgid)).toBe(false);
            await pollUntil(() => !existsSync(`/proc/${shell}`), "the verify's shell is gone");
            const it = p.projection().items.v!;
            expect([it.status, it.epoch, it.attempts.length, it.session]).toEqual(["pending", 1, 0, null]);
            expect(p.eventsOf("verify_finished", "v")).toEqual([]);
          },
        ),
      T,
    );

  test.concurrent(
    "one running item: the agent is ended first, every piece goes, the branch is archived; status shows it pending at epoch 1; the next run starts attempt 1 on a fresh branch",
    () =>
      // Given a loop whose item h runs an agent that left wip.txt uncommitted in its checkout
      scenario(
        demoDefinition(
          [
            { id: "h", prompt: "hang", runner: "hang" },
            { id: "n", prompt: "quick" },
          ],
          { runners: { hang: hanging } },
        ),
        {},
        async (p) => {
          const { pid, wt } = await launchHanging(p);
          const mainHead = git(p.root, "rev-parse", "main");
          // When the operator resets it
          const r = await reset(p, ["--work-item", "h", "--yes"]);
          // Then the reset is done (exit 0), the agent was ended before anything was removed
          expect(r.code).toBe(0);
          expect(p.alive(pid)).toBe(false);
          expect(r.doc).toMatchObject({ dry_run: false, ok: true });
          expect(r.doc.items).toEqual([
            {
              item: "h",
              ref: null,
              found: true,
              removed: ["session", "ledger", "workspace", "branch"],
              was_live: true,
              archived_branch: "loop/t/reset/h/e0",
              checkout: { outcome: "removed", path: wt, why: null },
              aside: [],
              errors: [],
              effects: expect.any(Array),
              stays: [],
            },
          ]);
          // …it said so out loud (stderr and warnings[]): the live agent, the uncommitted work, the relaunch
          expect(r.doc.warnings).toContain(`h: a live agent is being ended (attempt 1, pid ${pid})`);
          expect(r.doc.warnings.some((w) => w.startsWith(`h: the checkout ${wt} has uncommitted changes and is being removed`))).toBe(true);
          expect(r.doc.warnings.some((w) => w.includes("the next `loop run` launches h again"))).toBe(true);
          for (const w of r.doc.warnings) expect(r.stderr).toContain(w);
          // …nothing of the item is left on disk; the branch is renamed, never deleted, with the agent's work on it
          expect(existsSync(wt)).toBe(false);
          expect(existsSync(join(p.stateRoot, "sessions", "h"))).toBe(false);
          expect(gitOk(p.root, "rev-parse", "--verify", "refs/heads/loop/t/item/h")).toBe(false);
          expect(git(p.root, "show", "loop/t/reset/h/e0:wip.txt")).toBe("wip");
          // …the log gained the close path's events and one work_item_reset, by the actor, and nothing else changed in it
          expect(r.doc.transitions.map((t) => t.type)).toEqual(["session_ended", "session_closed", "work_item_reset"]);
          const ev = p.eventsOf("work_item_reset", "h");
          expect(ev).toHaveLength(1);
          expect(ev[0]!.actor).toBe("alice@test");
          expect(ev[0]!.payload).toEqual({
            pieces: ["session", "ledger", "workspace", "branch"],
            found: true,
            wasLive: true,
            archivedBranch: "loop/t/reset/h/e0",
            checkout: { outcome: "removed", path: wt, why: null },
            aside: [],
            errors: [],
          });
          // …and status shows it pending, 0 attempts, no session, epoch 1, reset by alice
          const st = JSON.parse((await p.loop(["status", "--json", "--root", p.root])).stdout);
          const h = st.items.find((i: { id: string }) => i.id === "h");
          expect(h).toMatchObject({
            status: "pending",
            attempts: 0,
            failures: 0,
            session: null,
            branch: null,
            worktree: null,
            epoch: 1,
            reset: { actor: "alice@test" },
          });
          expect(st.loop.current).toBeNull();
          // When the loop runs again
          const next = await p.run();
          // Then h is launched as attempt 1 of epoch 1, on a fresh branch from the base (no old commits)
          expect([next.action, next.item]).toEqual(["launched", "h"]);
          expect(p.eventsOf("launch_reserved", "h").at(-1)!.payload).toMatchObject({ attempt: 1, key: "launch:h:e1:a1" });
          expect(git(p.root, "rev-parse", "loop/t/item/h")).toBe(mainHead);
          // The second session is ended by a second reset (the first one's archive name is not reused)
          const again = await reset(p, ["--work-item", "h", "--yes"]);
          expect(again.code).toBe(0);
          expect(again.doc.items[0]!.archived_branch).toBe("loop/t/reset/h/e1");
          await p.ctl(["skip", "--work-item", "h", "--yes"]);
          await p.runToDrain();
        },
      ),
    T,
  );

  test.concurrent(
    "no state is 'nothing to reset' (exit 1) with an audit event; resetting twice is once, then 'nothing to reset'",
    () =>
      // Given a passed item a and an item b that was imported but never touched
      scenario(
        demoDefinition(
          [
            { id: "a", prompt: "x" },
            { id: "b", prompt: "y", dependsOn: ["a"] },
          ],
          { control: { requireStartCommand: true } },
        ),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("idle"); // imports the definition
          expect((await p.ctl(["start", "--work-item", "a"])).code).toBe(0);
          await untilPassed(p, "a");
          const b0 = p.projection().items.b!;
          // When b is reset
          const none = await reset(p, ["--work-item", "b", "--yes"]);
          // Then: exit 1, "nothing to reset", found false; one audit event, and b is unchanged (same epoch)
          expect(none.code).toBe(1);
          expect(none.doc.items).toEqual([
            {
              item: "b",
              ref: null,
              found: false,
              removed: [],
              was_live: false,
              archived_branch: null,
              checkout: { outcome: "absent", path: null, why: null },
              aside: [],
              errors: [],
              effects: ["b: nothing to reset"],
              stays: [],
            },
          ]);
          expect(none.doc.ok).toBe(true);
          expect(p.eventsOf("work_item_reset", "b").map((e) => e.payload.found)).toEqual([false]);
          expect(p.projection().items.b).toEqual(b0);
          const text = await reset(p, ["--work-item", "b", "--yes", "--text"]);
          expect([text.code, text.stdout]).toEqual([1, "b: nothing to reset\nnothing to reset\n"]);
          // When a is reset twice
          const first = await reset(p, ["--work-item", "a", "--yes"]);
          const after1 = p.projection().items.a!;
          const second = await reset(p, ["--work-item", "a", "--yes"]);
          // Then the first resets (exit 0), the second finds nothing (exit 1) and changes nothing but its audit record
          expect(first.code).toBe(0);
          expect(first.doc.items[0]).toMatchObject({ found: true, removed: ["session", "control", "ledger", "branch"], archived_branch: "loop/t/reset/a/e0" });
          expect(second.code).toBe(1);
          expect(second.doc.items[0]).toMatchObject({ found: false, removed: [] });
          expect(p.projection().items.a).toEqual(after1);
          expect(after1).toMatchObject({ epoch: 1, status: "pending", started: false, attempts: [] });
          expect(Object.keys(branches(p)).filter((b) => b.startsWith("loop/t/reset/"))).toEqual(["loop/t/reset/a/e0"]);
          // The log was only appended to: the chain replays clean (finish), every earlier event intact
          expect(
            p
              .events()
              .filter((e) => e.type === "work_item_reset")
              .map((e) => [e.item, e.payload.found]),
          ).toEqual([
            ["b", false],
            ["b", false],
            ["a", true],
            ["a", false],
          ]);
          // With requireStartCommand, a reset item is disarmed: it waits for a new start
          const idle = await p.run();
          expect(idle.action).toBe("idle");
          expect(idle.reason).toContain("a waits for `loop ctl start --work-item a`");
        },
      ),
    T,
  );

  test.concurrent(
    "selection: the order given, one reset per item whatever its spelling, --all only items with state; bad selectors are exit 2 and nothing is reset",
    () =>
      // Given items a (ref github:acme/api#42), b and c; a and c hold a recorded start, b nothing; nothing runs (requireStartCommand)
      scenario(
        demoDefinition(
          [
            { id: "a", ref: "github:acme/api#42", prompt: "x" },
            { id: "b", prompt: "y" },
            { id: "c", prompt: "z" },
          ],
          { control: { requireStartCommand: true } },
        ),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("idle");
          await p.ctl(["start", "--work-item", "a", "--work-item", "c"]);
          // …and files under the state root that loop did not write
          mkdirSync(join(p.stateRoot, "sessions", "not-an-item"), { recursive: true });
          writeFileSync(join(p.stateRoot, "sessions", "not-an-item", "x.txt"), "mine\n");
          mkdirSync(join(p.stateRoot, "workspaces"), { recursive: true });
          writeFileSync(join(p.stateRoot, "workspaces", "notes.txt"), "mine\n");
          const before = snapshotTree(p.stateRoot);
          const head = p.head();
          // When a selector is missing, doubled, or names no item / is no valid ref (alone or among good ones)
          const bad: [string[], string][] = [
            [[], "--work-item"],
            [["--all", "--work-item", "a"], "exclude each other"],
            [["--work-item", "zz"], "no item of this loop"],
            [["--work-item", "a", "--work-item", "zz"], "no item of this loop"],
            [["--work-item", "../a"], "invalid"],
            [["--work-item", "a/b"], "invalid"],
            [["--work-item=-a"], "invalid"],
            [["--work-item", "a\u0001b"], "invalid"],
            [["--work-item", "github:acme/api#42/../x"], "invalid"],
            [["--all", "--yes", "--dry-run"], "exclude each other"],
          ];
          for (const [args, msg] of bad) {
            const r = await reset(p, args.includes("--yes") ? args : [...args, "--yes"]);
            // Then exit 2, nothing on stdout, the reason on stderr, and nothing changed
            expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
            expect(r.stderr).toContain(msg);
            expect(snapshotTree(p.stateRoot)).toEqual(before);
          }
          expect(p.head()).toBe(head);
          // When c, then a twice (by ref with a leading zero, and by id) are named
          const r = await reset(p, ["--work-item", "c", "--work-item", "github:acme/api#042", "--work-item", "a", "--yes"]);
          // Then c and a are reset once each, in that order
          expect(r.code).toBe(0);
          expect(r.doc.items.map((i) => [i.item, i.ref, i.found, i.removed])).toEqual([
            ["c", null, true, ["control"]],
            ["a", "github:acme/api#42", true, ["control"]],
          ]);
          expect(p.eventsOf("work_item_reset").map((e) => e.item)).toEqual(["c", "a"]);
          // When b gets a start and --all runs
          await p.ctl(["start", "--work-item", "b"]);
          const all = await reset(p, ["--all", "--yes"]);
          // Then only b (the one item with state) is reset, and files loop did not write are untouched
          expect(all.code).toBe(0);
          expect(all.doc.items.map((i) => i.item)).toEqual(["b"]);
          expect(readFileSync(join(p.stateRoot, "sessions", "not-an-item", "x.txt"), "utf8")).toBe("mine\n");
          expect(readFileSync(join(p.stateRoot, "workspaces", "notes.txt"), "utf8")).toBe("mine\n");
          // When --all finds nothing: exit 1, no item, no event
          const head2 = p.head();
          const nothing = await reset(p, ["--all", "--yes"]);
          expect([nothing.code, nothing.doc.items]).toEqual([1, []]);
          expect(p.head()).toBe(head2);
          const text = await reset(p, ["--all", "--yes", "--text"]);
          expect([text.code, text.stdout]).toEqual([1, "nothing to reset: no item holds any state\n"]);
          // Started again, every item runs from first sight
          await p.ctl(["start", "--work-item", "a", "--work-item", "b", "--work-item", "c"]);
          await p.runToDrain();
        },
      ),
    T,
  );

  test.concurrent(
    "--dry-run and a refusal change nothing: state root byte- and mtime-identical, agent running, branches and worktrees as they were",
    () =>
      // Given h running with uncommitted work in its checkout
      scenario(
        demoDefinition(
          [
            { id: "h", prompt: "hang", runner: "hang" },
            { id: "n", prompt: "quick" },
          ],
          { runners: { hang: hanging } },
        ),
        {},
        async (p) => {
          const { pid, wt } = await launchHanging(p);
          await pollUntil(() => readFileSync(join(p.stateRoot, "sessions", "h", "1", "output.log"), "utf8").includes("start"), "the agent's output");
          expect(existsSync(join(p.stateRoot, "loop.db-wal"))).toBe(false);
          const tree = snapshotTree(p.stateRoot);
          const refs = branches(p);
          const worktrees = git(p.root, "worktree", "list", "--porcelain");
          const unchanged = () => {
            expect(snapshotTree(p.stateRoot)).toEqual(tree);
            expect(p.alive(pid)).toBe(true);
            expect(branches(p)).toEqual(refs);
            expect(git(p.root, "worktree", "list", "--porcelain")).toBe(worktrees);
          };
          // When a dry run is asked for
          const dry = await reset(p, ["--work-item", "h", "--dry-run"]);
          // Then it reports exactly what a real run would do (exit 0: there is state), says the agent would be ended
          // and the uncommitted work where it goes, and changes nothing
          expect(dry.code).toBe(0);
          expect(dry.doc).toMatchObject({ dry_run: true, ok: true, transitions: [] });
          expect(dry.doc.items).toEqual([
            {
              item: "h",
              ref: null,
              found: true,
              removed: ["session", "ledger", "workspace", "branch"],
              was_live: true,
              archived_branch: "loop/t/reset/h/e0",
              checkout: { outcome: "removed", path: wt, why: null },
              aside: [],
              errors: [],
              effects: [
                `end the live agent of h (attempt 1, pid ${pid})`,
                "delete h's session record and its folder sessions/h/ (every attempt's output and verify logs: `loop logs` has none of them afterwards)",
                "forget h's ledgers (1 attempt(s), 0 failure(s); status running): it becomes pending, first sight",
                `remove the checkout ${wt} (changes left in it are committed on its branch first)`,
                "archive branch loop/t/item/h as loop/t/reset/h/e0",
              ],
              stays: [],
            },
          ]);
          expect(dry.doc.warnings).toContain(`h: a live agent would be ended (attempt 1, pid ${pid})`);
          expect(dry.doc.warnings).toContain(
            `h: the checkout ${wt} has uncommitted changes and would be removed; they are committed on loop/t/item/h, archived as loop/t/reset/h/e0 first (files git ignores are lost)`,
          );
          unchanged();
          // …in text too
          const dryText = await reset(p, ["--work-item", "h", "--dry-run", "--text"]);
          expect(dryText.stdout).toContain("h: would reset\n  - end the live agent of h");
          expect(dryText.stdout).toContain("dry run: would reset 1 item(s); nothing was changed\n");
          unchanged();
          // When it is asked for without --yes and stdin is not a terminal
          const refused = await reset(p, ["--work-item", "h"]);
          // Then exit 2, the reason names --yes, and nothing changed
          expect([refused.code, refused.stdout]).toEqual([2, ""]);
          expect(refused.stderr).toContain("--yes");
          unchanged();
          const refusedAll = await reset(p, ["--all"]);
          expect(refusedAll.code).toBe(2);
          unchanged();
          // A dry run of an item with nothing to reset exits 1 by the same rule
          const dryNone = await reset(p, ["--work-item", "n", "--dry-run"]);
          expect([dryNone.code, dryNone.doc.items[0]!.found]).toEqual([1, false]);
          unchanged();
          await reset(p, ["--work-item", "h", "--yes"]);
          await p.ctl(["skip", "--work-item", "h", "--yes"]);
          await p.runToDrain();
        },
      ),
    T,
  );

  test.concurrent(
    "a step holding the lease makes reset exit 75 and do nothing; a dry run and a watcher's run.pid are warned about",
    () =>
      // Given a passed item a, and a live process (this test) holding the step lease
      scenario(demoDefinition([{ id: "a", prompt: "x" }]), {}, async (p) => {
        await untilPassed(p, "a");
        const store = Store.open(p.stateRoot, { actor: "test" });
        const lease = store.acquireLease(60_000, () => true);
        if (!lease.ok) throw new Error("lease not taken");
        try {
          const head = p.head();
          const refs = branches(p);
          // When a reset runs
          const r = await reset(p, ["--work-item", "a", "--yes"]);
          // Then it is busy (75), says so, and nothing was reset
          expect([r.code, r.stdout]).toEqual([75, ""]);
          expect(JSON.parse(r.stderr).error.code).toBe("busy");
          expect(p.head()).toBe(head);
          expect(branches(p)).toEqual(refs);
          expect(existsSync(join(p.stateRoot, "sessions", "a"))).toBe(true);
          // …and a dry run warns that a step holds the lease
          const dry = await reset(p, ["--work-item", "a", "--dry-run"]);
          expect(dry.doc.warnings.some((w) => w.includes(`holds the lease (pid ${process.pid}`))).toBe(true);
        } finally {
          store.releaseLease(lease.lease);
          store.close();
        }
        // Given run.pid naming a live watcher (this process)
        writeFileSync(join(p.stateRoot, "run.pid"), `${process.pid} ${processStartTime(process.pid)}\n`);
        try {
          // When the reset runs, Then it warns that the watcher may relaunch the item, and resets anyway
          const r = await reset(p, ["--work-item", "a", "--yes"]);
          expect(r.code).toBe(0);
          expect(r.doc.warnings).toContain(
            `a \`loop run --watch\` is running (pid ${process.pid}): it may launch a again right after the reset; stop it first`,
          );
        } finally {
          rmSync(join(p.stateRoot, "run.pid"));
        }
        await p.runToDrain();
      }),
    T,
  );

  test.concurrent(
    "a piece that cannot be removed is reported per item and per piece (exit 1) and never claimed; the other items are reset; a second run finishes the job",
    () =>
      // Given a and b passed and c failed (its checkout kept); a's session folder holds an undeletable file,
      // the name b's branch must be archived under is blocked, and c's attempt's git folder is broken (what c left cannot be committed)
      scenario(
        demoDefinition([
          { id: "a", prompt: "x" },
          { id: "b", prompt: "y" },
          { id: "c", prompt: "z\n@demo write c.txt c", verify: "false", maxAttempts: 1 },
        ]),
        {},
        async (p) => {
          await p.runToDrain();
          const stuck = join(p.stateRoot, "sessions", "a", "1", "stuck.txt");
          writeFileSync(stuck, "x\n");
          const root = process.getuid?.() === 0;
          // root ignores permissions: an immutable file it is; anyone else: a read-only folder
          if (root) expect(spawnSync("chattr", ["+i", stuck]).status).toBe(0);
          else chmodSync(join(p.stateRoot, "sessions", "a", "1"), 0o500);
          git(p.root, "branch", "loop/t/reset/b", "main"); // loop/t/reset/b/e0 can no longer be a branch
          const cwt = p.projection().items.c!.workspace!.worktree;
          writeFileSync(join(p.stateRoot, "sessions", "c", "1", "git", "HEAD"), "garbage\n");
          try {
            // When everything is reset
            const r = await reset(p, ["--all", "--yes"]);
            // Then exit 1; each failure is named by item and piece, and the piece is not claimed removed
            expect(r.code).toBe(1);
            expect(r.doc.ok).toBe(false);
            const by = Object.fromEntries(r.doc.items.map((i) => [i.item, i]));
            expect(by.a).toMatchObject({ removed: ["ledger", "branch"], archived_branch: "loop/t/reset/a/e0" });
            expect(by.a!.errors.map((e) => e.piece)).toEqual(["session"]);
            expect(by.b).toMatchObject({ removed: ["session", "ledger"], archived_branch: null });
            expect(by.b!.errors.map((e) => e.piece)).toEqual(["branch"]);
            expect(by.c).toMatchObject({ removed: ["session", "ledger", "branch"], checkout: { outcome: "kept", path: cwt } });
            expect(by.c!.errors.map((e) => e.piece)).toEqual(["workspace"]);
            expect(by.c!.checkout.why).toContain("could not be committed (seal_failed");
            // …what could not be removed is still there; the rest is gone
            expect(existsSync(stuck)).toBe(true);
            expect(gitOk(p.root, "rev-parse", "--verify", "refs/heads/loop/t/item/b")).toBe(true);
            expect(readFileSync(join(cwt, "c.txt"), "utf8")).toBe("c\n");
            expect(existsSync(join(p.stateRoot, "sessions", "b"))).toBe(false);
            // …and the events say the same
            expect(p.eventsOf("work_item_reset").map((e) => [e.item, e.payload.pieces, e.payload.errors?.map((x) => x.piece)])).toEqual([
              ["a", ["ledger", "branch"], ["session"]],
              ["b", ["session", "ledger"], ["branch"]],
              ["c", ["session", "ledger", "branch"], ["workspace"]],
            ]);
          } finally {
            if (root) spawnSync("chattr", ["-i", stuck]);
            else chmodSync(join(p.stateRoot, "sessions", "a", "1"), 0o700);
          }
          // When the obstacles are gone and the reset runs again
          git(p.root, "branch", "-D", "loop/t/reset/b");
          rmSync(cwt, { recursive: true, force: true });
          const again = await reset(p, ["--all", "--yes"]);
          // Then what was left is removed (b's branch archived under its new epoch), exit 0
          expect(again.code).toBe(0);
          expect(again.doc.items.map((i) => [i.item, i.removed, i.archived_branch])).toEqual([
            ["a", ["session"], null],
            ["b", ["branch"], "loop/t/reset/b/e1"],
          ]);
          expect(existsSync(join(p.stateRoot, "sessions", "a"))).toBe(false);
          // c's broken checkout was removed by hand; the next runs do everything again
          await p.runToDrain();
        },
      ),
    T,
  );

  test.concurrent(
    "with keepCheckoutOnClose the checkout is kept and moves with its branch to the archive; it is not state any more, and the next launch moves it aside",
    () =>
      // Given keepCheckoutOnClose and h running with uncommitted work
      scenario(
        demoDefinition([{ id: "h", prompt: "hang", runner: "hang" }], { runners: { hang: hanging }, workspace: { keepCheckoutOnClose: true } }),
        {},
        async (p) => {
          const { wt } = await launchHanging(p);
          // When h is reset
          const r = await reset(p, ["--work-item", "h", "--yes"]);
          // Then the checkout is kept (and said why), the branch archived, and the checkout follows it
          expect(r.code).toBe(0);
          expect(r.doc.items[0]).toMatchObject({
            removed: ["session", "ledger", "branch"],
            checkout: { outcome: "kept", path: wt, why: "workspace.keepCheckoutOnClose" },
            archived_branch: "loop/t/reset/h/e0",
          });
          expect(readFileSync(join(wt, "wip.txt"), "utf8")).toBe("wip\n");
          expect(git(wt, "symbolic-ref", "--short", "HEAD")).toBe("loop/t/reset/h/e0");
          // When it is reset again: nothing to reset (the kept checkout is the archive's, not the item's)
          expect((await reset(p, ["--work-item", "h", "--yes"])).code).toBe(1);
          // When the loop launches h again: what was at its checkout's path is moved aside, never deleted
          const run = await p.run();
          expect([run.action, run.item]).toEqual(["launched", "h"]);
          const aside = readdirSync(join(worktreesOf(p.stateRoot))).filter((n) => n.startsWith("h.aside-"));
          expect(aside).toHaveLength(1);
          await pollUntil(() => existsSync(join(wt, "wip.txt")), "the new agent started");
          // …and the next reset lists it, without removing it
          const third = await reset(p, ["--work-item", "h", "--yes"]);
          expect(third.doc.items[0]!.aside).toEqual([join(worktreesOf(p.stateRoot), aside[0]!)]);
          expect(existsSync(join(worktreesOf(p.stateRoot), aside[0]!, "wip.txt"))).toBe(true);
          await p.ctl(["skip", "--work-item", "h", "--yes"]);
          await p.runToDrain();
        },
      ),
    T,
  );

  test.concurrent(
    "an item whose question paused the loop: reset forgets the question and the reply, and resumes the loop",
    () =>
      // Given item q asked a question (the loop paused) and a reply was recorded
      scenario(demoDefinition([{ id: "q", prompt: "ask\n@demo attempt 1 ask Which database?\n@demo write q.txt q" }]), {}, async (p) => {
        await p.runUntil((r) => r.action === "paused", { what: "the question paused the loop" });
        await p.ctl(["reply", "--work-item", "q", "postgres"]);
        // When q is reset
        const r = await reset(p, ["--work-item", "q", "--yes"]);
        // Then its control records (question, reply) go with the rest, and the loop runs again
        expect(r.code).toBe(0);
        expect(r.doc.items[0]!.removed).toEqual(["session", "control", "ledger", "workspace", "branch"]);
        expect(r.doc.transitions.map((t) => t.type)).toEqual(["work_item_reset", "loop_resumed"]);
        const q = p.projection().items.q!;
        expect([q.question, q.replies, p.projection().loop.state]).toEqual([null, [], "running"]);
        // …and the next attempt 1 asks again (the reply was forgotten)
        await p.runUntil((x) => x.action === "paused", { what: "asked again" });
        expect(p.projection().items.q!.attempts.map((a) => a.n)).toEqual([1]);
        await p.ctl(["reply", "--work-item", "q", "mysql"]);
        await p.ctl(["resume"]);
        await p.runToDrain();
      }),
    T,
  );
});

// ---------------------------------------------------------------------------------------------
// On a terminal (a tmux pane on a private socket): the confirmation prompt, and sessions in tmux.

const HAVE_TMUX = spawnSync("tmux", ["-V"], { encoding: "utf8" }).status === 0;
if (!HAVE_TMUX) console.warn("tests/control/reset.e2e.test.ts: terminal cases SKIPPED — `tmux -V` failed (tmux is not installed); CI installs tmux");
let socketCounter = 0;
/** Where tmux keeps the socket of `-L name` (the server does not always remove it when killed). */
const socketPath = (name: string) => join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid!()}`, name);

/** A private tmux server for one test, and a way to run `loop reset` in a pane of it. */
function terminal(p: Project) {
  const sock = `loop-reset-test-${process.pid}-${++socketCounter}`;
  const tmux = (...args: string[]) => spawnSync("tmux", ["-L", sock, ...args], { encoding: "utf8" });
  let n = 0;
  return {
    sock,
    tmux,
    /** Start `loop reset <args>` in a fresh pane; returns its pane name and where its exit code will be written. */
    start(args: string[]): { name: string; rc: string } {
      const name = `reset-${++n}`;
      const rc = join(p.aux, `${name}.rc`);
      const script = join(p.aux, `${name}.sh`);
      const env = ["LOOP_STATE_ROOT", "LOOP_FAILPOINT", "LOOP_TMUX_SOCKET", "FORCE_COLOR"].map((k) => `unset ${k}`).join("; ");
      const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
      writeFileSync(
        script,
        `${env}\nexport NO_COLOR=1 LOOP_ACTOR=tty@test LOOP_KILL_GRACE_MS=300\ncd ${q(p.root)}\n${[process.execPath, join(import.meta.dir, "..", "..", "cmd", "loop.ts"), "reset", ...args].map(q).join(" ")}\necho $? > ${q(rc)}\nsleep 600\n`,
      );
      const r = tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "50", `sh ${q(script)}`);
      if (r.status !== 0) throw new Error(`tmux new-session: ${r.stderr}`);
      return { name, rc };
    },
    screen: (name: string) => tmux("capture-pane", "-p", "-t", `=${name}:`).stdout,
    close: () => {
      tmux("kill-server");
      rmSync(socketPath(sock), { force: true });
    },
  };
}

async function exitCodeOf(rc: string): Promise<number> {
  await pollUntil(() => existsSync(rc) && readFileSync(rc, "utf8").endsWith("\n"), `exit code in ${rc}`);
  return Number(readFileSync(rc, "utf8").trim());
}

describe.skipIf(!HAVE_TMUX)(HAVE_TMUX ? "loop reset on a terminal" : "loop reset on a terminal (SKIPPED: no tmux)", () => {
  test.concurrent(
    "without --yes a terminal is shown the plan and asked to type the item's id (Enter alone: exit 3, nothing changed); the id resets; --all asks for the loop's name",
    () =>
      // Given two passed items a and b
      scenario(
        demoDefinition([
          { id: "a", prompt: "x" },
          { id: "b", prompt: "y" },
        ]),
        {},
        async (p) => {
          await p.runToDrain();
          const term = terminal(p);
          try {
            const tree = snapshotTree(p.stateRoot);
            const refs = branches(p);
            // When reset runs on a terminal and the operator just presses Enter
            const no = term.start(["--work-item", "a"]);
            await pollUntil(() => term.screen(no.name).includes("Type the item's id (a)"), "the prompt");
            // Then the plan was shown before the question
            expect(term.screen(no.name)).toContain("loop reset will:");
            expect(term.screen(no.name)).toContain("archive branch loop/t/item/a as loop/t/reset/a/e0");
            term.tmux("send-keys", "-t", `=${no.name}:`, "Enter");
            // …the default is No: declined, exit 3, nothing changed
            expect(await exitCodeOf(no.rc)).toBe(3);
            expect(snapshotTree(p.stateRoot)).toEqual(tree);
            expect(branches(p)).toEqual(refs);
            // When the operator answers y: one key is not enough for what cannot be undone
            const y = term.start(["--work-item", "a"]);
            await pollUntil(() => term.screen(y.name).includes("Type the item's id (a)"), "the prompt");
            term.tmux("send-keys", "-t", `=${y.name}:`, "-l", "y");
            term.tmux("send-keys", "-t", `=${y.name}:`, "Enter");
            expect(await exitCodeOf(y.rc)).toBe(3);
            expect(snapshotTree(p.stateRoot)).toEqual(tree);
            // When the operator types the item's id
            const yes = term.start(["--work-item", "a"]);
            await pollUntil(() => term.screen(yes.name).includes("Type the item's id (a)"), "the prompt");
            term.tmux("send-keys", "-t", `=${yes.name}:`, "-l", "a");
            term.tmux("send-keys", "-t", `=${yes.name}:`, "Enter");
            // Then a is reset (exit 0) and the text report says so
            expect(await exitCodeOf(yes.rc)).toBe(0);
            await pollUntil(() => term.screen(yes.name).includes("reset 1 item(s)"), "the report");
            // …and a warning the prompt showed is not said again when the reset is carried out
            expect(term.screen(yes.name).split("does not require explicit starts").length - 1).toBe(1);
            expect(p.eventsOf("work_item_reset", "a").map((e) => e.actor)).toEqual(["tty@test"]);
            // When --all runs on a terminal, the operator must type the loop's name: a wrong one declines
            const tree2 = snapshotTree(p.stateRoot);
            const wrong = term.start(["--all"]);
            await pollUntil(() => term.screen(wrong.name).includes("Type the loop's name (t)"), "the name prompt");
            term.tmux("send-keys", "-t", `=${wrong.name}:`, "-l", "not-t");
            term.tmux("send-keys", "-t", `=${wrong.name}:`, "Enter");
            expect(await exitCodeOf(wrong.rc)).toBe(3);
            expect(snapshotTree(p.stateRoot)).toEqual(tree2);
            // …and the right one resets every item with state (b)
            const right = term.start(["--all"]);
            await pollUntil(() => term.screen(right.name).includes("Type the loop's name (t)"), "the name prompt");
            term.tmux("send-keys", "-t", `=${right.name}:`, "-l", "t");
            term.tmux("send-keys", "-t", `=${right.name}:`, "Enter");
            expect(await exitCodeOf(right.rc)).toBe(0);
            expect(p.eventsOf("work_item_reset").map((e) => e.item)).toEqual(["a", "b"]);
            // --dry-run never asks
            const dry = term.start(["--all", "--dry-run"]);
            expect(await exitCodeOf(dry.rc)).toBe(1); // nothing left to reset
          } finally {
            term.close();
          }
          await p.runToDrain();
        },
      ),
    T,
  );

  test.concurrent(
    "a session in tmux: reset kills the tmux session; the next attempt 1 gets a tmux name of its epoch, started fine",
    async () => {
      const sock = `loop-reset-tmux-${process.pid}`;
      try {
        // Given an item running in a tmux session
        await scenario(
          demoDefinition([{ id: "h", prompt: "hang", runner: "hang" }], { runners: { hang: hanging }, sessions: { tmux: true } }),
          { env: { LOOP_TMUX_SOCKET: sock } },
          async (p) => {
            await launchHanging(p);
            const name = p.projection().items.h!.session!.tmux!;
            expect(name).toBe(tmuxSessionName(p.projection().loop.name!, "h", 1));
            const has = (n = name) => spawnSync("tmux", ["-L", sock, "has-session", "-t", `=${n}`]).status === 0;
            expect(has()).toBe(true);
            // When it is reset
            const r = await reset(p, ["--work-item", "h", "--yes"]);
            // Then the tmux session is gone
            expect(r.code).toBe(0);
            expect(r.doc.items[0]!.was_live).toBe(true);
            expect(has()).toBe(false);
            // When the loop launches it again: attempt 1, under a name of epoch 1 (never the old one), started fine
            const run = await p.run();
            expect([run.action, run.item]).toEqual(["launched", "h"]);
            const again = p.projection().items.h!.session!.tmux!;
            expect(again).toBe(tmuxSessionName(p.projection().loop.name!, "h", 1, 1));
            expect(again).not.toBe(name);
            expect(has(again)).toBe(true);
            await reset(p, ["--work-item", "h", "--yes"]);
            expect(has(again)).toBe(false);
            await p.ctl(["skip", "--work-item", "h", "--yes"]);
            await p.runToDrain();
          },
        );
      } finally {
        spawnSync("tmux", ["-L", sock, "kill-server"], { stdio: "ignore" });
        rmSync(socketPath(sock), { force: true });
      }
    },
    T,
  );
});
