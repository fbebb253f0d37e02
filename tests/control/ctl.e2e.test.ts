// `loop ctl` through the CLI: real `bun cmd/loop.ts ctl …` processes against real loops whose
// agents are the demo runner or a shell script that hangs. Each scenario ends with `loop status`
// and `loop replay` exiting 0 and no session process left. Every ctl event must carry the acting
// user ($LOOP_ACTOR) as its actor; `loop run` steps act as "cron@test".
import { testEnv, worktreesOf } from "../helpers/env.ts";
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pidAlive } from "../../lib/shared/process.ts";
import { Store } from "../../lib/log/store.ts";
import { demoDefinition, git, pollUntil, type Project, scenario } from "../helpers/project.ts";
import { snapshotTree } from "../helpers/fs.ts";
import { LOOP } from "../helpers/cli.ts";
import { onTerminal } from "../helpers/tty.ts";

const T = 120_000;
const hang = { command: ["sh", "-c", "echo start; sleep 600"] };

/** A loop whose first item hangs (until ended by ctl) and whose second passes quickly. */
function hangThenDemo(maxAttempts = 2, extra: unknown[] = []) {
  return demoDefinition(
    [{ id: "h", prompt: "hang", runner: "hang", maxAttempts }, { id: "n", prompt: "quick\n@demo write n.txt n", verify: "test -s n.txt" }, ...extra],
    { runners: { hang } },
  );
}

interface CtlDoc {
  schema: string;
  verb: string;
  dryRun: boolean;
  actions: { item: string | null; effect: string; noop: boolean }[];
  closed: { item: string; attempt: number; how: string; worktreeRemoved: boolean; kept: string | null }[];
  transitions: { seq: number; type: string; item: string | null }[];
}

/** Run a ctl verb that must succeed; every event it appended must name `actor`. */
async function ctlOk(p: Project, args: string[], actor = "alice@test"): Promise<CtlDoc> {
  const r = await p.ctl(args, actor);
  if (r.code !== 0) throw new Error(`loop ctl ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  const doc = JSON.parse(r.stdout) as CtlDoc;
  expect(doc.schema).toBe("loop/ctl@1");
  const bySeq = new Map(p.events().map((e) => [e.seq, e]));
  for (const t of doc.transitions) expect({ seq: t.seq, actor: bySeq.get(t.seq)!.actor }).toEqual({ seq: t.seq, actor });
  return doc;
}

/** A ctl call that must fail with `code` and change nothing. */
async function ctlRefused(p: Project, args: string[], code: number): Promise<string> {
  const head = p.head();
  const state = readFileSync(join(p.stateRoot, "state.json"), "utf8");
  const r = await p.ctl(args);
  expect({ args, code: r.code }).toEqual({ args, code });
  expect(r.stdout).toBe("");
  expect(p.head()).toBe(head);
  expect(readFileSync(join(p.stateRoot, "state.json"), "utf8")).toBe(state);
  // In JSON mode a refusal or a busy lease is the one error document every other error is.
  if (code === 1 || code === 75) expect(JSON.parse(r.stderr).error.code).toBe(code === 1 ? "refused" : "busy");
  return r.stderr;
}

async function launchHang(p: Project): Promise<number> {
  const r = await p.run();
  expect(r.action).toBe("launched");
  expect(r.item).toBe("h");
  const pid = p.eventsOf("session_started", "h").at(-1)!.payload.pid as number;
  expect(p.alive(pid)).toBe(true);
  return pid;
}

describe("loop ctl", () => {
  test.concurrent(
    "a dry run, a refusal and a usage error change nothing under the state root, not even its mtimes",
    () =>
      // Items wait for `ctl start`: the step imports the definition and nothing runs meanwhile.
      scenario(
        demoDefinition(
          [
            { id: "a", prompt: "x" },
            { id: "b", prompt: "y" },
          ],
          { control: { requireStartCommand: true } },
        ),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("idle");
          const stateRoot = join(p.root, ".loop");
          expect(existsSync(join(stateRoot, "loop.db-wal"))).toBe(false);
          const before = snapshotTree(stateRoot);
          const cases: [string[], number][] = [
            [["skip", "--work-item", "b", "--dry-run"], 0],
            [["skip", "--work-item", "b"], 2], // destructive, no --yes, no terminal
            [["skip", "--work-item", "zz", "--yes"], 2], // not an item of the loop
            [["pause", "--reason", "x", "--reason", "y"], 2],
            [["reply", "--work-item", "zz", "an answer"], 2],
          ];
          for (const [args, code] of cases) {
            expect([args, (await p.ctl(args)).code]).toEqual([args, code]);
            expect([args, snapshotTree(stateRoot)]).toEqual([args, before]);
          }
          expect((await p.ctl(["start", "--work-item", "a", "--work-item", "b"])).code).toBe(0);
          await p.runToDrain();
        },
      ),
    T,
  );

  test.concurrent(
    "stop/skip/cancel without --yes and no TTY exit 2 and change nothing; --dry-run prints the plan",
    () =>
      scenario(hangThenDemo(), {}, async (p) => {
        const pid = await launchHang(p);
        for (const args of [["stop"], ["stop", "--work-item", "h"], ["skip", "--work-item", "h"], ["cancel", "--work-item", "h"]]) {
          const err = await ctlRefused(p, args, 2);
          expect(err).toContain("--yes");
          expect(p.alive(pid)).toBe(true);
        }
        const expected: Record<string, string[]> = {
          stop: ["end the session of h (attempt 1); the item stays pending", "stop the loop"],
          skip: ["end the session of h and settle it skipped"],
          cancel: ["end the session of h and settle it cancelled", "pause the loop (cancel means stop spending)"],
        };
        for (const [verb, effects] of Object.entries(expected)) {
          const head = p.head();
          const r = await p.ctl(verb === "stop" ? ["stop", "--dry-run"] : [verb, "--work-item", "h", "--dry-run"]);
          expect(r.code).toBe(0);
          const doc = JSON.parse(r.stdout) as CtlDoc;
          expect(doc.dryRun).toBe(true);
          expect(doc.actions.map((a) => a.effect)).toEqual(effects);
          expect(doc.transitions).toEqual([]);
          expect(doc.closed).toEqual([]);
          expect(p.head()).toBe(head);
          expect(p.alive(pid)).toBe(true);
        }
        // An item not in flight is named too (it used to read "settle it skipped").
        const pending = JSON.parse((await p.ctl(["skip", "--work-item", "n", "--dry-run"])).stdout) as CtlDoc;
        expect(pending.actions.map((a) => a.effect)).toEqual(["settle n skipped"]);
        // --yes and --dry-run together are a usage error.
        await ctlRefused(p, ["skip", "--work-item", "h", "--yes", "--dry-run"], 2);
        expect(p.projection().items.h!.status).toBe("running");
        await ctlOk(p, ["skip", "--work-item", "h", "--yes"]);
        await p.runToDrain();
      }),
    T,
  );

  test.concurrent(
    "skip of a running item ends its session and settles it skipped; the loop goes on",
    () =>
      // The agent ignores SIGTERM (so do its children): the close path must escalate to SIGKILL.
      scenario(
        demoDefinition(
          [
            { id: "h", prompt: "hang", runner: "stubborn" },
            { id: "n", prompt: "quick\n@demo write n.txt n", verify: "test -s n.txt" },
            { id: "needs-h", prompt: "x", dependsOn: ["h"] },
          ],
          { runners: { stubborn: { command: ["sh", "-c", "trap '' TERM; echo start; echo wip > wip.tmp; mv wip.tmp wip.txt; sleep 600"] } } },
        ),
        {},
        async (p) => {
          const pid = await launchHang(p);
          await pollUntil(() => existsSync(join(worktreesOf(p.stateRoot), "h", "wip.txt")), "the agent wrote wip.txt");
          const doc = await ctlOk(p, ["skip", "--work-item", "h", "--yes", "--reason", "not needed"]);
          expect(p.alive(pid)).toBe(false);
          expect(doc.closed).toHaveLength(1);
          expect(doc.closed[0]).toMatchObject({ item: "h", attempt: 1, worktreeRemoved: true, how: "killed" });
          // What the agent left uncommitted was committed on its branch before the worktree went.
          expect(git(p.root, "log", "-1", "--format=%s", "loop/t/item/h")).toBe(
            "loop: h attempt 1: changes left when the session was closed (skip by alice@test)",
          );
          expect(git(p.root, "show", "loop/t/item/h:wip.txt")).toBe("wip");
          expect(doc.transitions.map((t) => t.type)).toEqual(["session_ended", "session_closed", "control_recorded", "item_settled"]);
          const st = p.projection();
          expect(st.items.h!.status).toBe("skipped");
          expect(st.items.h!.reason).toBe("skipped by alice@test: not needed");
          expect(st.items.h!.control.map((c) => [c.verb, c.actor, c.text])).toEqual([["skip", "alice@test", "not needed"]]);
          expect(st.loop.state).toBe("running");
          // Skipping a settled item is a no-op (exit 0, nothing appended), even without --yes.
          const head = p.head();
          const noop = await ctlOk(p, ["skip", "--work-item", "h"]);
          expect(noop.actions).toEqual([{ item: "h", effect: "h is skipped; nothing to skip", noop: true }]);
          expect(p.head()).toBe(head);
          const last = await p.runToDrain();
          expect(p.projection().items.n!.status).toBe("passed");
          expect(p.projection().items["needs-h"]!.status).toBe("blocked");
          expect(last.reason).toBe("Failed");
        },
      ),
    T,
  );

  test.concurrent(
    "cancel ends the session, settles cancelled and pauses the loop",
    () =>
      scenario(hangThenDemo(), {}, async (p) => {
        const pid = await launchHang(p);
        const doc = await ctlOk(p, ["cancel", "--work-item", "h", "--yes"], "bob@ops");
        expect(p.alive(pid)).toBe(false);
        expect(doc.transitions.map((t) => t.type)).toEqual(["session_ended", "session_closed", "control_recorded", "item_settled", "loop_paused"]);
        let st = p.projection();
        expect(st.items.h!.status).toBe("cancelled");
        expect(st.loop.state).toBe("paused");
        expect(st.loop.reason).toBe("cancelled h by bob@ops");
        // Paused: steps do nothing until resumed.
        const head = p.head();
        const r = await p.run();
        expect(r.action).toBe("paused");
        expect(p.head()).toBe(head);
        expect(p.projection().items.n!.status).toBe("pending");
        await ctlOk(p, ["resume"], "bob@ops");
        const last = await p.runToDrain();
        st = p.projection();
        expect(st.items.n!.status).toBe("passed");
        expect(last.reason).toBe("Stopped");
      }),
    T,
  );

  // Closing never loses work. What the agent left is sealed through the airlock with the attempt's
  // own git folder named outright (docs/threat-model.md#the-airlock): a stale index.lock of a killed
  // agent, or a checkout whose .git is gone, are no obstacle, and nothing is ever committed in the
  // project's repository above the checkout. A checkout whose work cannot be sealed (its git folder
  // gone) is kept, with a warning.
  const damages: { name: string; damage: (wt: string) => void; sealed: boolean; why?: string }[] = [
    { name: "a stale index.lock", damage: (wt) => writeFileSync(join(git(wt, "rev-parse", "--absolute-git-dir"), "index.lock"), ""), sealed: true },
    { name: "its .git gone", damage: (wt) => rmSync(join(wt, ".git")), sealed: true },
    {
      name: "its git folder gone",
      damage: (wt) => rmSync(git(wt, "rev-parse", "--absolute-git-dir"), { recursive: true }),
      sealed: false,
      why: "could not be committed",
    },
  ];
  for (const c of damages)
    test.concurrent(
      `closing a checkout with ${c.name}: ${c.sealed ? "its work is sealed on the item branch, the checkout removed" : "it is kept, with a warning"}; nothing is committed anywhere else`,
      () =>
        scenario(hangThenDemo(), {}, async (p) => {
          await launchHang(p);
          const wt = p.projection().items.h!.workspace!.worktree;
          writeFileSync(join(wt, "unsaved.txt"), "the agent's work\n");
          writeFileSync(join(p.root, "operator-wip.txt"), "the operator's own work\n");
          const branch = p.projection().items.h!.workspace!.branch;
          const [main, before] = git(p.root, "rev-parse", "HEAD", branch).split("\n");
          c.damage(wt);
          const r = await p.ctl(["cancel", "--work-item", "h", "--yes"]);
          expect(r.code).toBe(0);
          const doc = JSON.parse(r.stdout) as CtlDoc;
          if (c.sealed) {
            expect(doc.closed).toEqual([expect.objectContaining({ item: "h", worktreeRemoved: true, kept: null })]);
            expect(git(p.root, "show", `${branch}:unsaved.txt`)).toBe("the agent's work");
            expect(git(p.root, "rev-parse", `${branch}^`)).toBe(before!);
            expect(existsSync(wt)).toBe(false);
          } else {
            expect(doc.closed).toEqual([expect.objectContaining({ item: "h", worktreeRemoved: false, kept: expect.stringContaining(c.why!) })]);
            expect(r.stderr).toContain(`h: kept ${wt}`);
            expect(readFileSync(join(wt, "unsaved.txt"), "utf8")).toBe("the agent's work\n");
            expect(git(p.root, "rev-parse", branch)).toBe(before!);
          }
          expect(git(p.root, "rev-parse", "HEAD")).toBe(main!);
          expect(git(p.root, "status", "--porcelain", "--", "operator-wip.txt")).toBe("?? operator-wip.txt");
          expect(p.eventsOf("session_closed", "h").at(-1)!.payload.worktreeRemoved).toBe(c.sealed);
          expect(p.projection().items.h!.status).toBe("cancelled");
        }),
      T,
    );

  test.concurrent(
    "loop-wide stop ends the session, returns the item to pending, stops the loop; resume continues",
    () =>
      scenario(hangThenDemo(1), {}, async (p) => {
        const pid = await launchHang(p);
        const doc = await ctlOk(p, ["stop", "--yes", "--reason", "maintenance"]);
        expect(p.alive(pid)).toBe(false);
        expect(doc.transitions.map((t) => t.type)).toEqual(["session_ended", "session_closed", "item_requeued", "loop_stopped"]);
        let st = p.projection();
        expect(st.items.h!.status).toBe("pending");
        expect(st.items.h!.failures).toBe(0);
        expect(st.items.h!.held).toBe(false);
        expect(st.loop.state).toBe("stopped");
        expect(st.loop.reason).toBe("maintenance");
        const head = p.head();
        expect((await p.run()).action).toBe("stopped");
        expect(p.head()).toBe(head);
        // Stopping a stopped loop is a no-op.
        const noop = await ctlOk(p, ["stop", "--yes"]);
        expect(noop.actions.every((a) => a.noop)).toBe(true);
        expect(p.head()).toBe(head);
        await ctlOk(p, ["resume"]);
        // A stop is not a failed attempt: with maxAttempts 1 the item still gets attempt 2.
        const pid2 = await launchHang(p);
        expect(pid2).not.toBe(pid);
        st = p.projection();
        expect(st.items.h!.attempts).toHaveLength(2);
        await ctlOk(p, ["skip", "--work-item", "h", "--yes"]);
        expect(p.alive(pid2)).toBe(false);
        await p.runToDrain();
        expect(p.projection().items.n!.status).toBe("passed");
      }),
    T,
  );

  test.concurrent(
    "stop --work-item holds the item until start or retry releases it",
    () =>
      scenario(hangThenDemo(), {}, async (p) => {
        const pid = await launchHang(p);
        const doc = await ctlOk(p, ["stop", "--work-item", "h", "--yes"]);
        expect(doc.transitions.map((t) => t.type)).toEqual(["session_ended", "session_closed", "control_recorded", "item_requeued"]);
        expect(p.alive(pid)).toBe(false);
        let st = p.projection();
        expect(st.items.h!.status).toBe("pending");
        expect(st.items.h!.held).toBe(true);
        expect(st.loop.state).toBe("running");
        // The loop goes on with n, then idles on the held item instead of draining.
        const r = await p.run();
        expect(r.item).toBe("n");
        const idle = await p.runUntil((x) => x.action === "idle", { what: "idle on the held item" });
        expect(idle.reason).toBe("h is held by `loop ctl stop` (start or retry it)");
        expect(p.projection().items.n!.status).toBe("passed");
        expect(p.eventsOf("launch_reserved", "h")).toHaveLength(1);

        await ctlOk(p, ["start", "--work-item", "h"]);
        expect(p.projection().items.h!.held).toBe(false);
        const pid2 = await launchHang(p);
        await ctlOk(p, ["stop", "--work-item", "h", "--yes"]);
        expect(p.alive(pid2)).toBe(false);
        expect((await p.run()).action).toBe("idle");
        await ctlOk(p, ["retry", "--work-item", "h"]);
        const pid3 = await launchHang(p);
        st = p.projection();
        expect(st.items.h!.attempts).toHaveLength(3);
        expect(st.items.h!.failures).toBe(0);
        await ctlOk(p, ["skip", "--work-item", "h", "--yes"]);
        expect(p.alive(pid3)).toBe(false);
        expect((await p.runToDrain()).reason).toBe("Succeeded");
      }),
    T,
  );

  test.concurrent(
    "retry requeues a failed item and its blocked dependents and reopens the drained loop; refusals exit 1",
    () =>
      scenario(
        demoDefinition([
          { id: "f", prompt: "fails first\n@demo attempt 2 write f.txt ok", verify: "test -s f.txt", maxAttempts: 1 },
          { id: "g", prompt: "g", dependsOn: ["f"] },
          { id: "k", prompt: "k", dependsOn: ["g"] },
          { id: "free", prompt: "free" },
        ]),
        {},
        async (p) => {
          expect((await p.runToDrain()).reason).toBe("Failed");
          let st = p.projection();
          expect(["f", "g", "k", "free"].map((id) => st.items[id]!.status)).toEqual(["failed", "blocked", "blocked", "passed"]);
          const doc = await ctlOk(p, ["retry", "--work-item", "f"]);
          expect(doc.transitions.map((t) => `${t.type} ${t.item}`)).toEqual(["control_recorded f", "item_requeued f", "item_requeued g", "item_requeued k"]);
          st = p.projection();
          expect(["f", "g", "k", "free"].map((id) => st.items[id]!.status)).toEqual(["pending", "pending", "pending", "passed"]);
          expect(st.items.f!.failures).toBe(0);
          expect(st.loop.state).toBe("drained");
          const r = await p.run();
          expect(r.transitions.map((t) => t.type).slice(0, 2)).toEqual(["loop_reopened", "launch_reserved"]);
          expect(r.item).toBe("f");
          const last = await p.runToDrain();
          expect(last.reason).toBe("Succeeded");
          st = p.projection();
          expect(["f", "g", "k", "free"].map((id) => st.items[id]!.status)).toEqual(["passed", "passed", "passed", "passed"]);
          expect(st.items.free!.attempts).toHaveLength(1);
          expect(JSON.parse(readFileSync(join(p.stateRoot, "terminal_state.json"), "utf8")).outcome).toBe("Succeeded");

          const e1 = await ctlRefused(p, ["retry", "--work-item", "f"], 1);
          expect(e1).toContain("f passed");
          const e2 = await ctlRefused(p, ["reply", "--work-item", "g", "too late"], 1);
          expect(e2).toContain("g is passed");
        },
      ),
    T,
  );

  test.concurrent(
    "retry of a pending item that nothing holds is a no-op: exit 0, nothing appended, files untouched",
    () =>
      scenario(
        demoDefinition(
          [
            { id: "a", prompt: "a" },
            { id: "b", prompt: "b", dependsOn: ["a"] },
          ],
          { control: { requireStartCommand: true } },
        ),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("idle");
          const head = p.head();
          const files = snapshotTree(p.stateRoot);
          for (const id of ["a", "b"]) {
            const doc = await ctlOk(p, ["retry", "--work-item", id]);
            expect(doc.actions).toEqual([{ item: id, effect: `${id} is pending and not held; nothing to retry`, noop: true }]);
            expect(doc.transitions).toEqual([]);
          }
          expect(p.head()).toBe(head);
          expect(snapshotTree(p.stateRoot)).toEqual(files);
          await ctlOk(p, ["start", "--work-item", "a"]);
          await ctlOk(p, ["start", "--work-item", "b"]);
          expect((await p.runToDrain()).reason).toBe("Succeeded");
        },
      ),
    T,
  );

  test.concurrent(
    "usage errors exit 2 and change nothing; no-ops exit 0 and append nothing",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "a" }]), {}, async (p) => {
        await p.runToDrain();
        await ctlRefused(p, ["frobnicate"], 2);
        for (const verb of ["skip", "retry", "cancel"]) expect(await ctlRefused(p, [verb], 2)).toContain("needs --work-item");
        await ctlRefused(p, ["reply", "--work-item", "a"], 2);
        expect(await ctlRefused(p, ["reply", "--work-item", "a", " \n "], 2)).toContain("needs the answer text");
        await ctlRefused(p, ["skip", "--work-item", "nope", "--yes"], 2);
        await ctlRefused(p, ["skip", "--work-item", "bad ref!", "--yes"], 2);
        await ctlRefused(p, ["pause", "--work-item", "a"], 2);
        await ctlRefused(p, ["resume", "--work-item", "a"], 2);
        await ctlRefused(p, ["pause", "extra"], 2);
        const head = p.head();
        for (const args of [["resume"], ["start"], ["stop", "--work-item", "a"]]) {
          const doc = await ctlOk(p, args);
          expect(doc.actions.every((a) => a.noop)).toBe(true);
          expect(doc.transitions).toEqual([]);
        }
        expect(p.head()).toBe(head);
        // pause twice: the second is a no-op.
        const pause = await ctlOk(p, ["pause", "--reason", "lunch"], "carol@desk");
        expect(pause.transitions.map((t) => t.type)).toEqual(["loop_paused"]);
        expect(p.projection().loop.reason).toBe("lunch");
        const again = await ctlOk(p, ["pause"]);
        expect(again.actions[0]!.noop).toBe(true);
        expect(again.transitions).toEqual([]);
        await ctlOk(p, ["resume"], "carol@desk");
        expect((await p.run()).action).toBe("drained");
        // Every event a ctl appended names its actor; every step event names the step's.
        for (const e of p.events()) {
          if (["loop_paused", "loop_resumed"].includes(e.type)) expect(e.actor).toBe("carol@desk");
          if (["launch_reserved", "session_started", "item_settled", "loop_drained"].includes(e.type)) expect(e.actor).toBe("cron@test");
        }
      }),
    T,
  );

  test.concurrent(
    "a ctl while another process holds the lease exits 75 and does nothing",
    () =>
      scenario(hangThenDemo(), {}, async (p) => {
        const pid = await launchHang(p);
        const store = Store.open(p.stateRoot);
        let released = false;
        const got = store.acquireLease(10 * 60_000, pidAlive);
        expect(got.ok).toBe(true);
        try {
          if (!got.ok) return;
          expect(got.lease.pid).toBe(process.pid);
          for (const args of [["pause"], ["skip", "--work-item", "h", "--yes"], ["stop", "--yes"], ["reply", "--work-item", "h", "hi"]]) {
            const err = await ctlRefused(p, args, 75);
            expect(err).toContain("lease");
            expect(p.alive(pid)).toBe(true);
          }
          // A step is busy too.
          const run = await p.loop(["run", "--json", "--root", p.root]);
          expect(run.code).toBe(75);
          expect(run.stdout).toBe("");
          expect(JSON.parse(run.stderr).error).toMatchObject({ code: "busy" });
          // A dry run needs no lease.
          expect((await p.ctl(["skip", "--work-item", "h", "--dry-run"])).code).toBe(0);
          store.releaseLease(got.lease);
          released = true;
        } finally {
          if (!released && got.ok) store.releaseLease(got.lease);
          store.close();
        }
        await ctlOk(p, ["skip", "--work-item", "h", "--yes"]);
        expect(p.alive(pid)).toBe(false);
        await p.runToDrain();
      }),
    T,
  );
  test.concurrent(
    "retry --all-failed / --all-blocked: a whole backlog back in one command (dry run first), usage errors change nothing",
    () =>
      scenario(
        (q) => {
          const fixed = `test -e ${join(q.aux, "fixed")}`;
          return demoDefinition([
            { id: "a", prompt: "x", verify: fixed, maxAttempts: 1 },
            { id: "b", prompt: "x", dependsOn: ["a"] },
            { id: "c", prompt: "x", verify: fixed, maxAttempts: 1 },
          ]);
        },
        {},
        async (p) => {
          expect((await p.runToDrain()).reason).toBe("Failed");
          const status = () => Object.fromEntries(Object.values(p.projection().items).map((it) => [it.id, it.status]));
          expect(status()).toEqual({ a: "failed", b: "blocked", c: "failed" });
          const before = snapshotTree(p.stateRoot);
          for (const [args, message] of [
            [["retry", "--all-failed", "--work-item", "a"], "drop --work-item"],
            [["skip", "--all-failed", "--yes"], "--all-failed and --all-blocked go with retry, not skip"],
            [["retry"], "needs --work-item (or --all-failed, --all-blocked)"],
          ] as const) {
            const r = await p.ctl([...args]);
            expect({ args, code: r.code }).toEqual({ args, code: 2 });
            expect(r.stderr).toContain(message);
          }
          // Blocked alone would be blocked again: the dry run says so, and which item to retry.
          const dry = JSON.parse((await p.ctl(["retry", "--all-blocked", "--dry-run"])).stdout) as CtlDoc;
          expect(dry.actions.map((a) => a.effect)).toEqual([
            'requeue b with a fresh attempt budget; but dependency "a" failed, so the next step blocks it again (retry a too)',
          ]);
          expect(snapshotTree(p.stateRoot)).toEqual(before);

          writeFileSync(join(p.aux, "fixed"), "");
          const doc = await ctlOk(p, ["retry", "--all-failed"]);
          expect(doc.actions.map((a) => a.effect)).toEqual(["requeue a with a fresh attempt budget and unblock b", "requeue c with a fresh attempt budget"]);
          expect(doc.transitions.map((t) => `${t.type} ${t.item}`)).toEqual([
            "control_recorded a",
            "item_requeued a",
            "item_requeued b",
            "control_recorded c",
            "item_requeued c",
          ]);
          expect(status()).toEqual({ a: "pending", b: "pending", c: "pending" });
          // Nothing left to select: a no-op, exit 0, no event.
          const head = p.head();
          const none = await ctlOk(p, ["retry", "--all-failed", "--all-blocked"]);
          expect(none.actions).toEqual([{ item: null, effect: "no failed or blocked items; nothing to retry", noop: true }]);
          expect(p.head()).toBe(head);
          expect((await p.runToDrain()).reason).toBe("Succeeded");
        },
      ),
    T,
  );
});

describe("confirmation on a terminal", () => {
  test("a declined or interrupted confirmation names the tool once: `loop ctl: …`, not `loop ctl: loop ctl skip: …` (docs/cli/README.md#errors)", async () => {
    await scenario(demoDefinition([{ id: "alpha", prompt: "Alpha\n@demo write a.txt a" }]), {}, async (p) => {
      await p.run(); // creates the store, launches alpha
      for (const keys of ["n\r", "\x03"]) {
        const tty = onTerminal([process.execPath, LOOP, "ctl", "skip", "--work-item", "alpha"], {
          cwd: p.root,
          env: testEnv({ TERM: "xterm-256color", NO_COLOR: "1" }),
        });
        await tty.waitFor("Type the item's id (alpha)");
        tty.write(keys);
        const { text } = await tty.ended();
        // Terminal control sequences (the prompt gives the cursor back) are not part of the line.
        const line = text
          .split(/\r?\n/)
          .map((l) => l.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ""))
          .find((l) => /declined|interrupted/.test(l));
        expect(line).toStartWith("loop ctl: ");
        expect(line).not.toContain("loop ctl: loop ctl");
      }
      await p.runToDrain();
    });
  }, 60_000);
});
