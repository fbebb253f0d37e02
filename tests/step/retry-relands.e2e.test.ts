// Issue 20's bug: a retried item lands again. The landing record and the forge landing wait are the
// attempt's own (lib/log/reducer.ts AttemptRecord), so `loop ctl retry` after a landing that did not
// land gives attempt 2 a landing of its own: pushed and merged through the forge, or merged locally.
import { afterEach, describe, expect, test } from "bun:test";
import { demoDefinition, git, Project } from "../helpers/project.ts";
import { FORGES, type FakeForge } from "../helpers/forges.ts";

const open: { p: Project; f?: FakeForge }[] = [];
afterEach(() => {
  for (const { p, f } of open.splice(0)) {
    f?.stop();
    p.dispose();
  }
});

// Each attempt appends a line and commits it: attempt 2 has a commit of its own to land.
const PROMPT = "x\n@demo append a.txt attempt\n@demo commit a";

describe.each(FORGES)("%s: a retried item lands again (landing merge)", (_name, make) => {
  test("landing_blocked (the second lock unset), `loop ctl retry`: attempt 2 pushes to the same PR and merges its own head", async () => {
    const p = new Project(demoDefinition([{ id: "x", prompt: "p" }]), { env: { FAKE_FORGE_TOKEN: "t0k" } });
    const f = make(p.aux);
    open.push({ p, f });
    f.addIssue(1, { title: "a" });
    p.writeDefinition(
      demoDefinition([{ ref: f.ref(1), prompt: PROMPT }], {
        defaults: { landing: "merge", timeouts: { launch: "2m", stall: "10m", verify: "2m", landing: "30m" } },
        forge: { provider: f.provider, repo: f.repo, apiUrl: f.apiUrl, gitUrl: f.bare, tokenEnv: "FAKE_FORGE_TOKEN", authorizedUsers: ["alice"] },
      }),
    );
    git(p.root, "add", "-A");
    git(p.root, "commit", "-qm", "forge loop");
    git(p.root, "remote", "add", "origin", f.bare);
    git(p.root, "push", "-q", "origin", "main");
    await p.runToDrain();
    let a = p.projection().items["api-1"]!;
    expect(a.status).toBe("landing_blocked");
    expect(f.merges()).toEqual([]);
    const first = a.forge!.pr!;
    expect((await p.ctl(["retry", "--work-item", "api-1", "--yes"])).code).toBe(0);
    p.env.LOOP_ALLOW_AUTO_MERGE = "1";
    const r = await p.runToDrain();
    expect(r.loop.outcome).toBe("Succeeded");
    a = p.projection().items["api-1"]!;
    expect(a.status).toBe("passed");
    expect(a.attempts).toHaveLength(2);
    // Attempt 2's own landing: its head pushed to the same PR, and merged.
    const head2 = git(p.root, "rev-parse", "loop/t/item/api-1");
    expect(a.attempts[1]!.landing).toMatchObject({ outcome: "merged" });
    expect(a.attempts[0]!.landing).toMatchObject({ outcome: "blocked" });
    expect(f.merges()).toEqual([{ number: first.number, sha: head2 }]);
    expect(f.pulls()).toHaveLength(1);
    expect(git(f.bare, "show", "main:a.txt")).toBe("attempt\nattempt");
    expect(p.eventsOf("landing_finished", "api-1").map((e) => [e.payload.attempt, e.payload.outcome])).toEqual([
      [1, "blocked"],
      [2, "merged"],
    ]);
    await p.finish();
  });
});

describe("a retried item lands again (local landing merge)", () => {
  test("a merge conflict, `loop ctl retry`, an attempt 2 that resolves it: merged into the target", async () => {
    const p = new Project(
      demoDefinition(
        [{ id: "c", prompt: "c\n@demo write shared.txt ours\n@demo attempt 2 write shared.txt theirs\n@demo commit c", verify: "test -s shared.txt" }],
        { defaults: { landing: "merge" } },
      ),
      { files: { "shared.txt": "base\n" } },
    );
    open.push({ p });
    // The item's branch forks from the target (its start point; a branch planted beforehand would
    // be moved aside, never built on), and the target gets another change to the same line once
    // the item is launched: attempt 1's merge conflicts.
    const target = "loop/t/landed";
    git(p.root, "branch", target, "main");
    expect((await p.run()).action).toBe("launched");
    const other = `${p.aux}/other`;
    git(p.root, "worktree", "add", "-q", other, target);
    await Bun.write(`${other}/shared.txt`, "theirs\n");
    git(other, "add", "shared.txt");
    git(other, "commit", "-qm", "theirs");
    git(p.root, "worktree", "remove", other);
    await p.runToDrain();
    let c = p.projection().items.c!;
    expect([c.status, c.reason]).toEqual(["failed", expect.stringMatching(/^merge_conflict/)]);
    expect((await p.ctl(["retry", "--work-item", "c", "--yes"])).code).toBe(0);
    const r = await p.runToDrain();
    expect(r.loop.outcome).toBe("Succeeded");
    c = p.projection().items.c!;
    expect(c.status).toBe("passed");
    expect(c.attempts.map((a) => a.landing?.outcome)).toEqual(["conflict", "merged"]);
    expect(git(p.root, "log", "-1", "--format=%s", target)).toBe("loop: land c (attempt 2)");
    expect(p.eventsOf("landing_finished", "c").map((e) => e.payload.outcome)).toEqual(["conflict", "merged"]);
    await p.finish();
  });
});
