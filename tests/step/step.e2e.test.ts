// `loop run` scenarios through the CLI (docs/cli/loop-run.md): real git repositories, real `bun cmd/loop.ts run`
// processes, real SQLite; agents are the built-in demo runner (obeying `@demo` lines of the prompt)
// or shell scripts declared as command runners. No assertion measures time: where a deadline must
// pass, loop.json has short timeouts and the test polls `loop run` a bounded number of times.
// Every scenario ends with `loop status` and `loop replay` exiting 0 and no session process left.
import { worktreesOf } from "../helpers/env.ts";
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, gitOk, pollUntil, type Project, runlogBlocks, scenario, sleep } from "../helpers/project.ts";
import { Store } from "../../lib/log/store.ts";
import { statusReport } from "../../lib/reports/status.ts";
import { renderStatus } from "../../lib/reports/render.ts";
import { itemOf } from "../../lib/log/projection.ts";
import { readRunPid } from "../../lib/writer/run-pid.ts";

const T = 120_000;
const hang = { command: ["sh", "-c", "echo start; sleep 600"] };

/**
 * Attempt 1 prints once, then outlives its stall deadline and shrugs off SIGTERM (noting it in
 * aux/term), so the step that ends it waits out the kill grace; attempt 2 just works.
 */
function stubbornDefinition(p: Project, stall: string): Record<string, unknown> {
  return demoDefinition([{ id: "slow", prompt: "x", runner: "stubborn", verify: "test -s ok.txt" }], {
    defaults: { timeouts: { launch: "2m", stall, verify: "1m" } },
    runners: {
      stubborn: {
        command: [
          "sh",
          "-c",
          `if [ "$LOOP_ATTEMPT" = 1 ]; then trap 'touch ${join(p.aux, "term")}' TERM; echo start; while :; do sleep 0.1; done; else echo ok > ok.txt; fi`,
        ],
      },
    },
  });
}

describe("loop run", () => {
  test.concurrent(
    "a step stopped after writing the launch record, before its spawn: nothing carries the attempt's mark, so the next step gives the attempt back at once, uncounted (never `session is starting` until the launch timeout)",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "a\n@demo write a.txt a\n@demo commit a", maxAttempts: 1 }]), {}, async (p) => {
        const killed = await p.loop(["run", "--json", "--root", p.root], { LOOP_FAILPOINT: "reserve:after_commit" });
        expect(killed.code).toBe(137);
        // What the killed step would have left a moment later: the launch record, no wrapper.
        mkdirSync(p.sessionDir("a", 1), { recursive: true });
        writeFileSync(join(p.sessionDir("a", 1), "launch.json"), JSON.stringify({ argv: ["sh", "-c", "true"], cwd: p.root, env: {}, tee: false }) + "\n");
        const next = await p.run();
        expect(next.reason).not.toBe("session is starting");
        const failed = p.eventsOf("launch_failed", "a");
        expect(failed.map((e) => [e.payload.interrupted, e.payload.reason])).toEqual([
          [true, "the step that launched this attempt stopped before its session started (nothing runs); not relaunched"],
        ]);
        // Uncounted: with one attempt allowed, the item still runs and passes.
        await p.runToDrain();
        expect(p.projection().items.a!.status).toBe("passed");
      }),
    T,
  );

  test.concurrent(
    "(a) retries, failure, blocked dependent, independent item, drained Failed, RUNLOG",
    () =>
      scenario(
        demoDefinition([
          {
            id: "flaky",
            prompt: "Write flaky.txt.\n@demo attempt 1 write notes.txt later\n@demo attempt 2 write flaky.txt done",
            verify: "test -s flaky.txt || { echo 'flaky.txt is missing'; exit 1; }",
          },
          { id: "broken", prompt: "Never works.\n@demo write other.txt nope", verify: "echo 'no never.txt here'; test -s never.txt" },
          { id: "after-broken", prompt: "Needs broken.", dependsOn: ["broken"] },
          { id: "indep", prompt: "Independent.\n@demo write indep.txt yes", verify: "test -s indep.txt" },
        ]),
        {},
        async (p) => {
          const last = await p.runToDrain();
          expect(last.reason).toBe("Failed");
          const st = p.projection();
          expect(st.loop.state).toBe("drained");
          expect(st.loop.outcome).toBe("Failed");
          const status = Object.fromEntries(st.order.map((id) => [id, st.items[id]!.status]));
          expect(status).toEqual({ flaky: "passed", broken: "failed", "after-broken": "blocked", indep: "passed" });
          expect(st.items["after-broken"]!.reason).toBe('dependency "broken" failed');
          expect(st.items["after-broken"]!.attempts).toHaveLength(0);
          expect(st.items.flaky!.attempts.map((a) => a.verify?.passed)).toEqual([false, true]);
          expect(st.items.broken!.attempts.map((a) => a.verify?.passed)).toEqual([false, false]);
          expect(st.items.broken!.reason).toContain("(failed attempt 2 of 2)");
          // The independent item ran after the failure, and the blocked one never launched.
          const launches = p.eventsOf("launch_reserved").map((e) => `${e.item}#${e.payload.attempt}`);
          expect(launches).toEqual(["flaky#1", "flaky#2", "broken#1", "broken#2", "indep#1"]);
          // The second attempt's handoff carries the first attempt's verify failure.
          const h2 = p.handoff("flaky", 2);
          expect(h2).toContain("### Attempt 1");
          expect(h2).toContain("flaky.txt is missing");
          expect(p.handoff("flaky", 1)).not.toContain("Earlier attempts");
          // Retries reuse the branch: attempt 1's leftovers are below attempt 2's commit.
          const log = git(p.root, "log", "--format=%s", "loop/t/item/flaky");
          expect(log.split("\n").slice(0, 2)).toEqual([
            "loop: flaky attempt 2: changes the agent left uncommitted",
            "loop: flaky attempt 1: changes the agent left uncommitted",
          ]);
          // RUNLOG.md: exactly one block per decided attempt (requeue or settle), in log order.
          const decided = p.events().filter((e) => e.type === "item_settled" || e.type === "item_requeued");
          const blocks = runlogBlocks(p.stateRoot);
          expect(blocks.map((b) => b.seq)).toEqual(decided.map((e) => e.seq));
          expect(blocks.map((b) => b.heading)).toEqual([
            "flaky · attempt 1 · requeued",
            "flaky · attempt 2 · passed",
            "broken · attempt 1 · requeued",
            "broken · attempt 2 · failed",
            "after-broken · blocked",
            "indep · attempt 1 · passed",
          ]);
          // terminal_state.json exists while drained and says the same.
          const term = JSON.parse(readFileSync(join(p.stateRoot, "terminal_state.json"), "utf8"));
          expect(term.outcome).toBe("Failed");
          // Another step on a drained loop changes nothing.
          const head = p.head();
          const again = await p.run();
          expect(again.action).toBe("drained");
          expect(again.transitions).toEqual([]);
          expect(p.head()).toBe(head);
        },
      ),
    T,
  );

  test.concurrent(
    "(b) an agent that hangs without output is stalled, its session ended, retried, then failed",
    () =>
      scenario(
        demoDefinition([{ id: "stuck", prompt: "hang", runner: "hang" }], {
          defaults: { timeouts: { launch: "2m", stall: "2s", verify: "1m" } },
          runners: { hang },
        }),
        {},
        async (p) => {
          const r1 = await p.run();
          expect(r1.action).toBe("launched");
          const pid1 = p.eventsOf("session_started", "stuck")[0]!.payload.pid as number;
          expect(p.alive(pid1)).toBe(true);
          await p.runUntil(() => p.eventsOf("session_ended", "stuck").length === 1, { what: "first attempt stalled" });
          const end1 = p.eventsOf("session_ended", "stuck")[0]!;
          expect(end1.payload.verdict).toBe("stalled");
          expect(end1.payload.reason).toContain("no progress in the output for");
          // Ended through the close path: recorded closed, and nothing of the group is left.
          expect(p.eventsOf("session_closed", "stuck").map((e) => e.payload.attempt)).toContain(1);
          expect(p.alive(pid1)).toBe(false);
          await p.runToDrain();
          const it = p.projection().items.stuck!;
          expect(it.status).toBe("failed");
          expect(it.attempts.map((a) => a.end?.verdict)).toEqual(["stalled", "stalled"]);
          expect(p.projection().loop.outcome).toBe("Failed");
          const pids = p.eventsOf("session_started", "stuck").map((e) => e.payload.pid as number);
          expect(pids).toHaveLength(2);
          for (const pid of pids) expect(p.alive(pid)).toBe(false);
        },
      ),
    T,
  );

  test.concurrent(
    "(c) an agent exiting non-zero with a passing change passes: the exit code never decides",
    () =>
      scenario(
        demoDefinition([{ id: "grumpy", prompt: "done, but grumpy\n@demo write ok.txt fine\n@demo exit 3", verify: "test -s ok.txt", maxAttempts: 1 }]),
        {},
        async (p) => {
          await p.runToDrain();
          const it = p.projection().items.grumpy!;
          expect(it.attempts[0]!.end).toMatchObject({ verdict: "exited", exitCode: 3 });
          expect(it.status).toBe("passed");
          expect(p.projection().loop.outcome).toBe("Succeeded");
        },
      ),
    T,
  );

  test.concurrent(
    "(d) an agent that vanishes (wrapper group SIGKILLed) is lost",
    () =>
      scenario(demoDefinition([{ id: "ghost", prompt: "sleepy\n@demo sleep 120", maxAttempts: 1 }]), {}, async (p) => {
        const r = await p.run();
        expect(r.action).toBe("launched");
        const pid = p.eventsOf("session_started", "ghost")[0]!.payload.pid as number;
        // Wait until the wrapper has spawned the agent, then kill the whole session from outside.
        await pollUntil(() => existsSync(join(p.sessionDir("ghost", 1), "started.json")), "agent started");
        process.kill(-pid, "SIGKILL");
        await pollUntil(() => !p.alive(pid), "session group gone");
        await p.runToDrain();
        const end = p.eventsOf("session_ended", "ghost")[0]!;
        expect(end.payload.verdict).toBe("lost");
        expect(end.payload.reason).toContain("vanished");
        expect(existsSync(join(p.sessionDir("ghost", 1), "exit.json"))).toBe(false);
        expect(p.projection().items.ghost!.status).toBe("failed");
      }),
    T,
  );

  test.concurrent(
    "(e) a question pauses the loop; reply + resume delivers the answer in the next handoff",
    () =>
      scenario(
        demoDefinition([
          {
            id: "asker",
            prompt: "Paint it.\n@demo attempt 1 ask Which colour, red or blue?\n@demo attempt 2 write colour.txt blue",
            verify: "test -s colour.txt",
            maxAttempts: 1,
          },
          { id: "later", prompt: "after" },
        ]),
        {},
        async (p) => {
          const paused = await p.runUntil((r) => r.action === "paused", { what: "paused by the question" });
          expect(paused.item).toBe("asker");
          expect(paused.reason).toBe("asker needs input: Which colour, red or blue?");
          let st = p.projection();
          expect(st.loop.state).toBe("paused");
          expect(st.loop.reason).toBe("asker needs input: Which colour, red or blue?");
          expect(st.items.asker!.status).toBe("needs_input");
          expect(st.items.asker!.question).toBe("Which colour, red or blue?");
          expect(st.items.later!.status).toBe("pending");
          // Paused: a step does nothing.
          const head = p.head();
          expect((await p.run()).action).toBe("paused");
          expect(p.head()).toBe(head);

          const reply = await p.ctl(["reply", "--work-item", "asker", "blue, please"]);
          expect(reply.code).toBe(0);
          expect(p.projection().loop.state).toBe("paused");
          expect((await p.ctl(["resume"])).code).toBe(0);
          await p.runToDrain();
          const h2 = p.handoff("asker", 2);
          expect(h2).toContain("blue, please");
          expect(h2).toContain("You asked:\n\n```text\nWhich colour, red or blue?\n```");
          st = p.projection();
          expect(st.items.asker!.status).toBe("passed");
          // A question is not a failed attempt: the budget of 1 was enough.
          expect(st.items.asker!.failures).toBe(0);
          expect(st.items.later!.status).toBe("passed");
          expect(st.loop.outcome).toBe("Succeeded");
        },
      ),
    T,
  );

  test.concurrent(
    "(g) uncommitted changes are committed on the item branch, naming the item and attempt",
    () =>
      scenario(demoDefinition([{ id: "messy", prompt: "leave it\n@demo write messy.txt left behind", verify: "test -s messy.txt" }]), {}, async (p) => {
        await p.runToDrain();
        expect(p.projection().items.messy!.status).toBe("passed");
        const branch = "loop/t/item/messy";
        expect(git(p.root, "log", "-1", "--format=%s", branch)).toBe("loop: messy attempt 1: changes the agent left uncommitted");
        expect(git(p.root, "show", `${branch}:messy.txt`)).toBe("left behind");
        // The passed item's worktree is removed; the branch keeps the work.
        expect(existsSync(join(worktreesOf(p.stateRoot), "messy"))).toBe(false);
        expect(git(p.root, "status", "--porcelain")).toBe("");
      }),
    T,
  );

  test.concurrent(
    "(h) a verify past its deadline is ended through the close path (its whole process group) and recorded timed out; the attempt fails",
    () =>
      scenario(
        (p) =>
          demoDefinition([{ id: "slow", prompt: "slow verify", verify: `echo $$ > ${join(p.aux, "verify.pid")}; echo verifying; sleep 600`, maxAttempts: 1 }], {
            defaults: { timeouts: { launch: "2m", stall: "10m", verify: "6s" } },
          }),
        {},
        async (p) => {
          await p.runToDrain();
          const vf = p.eventsOf("verify_finished", "slow");
          expect(vf).toHaveLength(1);
          expect(vf[0]!.payload).toMatchObject({ passed: false, timedOut: true, exitCode: null });
          expect(vf[0]!.payload.reason).toBe("timed out after 6s");
          expect(vf[0]!.payload.tail).toContain("verifying");
          // The command's shell and the group it ran in (led by its wrapper, as recorded) are gone.
          const shell = Number(readFileSync(join(p.aux, "verify.pid"), "utf8").trim());
          const started = p.eventsOf("verify_started", "slow");
          expect(started).toHaveLength(1);
          const pgid = started[0]!.payload.pgid as number;
          expect(shell).toBeGreaterThan(0);
          expect(existsSync(`/proc/${shell}`) && !readFileSync(`/proc/${shell}/stat`, "utf8").includes(") Z ")).toBe(false);
          expect(p.alive(pgid)).toBe(false);
          expect(p.projection().items.slow!.status).toBe("failed");
        },
      ),
    T,
  );

  test.concurrent(
    "(i) merge landing: items build on the landed branch, a conflict fails only that item, main never moves",
    () =>
      scenario(
        demoDefinition(
          [
            {
              id: "early",
              prompt:
                "edit shared\n@demo attempt 1 write shared.txt from early\n@demo attempt 1 commit early edits shared\n@demo attempt 1 sleep 120\n@demo attempt 2 print again",
              verify: "test -s shared.txt",
            },
            { id: "a", prompt: "a\n@demo write a.txt a\n@demo commit add a", verify: "test -s a.txt" },
            { id: "b", prompt: "b\n@demo write b.txt b", verify: "test -s a.txt && test -s b.txt" },
            { id: "late", prompt: "edit shared\n@demo write shared.txt from late\n@demo commit late edits shared", verify: "test -s shared.txt" },
            { id: "dep-early", prompt: "needs early", dependsOn: ["early"] },
            { id: "z", prompt: "z\n@demo write z.txt z", verify: "test -s z.txt" },
          ],
          { defaults: { landing: "merge" } },
        ),
        { files: { "shared.txt": "base\n" } },
        async (p) => {
          const mainHead = git(p.root, "rev-parse", "main");
          const early = "loop/t/item/early";
          // early commits its edit (in its attempt's own git folder: the item branch is loop's to
          // write, after the airlock) and keeps working; the operator holds it (stop), the loop goes on.
          expect((await p.run()).item).toBe("early");
          const earlyGit = join(p.sessionDir("early", 1), "git");
          await pollUntil(
            () =>
              gitOk(p.root, "--git-dir", earlyGit, "rev-parse", "--verify", "-q", "HEAD") &&
              git(p.root, "--git-dir", earlyGit, "log", "-1", "--format=%s", "HEAD") === "early edits shared",
            "early's commit",
          );
          const stop = await p.ctl(["stop", "--work-item", "early", "--yes"]);
          expect(stop.code).toBe(0);
          // Closing it sealed its work through the airlock: loop wrote the item branch to the agent's commit.
          expect(git(p.root, "log", "-1", "--format=%s", early)).toBe("early edits shared");
          // z is held too, so that it runs after early's conflict.
          expect((await p.ctl(["stop", "--work-item", "z", "--yes"])).code).toBe(0);
          const idle = await p.runUntil((r) => r.action === "idle", { what: "idle with early and z held" });
          expect(idle.reason).toContain("early is held");
          let st = p.projection();
          expect(["a", "b", "late", "z", "dep-early"].map((id) => st.items[id]!.status)).toEqual(["passed", "passed", "passed", "pending", "pending"]);
          // b started from the landed branch (a's landing commit is its ancestor).
          const aLanding = st.items.a!.landing!.commit!;
          expect(st.items.a!.landing!.outcome).toBe("merged");
          expect(gitOk(p.root, "merge-base", "--is-ancestor", aLanding, "loop/t/item/b")).toBe(true);
          // Release early: its next attempt reuses its branch, verify passes, the merge conflicts.
          expect((await p.ctl(["start", "--work-item", "early", "--work-item", "z"])).code).toBe(0);
          const last = await p.runToDrain();
          expect(last.reason).toBe("Failed");
          st = p.projection();
          expect(st.items.early!.status).toBe("failed");
          expect(st.items.early!.settleCode).toBe("merge_conflict");
          expect(st.items.early!.landing).toMatchObject({ outcome: "conflict", code: "conflict" });
          expect(st.items.early!.reason).toContain("shared.txt");
          expect(st.items.early!.attempts.at(-1)!.verify!.passed).toBe(true);
          expect(st.items["dep-early"]!.status).toBe("blocked");
          // The loop went on after the conflict: z ran and landed afterwards, on top of late's edit.
          const settledSeq = (id: string) => p.eventsOf("item_settled", id)[0]!.seq;
          expect(st.items.z!.status).toBe("passed");
          expect(settledSeq("z")).toBeGreaterThan(settledSeq("early"));
          expect(git(p.root, "show", "loop/t/item/z:shared.txt")).toBe("from late");
          // The landed branch has every passed item and not the conflicting one.
          const landed = "loop/t/landed";
          expect(git(p.root, "show", `${landed}:shared.txt`)).toBe("from late");
          for (const f of ["a.txt", "b.txt", "z.txt"]) expect(gitOk(p.root, "cat-file", "-e", `${landed}:${f}`)).toBe(true);
          expect(gitOk(p.root, "merge-base", "--is-ancestor", early, landed)).toBe(false);
          // No merge left half-done in the landing worktree.
          expect(git(join(worktreesOf(p.stateRoot), "_landing"), "status", "--porcelain")).toBe("");
          // The operator's checkout is untouched.
          expect(git(p.root, "rev-parse", "main")).toBe(mainHead);
          expect(git(p.root, "symbolic-ref", "--short", "HEAD")).toBe("main");
          expect(git(p.root, "status", "--porcelain")).toBe("");
          expect(readFileSync(join(p.root, "shared.txt"), "utf8")).toBe("base\n");
        },
      ),
    T,
  );

  test.concurrent(
    "(j) editing loop.json mid-run: the change is imported once the attempt in flight has ended (a removed pending item is withdrawn), an added one reopens the loop",
    () => {
      const items = [
        { id: "one", prompt: "one\n@demo sleep 1\n@demo write one.txt 1", verify: "test -s one.txt" },
        { id: "two", prompt: "two\n@demo write two.txt 2", verify: "test -s two.txt" },
        { id: "three", prompt: "three" },
      ];
      return scenario(demoDefinition(items), {}, async (p) => {
        expect((await p.run()).item).toBe("one");
        // Remove "three" (pending) while "one" is in flight: "one" is verified under the definition it was launched with.
        p.writeDefinition(demoDefinition(items.slice(0, 2)));
        const r = await p.run([0, 1, 75]);
        if (r.transitions.length) expect(r.transitions.map((t) => t.type)).not.toContain("definition_imported");
        expect(p.eventsOf("definition_imported")).toHaveLength(1);
        expect(p.projection().items.three!.status).toBe("pending");
        const drained = await p.runToDrain();
        expect(drained.reason).toBe("Succeeded");
        let st = p.projection();
        expect(st.items.one!.status).toBe("passed");
        expect(st.items.two!.status).toBe("passed");
        expect(st.items.three!.status).toBe("withdrawn");
        // The import came after one's verdict, before two was launched.
        const order = p
          .events()
          .filter(
            (e) => e.type === "definition_imported" || (e.type === "verify_finished" && e.item === "one") || (e.type === "launch_reserved" && e.item === "two"),
          )
          .map((e) => e.type);
        expect(order).toEqual(["definition_imported", "verify_finished", "definition_imported", "launch_reserved"]);
        // Add "four" after the drain: the loop reopens and runs only the new item.
        p.writeDefinition(demoDefinition([...items.slice(0, 2), { id: "four", prompt: "four\n@demo write four.txt 4", verify: "test -s four.txt" }]));
        const reopened = await p.run();
        expect(reopened.transitions.map((t) => t.type).slice(0, 3)).toEqual(["definition_imported", "loop_reopened", "launch_reserved"]);
        await p.runToDrain();
        st = p.projection();
        expect(st.items.four!.status).toBe("passed");
        expect(st.loop.outcome).toBe("Succeeded");
        const launches = p.eventsOf("launch_reserved").map((e) => e.item);
        expect(launches).toEqual(["one", "two", "four"]);
        expect(p.eventsOf("loop_drained")).toHaveLength(2);
      });
    },
    T,
  );

  test.concurrent(
    "(k) an invalid loop.json: exit 2, nothing appended",
    () =>
      scenario(demoDefinition([{ id: "only", prompt: "x" }]), {}, async (p) => {
        await p.runToDrain();
        const head = p.head();
        const state = readFileSync(join(p.stateRoot, "state.json"), "utf8");
        for (const bad of [
          "{ not json",
          JSON.stringify(demoDefinition([{ id: "Bad Id", prompt: "x" }])),
          JSON.stringify(demoDefinition([{ id: "x", prompt: "x", dependsOn: ["nope"] }])),
        ]) {
          p.writeDefinition(bad);
          const r = await p.loop(["run", "--json", "--root", p.root]);
          expect(r.code).toBe(2);
          expect(r.stdout).toBe("");
          expect(r.stderr).toContain("invalid_definition");
          expect(p.head()).toBe(head);
          expect(readFileSync(join(p.stateRoot, "state.json"), "utf8")).toBe(state);
        }
        // Before any store exists, an invalid definition creates nothing.
        p.extraGroups.push(...p.sessionGroups());
        rmSync(p.stateRoot, { recursive: true, force: true });
        const r = await p.loop(["run", "--json", "--root", p.root]);
        expect(r.code).toBe(2);
        expect(r.stderr).toContain("invalid_definition");
        expect(existsSync(p.stateRoot)).toBe(false);
        p.writeDefinition(demoDefinition([{ id: "only", prompt: "x" }]));
        // A valid one beside the loop's item branch is a lost store, not a new loop (docs/state.md#a-lost-store):
        // refused, nothing created; with the branch archived, the loop starts afresh.
        const lost = await p.loop(["run", "--json", "--root", p.root]);
        expect(lost.code).toBe(2);
        expect(lost.stderr).toContain("store_missing");
        expect(existsSync(p.stateRoot)).toBe(false);
        git(p.root, "branch", "-m", "loop/t/item/only", "archive/only");
        await p.runToDrain();
      }),
    T,
  );

  test.concurrent(
    "(l) loop run --watch drives the loop to drained, writing then removing run.pid; one watcher per loop; SIGTERM exits 130",
    () => {
      // w1's agent works until the test has seen the watcher's run.pid (aux/go-w1): however slow
      // the test's own polling under load, the watcher cannot finish before it looked.
      const items = [
        { id: "w1", prompt: "w1", runner: "gated1", verify: "test -s w1.txt" },
        { id: "w2", prompt: "w2\n@demo write w2.txt 2", verify: "test -s w2.txt" },
      ];
      // The gated agent works until the test creates aux/go: no race with the watcher.
      const gate = (p: Project, file: string, out: string) => ({
        command: ["sh", "-c", `echo waiting; while [ ! -e ${join(p.aux, file)} ]; do sleep 0.1; done; echo x > ${out}`],
      });
      const gated = (p: Project) => gate(p, "go", "w3.txt");
      return scenario(
        (p) => demoDefinition(items, { runners: { gated: gated(p), gated1: gate(p, "go-w1", "w1.txt") } }),
        {},
        async (p) => {
          const pidFile = join(p.stateRoot, "run.pid");
          // `--watch` on a project with no state root yet: it creates it before writing run.pid.
          expect(existsSync(p.stateRoot)).toBe(false);
          const watchArgs = ["run", "--watch", "--interval", "200ms", "--json", "--root", p.root];
          const watch = p.spawn(watchArgs);
          const output = new Response(watch.stdout).text();
          await pollUntil(() => readRunPid(pidFile)?.pid === watch.pid, "run.pid names the watcher");
          writeFileSync(join(p.aux, "go-w1"), "");
          const [out, code] = await Promise.all([output, watch.exited]);
          expect(code).toBe(0);
          expect(existsSync(pidFile)).toBe(false);
          // JSON Lines: one document per step, each on its own line.
          const docs = out
            .trimEnd()
            .split("\n")
            .map((line) => JSON.parse(line));
          expect(docs.every((d) => d.schema === "loop/run@1")).toBe(true);
          expect(docs[0].action).toBe("launched");
          expect(docs.at(-1).action).toBe("drained");
          expect(p.projection().loop.outcome).toBe("Succeeded");

          // Add a gated item and interrupt the watch while it waits on it.
          p.writeDefinition(
            demoDefinition([...items, { id: "w3", prompt: "w3", runner: "gated", verify: "test -s w3.txt" }], {
              runners: { gated: gated(p), gated1: gate(p, "go-w1", "w1.txt") },
            }),
          );
          // An hour between steps: a signal must end the wait, not leave the process waiting it out
          // (this test would then run into its own time limit).
          // A run.pid left by a killed watcher (its pid is dead) does not stop the next one.
          const dead = Bun.spawnSync(["true"]).pid;
          writeFileSync(pidFile, `${dead}\n`);
          const watch2 = p.spawn(["run", "--watch", "--interval", "1h", "--json", "--root", p.root]);
          await pollUntil(() => readRunPid(pidFile)?.pid === watch2.pid && p.projection().items.w3?.status === "running", "w3 running under --watch");
          // A second watcher of the same loop is refused (busy), and leaves the first one's run.pid alone.
          const watch3 = p.spawn(["run", "--watch", "--json", "--root", p.root]);
          const [out3, err3, code3] = await Promise.all([new Response(watch3.stdout).text(), new Response(watch3.stderr).text(), watch3.exited]);
          expect(code3).toBe(75);
          expect(out3).toBe("");
          expect(JSON.parse(err3).error).toMatchObject({ code: "busy", message: expect.stringContaining(`pid ${watch2.pid}`) });
          expect(readRunPid(pidFile)?.pid).toBe(watch2.pid);
          watch2.kill("SIGTERM");
          expect(await watch2.exited).toBe(130);
          expect(existsSync(pidFile)).toBe(false);
          // The session is detached: it outlives the watcher, and the next steps settle it.
          const pid = p.eventsOf("session_started", "w3")[0]!.payload.pid as number;
          expect(p.alive(pid)).toBe(true);
          writeFileSync(join(p.aux, "go"), "");
          await p.runToDrain();
          expect(p.projection().items.w3!.status).toBe("passed");
        },
      );
    },
    T,
  );

  test.concurrent(
    "(n) an agent that leaves a background process behind: its whole group is ended before its verify starts",
    () =>
      scenario(
        (p) =>
          // The verify itself checks that the straggler is gone by the time it runs.
          demoDefinition(
            [
              {
                id: "leaky",
                prompt: "x",
                runner: "leaky",
                verify: `test -s done.txt && s=$(awk '/^State:/ {print $2}' /proc/$(cat ${join(p.aux, "bg.pid")})/status 2>/dev/null || true); [ -z "$s" ] || [ "$s" = Z ]`,
              },
            ],
            {
              runners: { leaky: { command: ["sh", "-c", `sleep 600 & echo $! > ${join(p.aux, "bg.pid")}; echo ok > done.txt`] } },
            },
          ),
        {},
        async (p) => {
          await p.runToDrain();
          expect(p.projection().items.leaky!.status).toBe("passed");
          const bg = Number(readFileSync(join(p.aux, "bg.pid"), "utf8").trim());
          const pid = p.eventsOf("session_started", "leaky")[0]!.payload.pid as number;
          // The straggler was in the session's group, and the group is gone.
          expect(bg).toBeGreaterThan(0);
          expect(p.alive(pid)).toBe(false);
          // Ended before the verify, so the close path at settle found nothing left.
          expect(p.eventsOf("session_closed", "leaky")[0]!.payload.how).toBe("not_running");
        },
      ),
    T,
  );

  test.concurrent(
    "(o) a root that is not a git repository: exit 2, nothing created (no state root, no lease); as a repository it runs",
    () =>
      scenario(demoDefinition([{ id: "only", prompt: "x" }]), {}, async (p) => {
        rmSync(join(p.root, ".git"), { recursive: true, force: true });
        for (const watch of [[], ["--watch"]]) {
          const r = await p.loop(["run", ...watch, "--json", "--root", p.root]);
          expect(r.code).toBe(2);
          expect(JSON.parse(r.stderr).error).toMatchObject({ code: "usage", message: expect.stringContaining("not a git repository") });
          expect(existsSync(join(p.root, ".loop"))).toBe(false);
        }
        // Once it is a repository, the loop runs normally (and repairs its materializations).
        git(p.root, "init", "-q", "-b", "main");
        git(p.root, "config", "user.email", "test@example.invalid");
        git(p.root, "config", "user.name", "test");
        git(p.root, "config", "commit.gpgsign", "false");
        git(p.root, "add", "-A");
        git(p.root, "commit", "-q", "-m", "initial");
        expect((await p.runToDrain()).reason).toBe("Succeeded");
        expect(p.eventsOf("lease_taken_over")).toEqual([]);
      }),
    T,
  );

  test.concurrent(
    "(m) a runner program not on PATH: an environment fault, no attempt spent, the loop paused (not the next item launched), step exit 1",
    () =>
      scenario(
        demoDefinition(
          [
            { id: "nowhere", prompt: "x", runner: "ghost" },
            { id: "fine", prompt: "fine" },
          ],
          { runners: { ghost: { command: ["loop-test-no-such-program-xyz", "{handoff}"] } } },
        ),
        {},
        async (p) => {
          const r = await p.run([1]);
          // The pause is the step's result, said once (its reason and attention), not an error besides.
          expect(r.errors).toEqual([]);
          expect(r.attention).toEqual([
            { kind: "environment", item: "nowhere", reason: expect.stringContaining('program "loop-test-no-such-program-xyz" was not found on PATH') },
          ]);
          expect(r.stderr).toContain("not found"); // the import's warning
          expect(p.eventsOf("launch_failed")).toEqual([]);
          expect(p.eventsOf("launch_reserved")).toEqual([]);
          const st = p.projection();
          expect({ status: st.items.nowhere!.status, attempts: st.items.nowhere!.attempts.length }).toEqual({ status: "pending", attempts: 0 });
          // The machine needs a person: nothing else is launched meanwhile.
          expect(r.action).toBe("paused");
          expect(st.items.fine!.status).toBe("pending");
          p.writeDefinition(
            demoDefinition([
              { id: "nowhere", prompt: "x" },
              { id: "fine", prompt: "fine" },
            ]),
          );
          expect((await p.ctl(["resume"])).code).toBe(0);
          await p.runToDrain();
          expect(p.projection().items.fine!.status).toBe("passed");
          expect(p.projection().items.nowhere!.status).toBe("passed");
        },
      ),
    T,
  );

  test.concurrent(
    "(r) a step that outlives its lease (another step took it over) stops at its next write: exit 75, nothing recorded, the new holder goes on",
    () =>
      scenario(
        (p) => stubbornDefinition(p, "1s"),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          // Steps until one finds the session stalled and sits in the close path's grace period.
          let step: ReturnType<Project["spawn"]> | null = null;
          for (let i = 0; i < 200 && !existsSync(join(p.aux, "term")); i++) {
            step ??= p.spawn(["run", "--json", "--root", p.root], { LOOP_KILL_GRACE_MS: "20000" });
            const done = await Promise.race([step.exited.then(() => true), sleep(100).then(() => false)]);
            if (done && !existsSync(join(p.aux, "term"))) {
              expect(step.exitCode).toBe(0);
              step = null;
            }
          }
          expect(existsSync(join(p.aux, "term"))).toBe(true);
          // As a `loop run` whose clock is past the lease's expiry would: take the lease over.
          const other = Store.open(p.stateRoot);
          const took = other.acquireLease(60_000, () => true, new Date(Date.now() + 24 * 3_600_000));
          other.close();
          expect(took.ok && took.tookOver?.pid).toBe(step!.pid);
          const head = p.events().length;
          const [out, err, code] = await Promise.all([new Response(step!.stdout).text(), new Response(step!.stderr).text(), step!.exited]);
          expect(code).toBe(75);
          expect(out).toBe("");
          expect(JSON.parse(err.trim().split("\n").at(-1)!).error).toMatchObject({ code: "busy", message: expect.stringContaining("taken over") });
          expect(p.events().length).toBe(head); // no session_ended from the step that lost the lease
          expect(p.eventsOf("session_ended", "slow")).toEqual([]);
          // The lease row is the new holder's; once it is released (or expires), steps go on.
          const s = Store.open(p.stateRoot);
          if (took.ok) s.releaseLease(took.lease);
          s.close();
          // Attempt 2 prints nothing: under a 1 s stall deadline a loaded machine could call it stalled.
          p.writeDefinition(stubbornDefinition(p, "10m"));
          await p.runToDrain();
          expect(p.projection().items.slow!.status).toBe("passed");
        },
      ),
    T,
  );

  test.concurrent(
    "(s) a passed item's checkout is removed though its verify left files behind: the branch holds exactly what was verified, nothing of the verify's is committed",
    () =>
      scenario(
        // The verify passes but leaves an uncommitted file and a stale index.lock in its own git folder.
        demoDefinition([
          { id: "late", prompt: "x\n@demo write x.txt 1", verify: 'test -s x.txt && echo late > late.txt && touch "$(git rev-parse --git-dir)/index.lock"' },
        ]),
        {},
        async (p) => {
          const settle = await p.runUntil((r, q) => q.projection().items.late!.status === "passed", { codes: [0, 1], what: "late passed" });
          expect(settle.errors).toEqual([]);
          expect(git(p.root, "ls-tree", "--name-only", "loop/t/item/late")).not.toContain("late.txt");
          expect(git(p.root, "rev-parse", "loop/t/item/late")).toBe(p.eventsOf("verify_reserved", "late")[0]!.payload.head as string);
          const wt = p.projection().items.late!.workspace!.worktree;
          expect(existsSync(wt)).toBe(false);
          expect(p.eventsOf("session_closed", "late").at(-1)!.payload.worktreeRemoved).toBe(true);
        },
      ),
    T,
  );

  test.concurrent(
    "(q) what the agent left is committed on its side, its own stale index.lock cleared; a git folder it broke fails the attempt seal_failed with git's reason; the loop goes on",
    () =>
      scenario(
        demoDefinition(
          [
            { id: "locked", prompt: "x", runner: "locker", maxAttempts: 1, verify: "test -s left.txt" },
            { id: "broken", prompt: "x", runner: "breaker", maxAttempts: 1 },
            { id: "after", prompt: "y" },
          ],
          {
            runners: {
              locker: { command: ["sh", "-c", 'echo left > left.txt; touch "$(git rev-parse --git-dir)/index.lock"'] },
              breaker: { command: ["sh", "-c", 'echo left > left.txt; echo garbage > "$(git rev-parse --git-dir)/HEAD"'] },
            },
          },
        ),
        {},
        async (p) => {
          const last = await p.runToDrain();
          expect(last.reason).toBe("Failed");
          expect(p.projection().items.locked!.status).toBe("passed");
          expect(git(p.root, "show", "loop/t/item/locked:left.txt")).toBe("left");
          const v = p.eventsOf("verify_finished", "broken")[0]!.payload;
          expect(v).toMatchObject({ passed: false, code: "seal_failed" });
          expect(p.eventsOf("verify_reserved", "broken")).toEqual([]);
          expect(p.projection().items.broken!.status).toBe("failed");
          expect(p.projection().items.after!.status).toBe("passed");
        },
      ),
    T,
  );

  test.concurrent(
    '(u) an item may be called "constructor" (an Object.prototype name): it runs, and its dependent after it',
    () =>
      scenario(
        demoDefinition([
          { id: "constructor", prompt: "x" },
          { id: "b", prompt: "y", dependsOn: ["constructor"] },
        ]),
        {},
        async (p) => {
          const last = await p.runToDrain();
          expect(last.reason).toBe("Succeeded");
          expect(itemOf(p.projection(), "constructor")!.status).toBe("passed");
          expect(p.projection().items.b!.status).toBe("passed");
        },
      ),
    T,
  );

  test.concurrent(
    "(v) an agent's question with terminal escapes is printed escaped by every text output, colour or not",
    () =>
      scenario(
        // loop.json holds no control characters (docs/loop-json.md#the-file): the agent writes them itself.
        demoDefinition([{ id: "asker", prompt: "x", maxAttempts: 1, runner: "asker" }], {
          runners: { asker: { command: ["sh", "-c", String.raw`printf '\033[31mRED\033[0m?\007\n' > "$LOOP_ASK_FILE"`] } },
        }),
        {},
        async (p) => {
          await p.runUntil((r) => r.action === "paused", { what: "paused by the question" });
          expect(p.projection().items.asker!.question).toBe("\u001b[31mRED\u001b[0m?\u0007");
          const escaped = "\\u001b[31mRED\\u001b[0m?\\u0007";
          const texts = [
            (await p.loop(["status", "--text", "--root", p.root])).stdout,
            (await p.loop(["run", "--text", "--root", p.root])).stdout,
            (await p.loop(["ctl", "skip", "--work-item", "asker", "--dry-run", "--text", "--root", p.root])).stdout,
          ];
          for (const t of texts.slice(0, 2)) expect(t).toContain(escaped);
          expect(texts[2]).toContain("skipped");
          for (const t of texts) expect(t).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
          // In colour, the only escapes are the tool's own, and the columns still line up.
          const coloured = renderStatus(statusReport(join(p.root, ".loop")), true);
          expect(coloured).toContain(escaped);
          const own = /\x1b\[\d+m/g;
          expect(coloured.replace(own, "")).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
          const [header, row] = coloured
            .split("\n")
            .filter((l) => l.startsWith("ITEM") || l.startsWith("asker "))
            .map((l) => l.replace(own, ""));
          expect(row!.indexOf(" (gives up at ") - 1).toBe(header!.indexOf("FAILED"));
        },
      ),
    T,
  );

  test.concurrent(
    "(w) a FIFO where loop reads a file (state.json, the ask file) is not read: no step hangs, the loop goes on",
    () =>
      scenario(
        demoDefinition([{ id: "piped", prompt: "x", runner: "fifo", verify: "test -s x.txt", maxAttempts: 1 }], {
          runners: { fifo: { command: ["sh", "-c", 'mkfifo "$LOOP_ASK_FILE"; echo x > x.txt'] } },
        }),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          const stateJson = join(p.root, ".loop", "state.json");
          rmSync(stateJson);
          expect(Bun.spawnSync(["mkfifo", stateJson]).exitCode).toBe(0);
          const last = await p.runToDrain();
          expect(last.reason).toBe("Succeeded");
          expect(p.eventsOf("needs_input")).toEqual([]);
          expect(statSync(stateJson).isFile()).toBe(true);
        },
      ),
    T,
  );

  test.concurrent(
    "(x) a watcher outlives a loop.json that is invalid for a while (an editor saving it): it warns, and goes on once it is valid",
    () =>
      scenario(demoDefinition([{ id: "first", prompt: "x" }]), {}, async (p) => {
        await p.runToDrain();
        const watch = p.spawn(["run", "--watch", "--forever", "--interval", "100ms", "--json", "--root", p.root]);
        // Once it runs (run.pid is written after its start-up checks), the file breaks.
        await pollUntil(() => readRunPid(join(p.stateRoot, "run.pid"))?.pid === watch.pid, "watcher started");
        const good = readFileSync(join(p.root, "loop.json"), "utf8");
        writeFileSync(join(p.root, "loop.json"), "{ half-written");
        const stderr = watch.stderr.getReader();
        let err = "";
        while (!err.includes("tries again")) {
          const { value, done } = await stderr.read();
          if (done) throw new Error(`the watcher stopped: ${err}`);
          err += new TextDecoder().decode(value);
        }
        stderr.releaseLock();
        // Valid again, with one more item: the watcher picks it up and runs it.
        writeFileSync(join(p.root, "loop.json"), good.replace('"items": [', '"items": [\n    { "id": "second", "prompt": "y" },'));
        await pollUntil(() => p.projection().items.second?.status === "passed", "second passed");
        watch.kill("SIGTERM");
        expect(await watch.exited).toBe(130);
      }),
    T,
  );
  test.concurrent(
    "(y) the attempts column counts what the agent ran: two launches killed before the agent started leave ATTEMPTS 1, the handoff says attempt 1, the budget reads 'gives up at 2'; a drained loop says Succeeded once",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "A.\n@demo write a.txt a", verify: "test -s a.txt" }]), {}, async (p) => {
        for (let i = 0; i < 2; i++) {
          const killed = await p.loop(["run", "--json", "--root", p.root], { LOOP_FAILPOINT: "launch:after_worktree" });
          expect(killed.stderr).toContain("failpoint launch:after_worktree");
        }
        await p.runToDrain();
        const a = p.projection().items.a!;
        expect({ status: a.status, attempts: a.attempts.length, failures: a.failures }).toEqual({ status: "passed", attempts: 3, failures: 0 });
        // The agent ran once: its handoff (in the third launch's folder) says so.
        expect(p.handoff("a", 3).split("\n")[0]).toBe("# a: attempt 1 (up to 2 failed attempts)");
        expect(p.handoff("a", 3)).not.toContain("## Earlier attempts");
        const json = JSON.parse((await p.loop(["status", "--json", "--root", p.root])).stdout);
        expect(json.items[0]).toMatchObject({ id: "a", attempts: 3, ran: 1, failures: 0, maxAttempts: 2 });
        const text = (await p.loop(["status", "--text", "--root", p.root])).stdout.split("\n");
        const header = text.find((l) => l.startsWith("ITEM"))!;
        expect(header.split(/\s{2,}/)).toEqual(["ITEM", "STATUS", "ATTEMPTS", "FAILED", "SPEND", "SESSION", "BRANCH", "LAST VERIFY"]);
        expect(
          text
            .find((l) => l.startsWith("a "))!
            .split(/\s{2,}/)
            .slice(0, 4),
        ).toEqual(["a", "passed", "1", "0 (gives up at 2)"]);
        const drained = await p.loop(["run", "--text", "--root", p.root]);
        expect(drained.stdout).toBe("drained: Succeeded (loop drained)\n");
      }),
    T,
  );
});
