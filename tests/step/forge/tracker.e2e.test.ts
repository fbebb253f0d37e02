// `loop run` with a Linear or Jira tracker beside a GitHub forge (docs/trackers.md), end to end
// through the real entry point against the fake Linear or the fake Jira (each request held to the
// tracker's published schema) and the fake GitHub: the issue is read through the tracker into the
// handoff (fenced), each issue moves to tracker.moveTo's states as its attempt launches and lands,
// the outcome is said on the issue with the pull request's link, the code lands on the fake GitHub;
// `/loop pause` on the tracker's issue from an authorized user pauses the loop, a stranger's does
// nothing; a question is asked on the issue and the reply resumes the agent; a state the tracker
// does not have is the environment fault tracker_state_unknown naming tracker.moveTo; a tracker that
// does not answer at all pauses the loop (tracker_down), no attempt spent; after `loop reset` the next step moves the issue
// to tracker.moveTo.reset. With tracker.query the filter's issues are appended to loop.json by a step
// and drain; one added later is picked up, one of another label never, a ref already an item not twice.
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { queryPrompt } from "../../../lib/decisions/tracker-query.ts";
import { LOOP_MARKER } from "../../../lib/forge/comments.ts";
import { gitlab } from "../../helpers/forges.ts";
import { closeProjects, drainsBoth, itemsOf, linear, project, t0, TRACKERS } from "../../helpers/trackers.ts";

afterEach(closeProjects);

describe.each(TRACKERS)("%s", (_name, make) => {
  test("a backlog drains to Succeeded: the issue in the handoff (fenced), moved to In Progress then Done, the outcome with the PR's link on the issue, the code on GitHub", async () => {
    const { p, f, t } = project(make, {
      items: (t) => [
        { ref: t.ref(1), prompt: "Add a.txt\n@demo write a.txt hello\n@demo commit add a" },
        { ref: t.ref(2), prompt: "Add b.txt\n@demo write b.txt bee\n@demo commit add b", dependsOn: [t.id(1)] },
      ],
    });
    await p.runUntil((r) => r.action === "launched", { what: "launched" });
    const handoff = readFileSync(join(p.sessionDir(t.id(1), 1), "handoff.md"), "utf8");
    expect(handoff).toContain("Add the greeting");
    expect(handoff).toMatch(/Issue (ENG|PROJ)-1 \(/);
    await drainsBoth(p, f, t);
    const moves = p.eventsOf("tracker_issue_moved").map((e) => [e.item, e.payload.move, e.payload.state, e.payload.attempt]);
    expect(moves).toEqual([
      [t.id(1), "started", "In Progress", 1],
      [t.id(1), "completed", "Done", 1],
      [t.id(2), "started", "In Progress", 1],
      [t.id(2), "completed", "Done", 1],
    ]);
    const posted = p.eventsOf("tracker_outcome_posted").map((e) => [e.item, e.payload.outcome]);
    expect(posted).toEqual([
      [t.id(1), "passed"],
      [t.id(2), "passed"],
    ]);
    const said = t.loopComments(1);
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(LOOP_MARKER.slice(0, 10));
    expect(said[0]).toContain(p.projection().items[t.id(1)]!.forge!.pr!.url);
    // Nothing more is owed: another step moves and posts nothing.
    const head = p.head();
    await p.run();
    expect(p.head()).toBe(head);
    await p.finish();
  });

  test("/loop pause on the tracker's issue: a stranger's is ignored, an authorized user's pauses the loop, recorded as <tracker>:<user>", async () => {
    const { p, t } = project(make, { items: (t) => [{ ref: t.ref(1), prompt: "x\n@demo sleep 30" }], landing: "none" });
    // The fakes keep their own clock (from March 2026): a comment before the first step puts the log's comment cursor on it.
    t.comment(1, "authorized", "some context");
    await p.runUntil((r) => r.action === "launched" || r.action === "waiting", { what: "launched" });
    expect(p.eventsOf("forge_thread_baselined")).toHaveLength(1);
    t.comment(1, "stranger", "/loop pause");
    await p.run();
    expect(p.eventsOf("loop_paused")).toHaveLength(0);
    expect(p.eventsOf("forge_comment_handled")).toHaveLength(0);
    t.comment(1, "authorized", "/loop pause");
    expect((await p.run()).action).toBe("paused");
    const paused = p.eventsOf("loop_paused");
    expect(paused).toHaveLength(1);
    expect(paused[0]!.actor.startsWith(`${t.name}:`)).toBe(true);
    t.comment(1, "authorized", "/loop skip");
    await p.run();
    expect(p.projection().items[t.id(1)]!.status).toBe("skipped");
    t.comment(1, "authorized", "/loop resume");
    expect((await p.runToDrain()).loop.state).toBe("drained");
    // A skipped item's outcome is said on its issue too.
    expect(p.eventsOf("tracker_outcome_posted").map((e) => e.payload.outcome)).toEqual(["skipped"]);
    await p.finish();
  });

  test("a question is posted on the tracker's issue; the authorized reply resumes the agent", async () => {
    const { p, t } = project(make, {
      items: (t) => [{ ref: t.ref(1), prompt: "x\n@demo attempt 1 ask which colour?\n@demo attempt 2 write a.txt a" }],
      landing: "none",
    });
    t.comment(1, "authorized", "some context");
    await p.runUntil((r) => r.action === "paused", { what: "paused by the question" });
    await p.run();
    expect(p.eventsOf("forge_question_posted")).toHaveLength(1);
    expect(t.loopComments(1).join("\n")).toContain("which colour?");
    t.comment(1, "stranger", "red");
    await p.run();
    expect(p.eventsOf("control_recorded").filter((e) => e.payload.verb === "reply")).toHaveLength(0);
    t.comment(1, "authorized", "blue");
    const r = await p.runToDrain();
    expect(r.loop.outcome).toBe("Succeeded");
    const reply = p.eventsOf("forge_comment_handled").filter((e) => e.payload.action === "reply");
    expect(reply.map((e) => e.payload.detail)).toEqual(["blue"]);
    await p.finish();
  });

  test("a state the tracker does not have: the loop pauses with the fault tracker_state_unknown naming tracker.moveTo; no attempt spent", async () => {
    const { p, t } = project(make, { items: (t) => [{ ref: t.ref(1), prompt: "x\n@demo write a.txt a\n@demo commit add a" }], moveTo: { started: "Doing" } });
    const r = await p.runUntil((r) => r.action === "paused", { what: "paused by the fault" });
    expect(r.action).toBe("paused");
    const faults = p.eventsOf("environment_fault");
    expect(faults.map((e) => e.payload.kind)).toEqual(["tracker_state_unknown"]);
    expect(faults[0]!.payload.reason).toContain("tracker.moveTo");
    expect(p.eventsOf("tracker_issue_moved")).toHaveLength(0);
    expect(t.state(1)).not.toBe("Doing");
    await p.finish();
  });

  test("a tracker that does not answer at all (every request past its deadline): the loop pauses with the fault tracker_down, no attempt spent; resumed once it answers, the loop goes on", async () => {
    const { p, t } = project(make, { items: (t) => [{ ref: t.ref(1), prompt: "x\n@demo write a.txt a\n@demo commit add a" }], landing: "none" });
    t.down(true);
    const r = await p.run();
    expect([r.action, r.exitCode]).toEqual(["paused", 1]);
    expect(p.eventsOf("environment_fault").map((e) => e.payload.kind)).toEqual(["tracker_down"]);
    expect(r.loop.reason).toContain("no answer");
    expect(p.eventsOf("launch_reserved")).toHaveLength(0);
    t.down(false);
    expect((await p.ctl(["resume", "--yes"])).code).toBe(0);
    expect((await p.runToDrain()).loop.outcome).toBe("Succeeded");
    expect(t.state(1)).toBe("Done");
    await p.finish();
  });

  test("tracker.query: the filter's issues become items and drain to Succeeded; one added later is picked up by a later step, one of another label never", async () => {
    const { p, t } = project(make, { items: () => [], landing: "none", tracker: { query: true, labels: ["agent"] }, labels: ["agent"] });
    t.addIssue(3, "Not for loop", ["other"]);
    // The first step starts the loop (nothing to do: drained) and appends the filter's issues.
    const first = await p.run();
    expect(first.action).toBe("drained");
    expect(first.stderr).toContain(`appended 2 items to loop.json (${t.id(1)} ${t.ref(1)}, ${t.id(2)} ${t.ref(2)})`);
    // The prompt is loop's words; the issue's title reaches the agent only fenced, in the handoff.
    expect(itemsOf(p)).toEqual([
      { ref: t.ref(1), prompt: queryPrompt(t.ref(1)) },
      { ref: t.ref(2), prompt: queryPrompt(t.ref(2)) },
    ]);
    // The next step imports them (no review asked) and the loop drains them. The issue's title is in the
    // handoff only inside the fenced issue context, not in its task.
    await p.runUntil((r) => r.action === "launched", { what: "launched" });
    const handoff = readFileSync(join(p.sessionDir(t.id(1), 1), "handoff.md"), "utf8");
    const task = handoff.slice(handoff.indexOf("## Task"));
    expect(task.split("\n")[2]).toBe(queryPrompt(t.ref(1)));
    expect(handoff.indexOf("Add the greeting")).toBeGreaterThan(handoff.indexOf("## Task"));
    expect((await p.runToDrain()).loop.outcome).toBe("Succeeded");
    expect(p.eventsOf("review_required")).toHaveLength(0);
    expect([t.state(1), t.state(2)]).toEqual(["Done", "Done"]);
    // An issue added to the tracker later is appended by a later step, and drains too.
    t.addIssue(4, "Add d", ["agent"]);
    await p.run();
    expect(itemsOf(p).map((i) => i.ref)).toEqual([t.ref(1), t.ref(2), t.ref(4)]);
    expect((await p.runToDrain()).loop.outcome).toBe("Succeeded");
    expect(p.projection().items[t.id(4)]!.status).toBe("passed");
    // The issue of another label never became an item; nothing was appended twice.
    await p.run();
    expect(itemsOf(p).map((i) => i.ref)).toEqual([t.ref(1), t.ref(2), t.ref(4)]);
    expect(p.projection().items[t.id(3)]).toBeUndefined();
    await p.finish();
  });

  test("tracker.query: a ref already an item is not appended again; a search the tracker fails (a 500) writes nothing and is asked again", async () => {
    const { p, t } = project(make, { items: (t) => [{ ref: t.ref(1), prompt: "Mine\n@demo write a.txt a" }], landing: "none", tracker: { query: true } });
    t.failSearch();
    const r = await p.run();
    expect(r.stderr).toContain("live query: reading");
    expect(r.stderr).toContain("asked again on a later step");
    expect(itemsOf(p)).toEqual([{ ref: t.ref(1), prompt: "Mine\n@demo write a.txt a" }]);
    expect((await p.runToDrain()).loop.outcome).toBe("Succeeded");
    expect(itemsOf(p)).toEqual([
      { ref: t.ref(1), prompt: "Mine\n@demo write a.txt a" },
      { ref: t.ref(2), prompt: queryPrompt(t.ref(2)) },
    ]);
    expect(p.projection().items[t.id(2)]!.status).toBe("passed");
    await p.finish();
  });

  test("tracker.query reads at most once per tracker.pollInterval, and nothing while the loop is paused", async () => {
    const { p, t } = project(make, { items: () => [], landing: "none", tracker: { query: true, pollInterval: "1h" } });
    await p.run();
    expect(itemsOf(p).map((i) => i.ref)).toEqual([t.ref(1), t.ref(2)]);
    // Within the hour no step asks again.
    t.addIssue(4, "Add d");
    await p.run();
    expect(itemsOf(p).map((i) => i.ref)).toEqual([t.ref(1), t.ref(2)]);
    // The poll time forgotten (the cache only saves requests), a paused loop still reads nothing.
    rmSync(join(p.stateRoot, "forge-cache.json"));
    expect((await p.loop(["ctl", "pause", "--yes", "--json"])).code).toBe(0);
    expect((await p.run()).action).toBe("paused");
    expect(itemsOf(p).map((i) => i.ref)).toEqual([t.ref(1), t.ref(2)]);
    // Resumed, the next step reads the filter again and the new issue drains with the rest.
    expect((await p.loop(["ctl", "resume", "--yes", "--json"])).code).toBe(0);
    await p.run();
    expect(itemsOf(p).map((i) => i.ref)).toEqual([t.ref(1), t.ref(2), t.ref(4)]);
    expect((await p.runToDrain()).loop.outcome).toBe("Succeeded");
    expect([t.id(1), t.id(2), t.id(4)].map((id) => p.projection().items[id]!.status)).toEqual(["passed", "passed", "passed"]);
    await p.finish();
  });

  test("loop reset asks no tracker; the next step moves the issue to tracker.moveTo.reset, once", async () => {
    const { p, t } = project(make, {
      items: (t) => [{ ref: t.ref(1), prompt: "x\n@demo write a.txt a\n@demo commit add a" }],
      landing: "none",
      moveTo: { started: "In Progress", completed: "Done", reset: t0(make) },
    });
    expect((await p.runToDrain()).loop.outcome).toBe("Succeeded");
    expect(t.state(1)).toBe("Done");
    const reset = await p.loop(["reset", "--work-item", t.id(1), "--yes", "--json"]);
    expect(reset.code).toBe(0);
    expect(t.state(1)).toBe("Done");
    expect((await p.loop(["ctl", "pause", "--yes", "--json"])).code).toBe(0);
    expect((await p.run()).action).toBe("paused");
    expect(t.state(1)).toBe(t0(make));
    expect(p.eventsOf("tracker_issue_moved").map((e) => [e.payload.move, e.payload.attempt])).toEqual([
      ["started", 1],
      ["completed", 1],
      ["reset", 0],
    ]);
    const head = p.head();
    await p.run();
    expect(p.head()).toBe(head);
    await p.finish();
  });
});

describe("Linear beside GitLab", () => {
  test("the tracker is chosen apart from the code host: a Linear backlog drains with its code merged on GitLab, the issues Done, the merge request's link said on each", async () => {
    const { p, f, t } = project(linear, {
      forge: gitlab,
      items: (t) => [
        { ref: t.ref(1), prompt: "Add a.txt\n@demo write a.txt hello\n@demo commit add a" },
        { ref: t.ref(2), prompt: "Add b.txt\n@demo write b.txt bee\n@demo commit add b", dependsOn: [t.id(1)] },
      ],
    });
    await drainsBoth(p, f, t);
    for (const n of [1, 2]) {
      const said = t.loopComments(n);
      expect(said).toHaveLength(1);
      expect(said[0]).toContain(p.projection().items[t.id(n)]!.forge!.pr!.url);
      expect(said[0]).toContain("/-/merge_requests/");
    }
    await p.finish();
  });
});
