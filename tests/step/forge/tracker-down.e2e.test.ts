// A tracker that is down, or refuses loop's key, is the machine's fault, not an item's
// (docs/trackers.md#a-tracker-that-is-down), end to end through `loop run` against the fake Linear,
// the fake Jira and the fake GitHub and GitLab: every request answered 503 (Linear; GitHub or GitLab
// as the tracker) pauses the loop with the environment fault tracker_down before anything is
// reserved, exit 1, no attempt spent, `attention` environment; once the tracker answers again the
// next step resumes the loop by itself (a step killed before recording that resumes it on the next),
// and the item launches and drains. A revoked Jira token (every request 401) is tracker_unauthorized, naming the variable
// that holds it and never the token. One issue's reads failing (a 502) while the tracker answers
// its probe keeps the old behaviour: the launch waits, then the item is blocked after timeouts.launch.
import { afterEach, describe, expect, test } from "bun:test";
import type { FakeGitHub } from "../../helpers/fake-github.ts";
import type { FakeGitLab } from "../../helpers/fake-gitlab.ts";
import { FORGES, type FakeForge } from "../../helpers/forges.ts";
import { demoDefinition, git, Project } from "../../helpers/project.ts";
import { closeProjects, JIRA_TOKEN, jira, LINEAR_KEY, linear, project } from "../../helpers/trackers.ts";

const forgeProjects: { p: Project; f: FakeForge }[] = [];
afterEach(() => {
  closeProjects();
  for (const { p, f } of forgeProjects.splice(0)) {
    f.stop();
    p.dispose();
  }
});

const WRITE_A = "x\n@demo write a.txt a\n@demo commit add a";

test("Linear answering 503 to everything: loop run pauses with tracker_down, exit 1, no attempt; answering again, the loop resumes by itself and drains", async () => {
  const { p, t } = project(linear, { items: (t) => [{ ref: t.ref(1), prompt: WRITE_A }], landing: "none" });
  t.linear!.switches.down = 503;
  const r = await p.run();
  expect([r.action, r.exitCode]).toEqual(["paused", 1]);
  const faults = p.eventsOf("environment_fault");
  expect(faults.map((e) => [e.payload.kind, e.payload.attempt, e.item])).toEqual([["tracker_down", null, t.id(1)]]);
  const reason = String(faults[0]!.payload.reason);
  expect(reason).toStartWith(`Linear (${new URL(t.linear!.url).host}) does not answer: reading ENG-1 failed`);
  expect(reason).toContain("HTTP 503");
  expect(String(faults[0]!.payload.fix)).toContain("loop ctl resume");
  expect(r.attention).toEqual([{ kind: "environment", item: t.id(1), reason: r.loop.reason! }]);
  expect(r.loop.reason).toStartWith(`environment fault launching ${t.id(1)}: Linear (`);
  // Nothing reserved, nothing spent: the item is pending with no attempt.
  expect(p.eventsOf("launch_reserved")).toHaveLength(0);
  const item = p.projection().items[t.id(1)]!;
  expect([item.status, item.attempts.length]).toEqual(["pending", 0]);
  for (const said of [reason, r.loop.reason!, r.stderr]) expect(said).not.toContain(LINEAR_KEY);
  // The probe asked Linear who the key is, a request that names no issue.
  expect(t.linear!.requests.some((q) => q.query.includes("viewer"))).toBe(true);
  // Still down: the next step asks again and stays paused, recording nothing.
  expect((await p.run()).action).toBe("paused");
  expect(p.eventsOf("loop_resumed")).toHaveLength(0);
  // Linear back: the next step finds it answering and resumes the loop by itself. A step killed just
  // before recording that leaves the loop paused; the one after resumes it, once.
  t.linear!.switches.down = 0;
  const killed = await p.loop(["run", "--json"], { LOOP_FAILPOINT: "forge:before_commit" });
  expect(killed.code).toBe(137);
  expect(p.eventsOf("loop_resumed")).toHaveLength(0);
  expect(p.projection().loop.state).toBe("paused");
  expect((await p.runToDrain()).loop.outcome).toBe("Succeeded");
  expect(p.eventsOf("loop_resumed")).toHaveLength(1);
  expect(p.projection().items[t.id(1)]!.attempts).toHaveLength(1);
  expect(t.state(1)).toBe("Done");
  await p.finish();
});

test("Jira answering 401 to everything (its token revoked): tracker_unauthorized, naming the variable and tracker.email, never the token", async () => {
  const { p, t } = project(jira, { items: (t) => [{ ref: t.ref(1), prompt: WRITE_A }], landing: "none" });
  t.jira!.token = "a-new-token-loop-does-not-have";
  const r = await p.run();
  expect([r.action, r.exitCode]).toEqual(["paused", 1]);
  const faults = p.eventsOf("environment_fault");
  expect(faults.map((e) => e.payload.kind)).toEqual(["tracker_unauthorized"]);
  const { reason, fix } = faults[0]!.payload as { reason: string; fix: string };
  expect(reason).toStartWith(`Jira (${new URL(t.jira!.url).host}) refuses loop's key, from the variable JIRA_API_TOKEN (tracker.tokenEnv)`);
  expect(reason).toContain("HTTP 401");
  expect(fix).toContain("JIRA_API_TOKEN");
  expect(fix).toContain("`loop ctl resume`");
  expect(r.attention.map((a) => a.kind)).toEqual(["environment"]);
  expect(p.eventsOf("launch_reserved")).toHaveLength(0);
  for (const said of [reason, fix, r.stderr, JSON.stringify(r)]) expect(said).not.toContain(JIRA_TOKEN);
  // The probe was Jira's /myself, held to its OpenAPI description by the fake.
  expect(t.jira!.requests.some((q) => q.method === "GET" && q.url === "/rest/api/3/myself")).toBe(true);
  // The token put right and the loop resumed, the item drains.
  t.jira!.token = JIRA_TOKEN;
  expect((await p.ctl(["resume", "--yes"])).code).toBe(0);
  expect((await p.runToDrain()).loop.outcome).toBe("Succeeded");
  await p.finish();
});

test("one Linear issue's reads answering 502 while Linear answers its probe: the launch waits (no fault), then only that item is blocked after timeouts.launch", async () => {
  const { p, t } = project(linear, {
    items: (t) => [
      { ref: t.ref(1), prompt: WRITE_A },
      { ref: t.ref(2), prompt: "y\n@demo write b.txt b\n@demo commit add b" },
    ],
    landing: "none",
    launchTimeout: "1s",
  });
  t.linear!.switches.issueDown = 1;
  const w = await p.run();
  expect([w.action, w.reason]).toEqual(["waiting", expect.stringContaining("could not read issue ENG-1: HTTP 502")]);
  expect(p.eventsOf("environment_fault")).toHaveLength(0);
  expect(p.projection().items[t.id(1)]!.status).toBe("pending");
  await Bun.sleep(1100);
  const r = await p.runToDrain();
  expect(r.loop.state).toBe("drained");
  const items = p.projection().items;
  expect([items[t.id(1)]!.status, items[t.id(1)]!.reason]).toEqual(["blocked", expect.stringContaining("ENG-1 could not be read for 1s (timeouts.launch)")]);
  expect(items[t.id(1)]!.attempts).toHaveLength(0);
  expect(items[t.id(2)]!.status).toBe("passed");
  expect(p.eventsOf("environment_fault")).toHaveLength(0);
  await p.finish();
});

describe.each(FORGES)("%s as the tracker", (name, make) => {
  test("answering 503 to everything: tracker_down, naming the forge and its host; resumed by the step once it answers, the item drains", async () => {
    const p = new Project(demoDefinition([{ id: "x", prompt: "p" }]), { env: { FAKE_FORGE_TOKEN: "ghs_fake", LOOP_ALLOW_AUTO_MERGE: "1" } });
    const f = make(p.aux);
    forgeProjects.push({ p, f });
    f.addIssue(1, { title: "issue 1" });
    p.writeDefinition(
      demoDefinition([{ ref: f.ref(1), prompt: WRITE_A }], {
        defaults: { landing: "none" },
        forge: { provider: f.provider, repo: f.repo, apiUrl: f.apiUrl, gitUrl: f.bare, tokenEnv: "FAKE_FORGE_TOKEN", authorizedUsers: [] },
      }),
    );
    git(p.root, "add", "-A");
    git(p.root, "commit", "-qm", "forge loop");
    git(p.root, "remote", "add", "origin", f.bare);
    git(p.root, "push", "-q", "origin", "main");
    const fake = f.raw as FakeGitHub | FakeGitLab;
    fake.switches.fail = { match: () => true, status: 503, count: 1_000 };
    const r = await p.run();
    expect([r.action, r.exitCode]).toEqual(["paused", 1]);
    const faults = p.eventsOf("environment_fault");
    expect(faults.map((e) => e.payload.kind)).toEqual(["tracker_down"]);
    expect(String(faults[0]!.payload.reason)).toStartWith(`${name} (${new URL(f.apiUrl).host}) does not answer: reading #1 failed`);
    expect(String(faults[0]!.payload.reason)).toContain("HTTP 503");
    expect(p.eventsOf("launch_reserved")).toHaveLength(0);
    // Answering again: the next step resumes the loop by itself.
    fake.switches.fail = null;
    expect((await p.runToDrain()).loop.outcome).toBe("Succeeded");
    expect(p.eventsOf("loop_resumed")).toHaveLength(1);
    await p.finish();
  });
});
