// The refs loop owns (lib/repo/owned-refs.ts, docs/state.md#the-refs-loop-owns). Pure: which refs,
// and which moved. Through the real entry point, with agents that have no sandbox: one that points a
// landed item's branch at a foreign commit or deletes it fails its attempt (owned_ref_changed), the
// next launch pauses the loop until the ref is put back, status names it; one that moves the landing
// target fails too, and a target moved during a verify is never merged on top.
import { describe, expect, test } from "bun:test";
import { ownedRefs, refChanges } from "../../lib/repo/owned-refs.ts";
import { demoDefinition, git, scenario } from "../helpers/project.ts";

const T = 120_000;
const A = "a".repeat(40);
const B = "b".repeat(40);

describe("ownedRefs and refChanges", () => {
  const items = [
    { id: "done", status: "passed", session: { branch: "loop/t/item/done", closed: { head: A } } },
    { id: "open", status: "running", session: { branch: "loop/t/item/open", closed: null } }, // its agent's to move
    { id: "old", status: "passed", session: { branch: "loop/t/item/old", closed: {} } }, // closed before heads were recorded
    { id: "gone", status: "failed", session: { branch: "loop/t/item/gone", closed: { head: null } } }, // closed without a branch
    { id: "never", status: "pending", session: null },
    { id: "wip", status: "failed", branch: "loop/t/item/wip", session: { closed: { head: B } } }, // as state.json has it
  ];
  const owned = ownedRefs({ items, landed: { target: "loop/t/landed", commit: B } });

  test("closed sessions' branches at their recorded heads (exactly, for a passed item), and the target at the last merge", () =>
    expect(owned).toEqual([
      { ref: "refs/heads/loop/t/item/done", commit: A, item: "done", exact: true },
      { ref: "refs/heads/loop/t/item/wip", commit: B, item: "wip", exact: false },
      { ref: "refs/heads/loop/t/landed", commit: B, item: null, exact: true },
    ]));

  const cases: { name: string; now: [string, string][]; changed: string[] }[] = [
    {
      name: "all in place",
      now: [
        ["refs/heads/loop/t/item/done", A],
        ["refs/heads/loop/t/item/wip", B],
        ["refs/heads/loop/t/landed", B],
      ],
      changed: [],
    },
    {
      name: "a passed item's branch moved",
      now: [
        ["refs/heads/loop/t/item/done", B],
        ["refs/heads/loop/t/item/wip", B],
        ["refs/heads/loop/t/landed", B],
      ],
      changed: ["refs/heads/loop/t/item/done"],
    },
    {
      name: "a work in progress added to: not a change",
      now: [
        ["refs/heads/loop/t/item/done", A],
        ["refs/heads/loop/t/item/wip", A],
        ["refs/heads/loop/t/landed", B],
      ],
      changed: [],
    },
    {
      name: "a work in progress deleted",
      now: [
        ["refs/heads/loop/t/item/done", A],
        ["refs/heads/loop/t/landed", B],
      ],
      changed: ["refs/heads/loop/t/item/wip"],
    },
    {
      name: "the target moved and a deliverable deleted",
      now: [
        ["refs/heads/loop/t/item/wip", B],
        ["refs/heads/loop/t/landed", A],
      ],
      changed: ["refs/heads/loop/t/item/done", "refs/heads/loop/t/landed"],
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const changes = refChanges(owned, new Map(c.now));
      expect(changes.map((x) => x.ref)).toEqual(c.changed);
      for (const x of changes) expect(x.now).toBe(new Map(c.now).get(x.ref) ?? null);
    });
});

/**
 * The repository's own git folder, as an agent without the sandbox finds it: its checkout's git
 * folder is the attempt's own (docs/threat-model.md#the-airlock), whose store's alternate is the
 * repository's. Its refs are reached only by naming it.
 */
const REPO = `$(dirname "$(head -1 "$(git rev-parse --git-dir)/objects/info/alternates")")`;
const RGIT = `git --git-dir="${REPO}"`;
/** Shell for a foreign commit (on no branch) made in the repository itself. */
const FOREIGN = `$(${RGIT} commit-tree "$(${RGIT} rev-parse main:)" -m foreign)`;

const agent = (script: string) => ({ command: ["sh", "-c", `${script}; echo x > work.txt`] });

describe("refs loop owns, changed by an agent", () => {
  for (const [what, script, expectNow] of [
    ["points a landed item's branch at a foreign commit", `${RGIT} update-ref refs/heads/loop/t/item/first ${FOREIGN}`, "moved"],
    ["deletes another item's branch", `${RGIT} update-ref -d refs/heads/loop/t/item/first`, "deleted"],
  ] as const)
    test.concurrent(
      `an agent that ${what}: its attempt fails owned_ref_changed, status names it, the next launch pauses until it is put back`,
      () =>
        scenario(
          demoDefinition(
            [
              { id: "first", prompt: "first\n@demo write first.txt 1\n@demo commit first" },
              { id: "evil", prompt: "evil", runner: "evil", dependsOn: ["first"], maxAttempts: 2 },
              { id: "third", prompt: "third", dependsOn: ["evil"] },
            ],
            { runners: { evil: agent(`[ "$LOOP_ATTEMPT" = 1 ] && ${script}`) } },
          ),
          {},
          async (p) => {
            // first passes; evil's first attempt moves first's branch; its verify never runs.
            await p.runUntil((r) => r.transitions.some((t) => t.type === "verify_finished" && t.item === "evil"), { codes: [0, 1], what: "evil verified" });
            const verdict = p.eventsOf("verify_finished", "evil")[0]!.payload;
            expect(verdict).toMatchObject({ passed: false, code: "owned_ref_changed" });
            // Its reason names the ref and what became of it, for people.
            expect(verdict.reason).toContain(`item first's branch loop/t/item/first was ${expectNow}`);
            expect(p.eventsOf("verify_reserved", "evil")).toEqual([]);
            const head = p.eventsOf("session_closed", "first")[0]!.payload.head as string;
            const status = JSON.parse((await p.loop(["status", "--json"])).stdout);
            expect(status.healthy).toBe(false);
            expect(status.findings).toEqual([
              { code: "owned_ref_changed", message: expect.stringContaining(`git update-ref refs/heads/loop/t/item/first ${head}`) },
            ]);
            // The next launch (evil's retry, in the same step) paused the loop: nothing is reserved on top of it.
            const r = p.runs.at(-1)!;
            expect(r.action).toBe("paused");
            expect(r.loop.reason).toContain("environment fault launching evil: refs loop owns are not where it left them: item first's branch");
            expect(r.loop.reason).toContain(`git update-ref refs/heads/loop/t/item/first ${head}`);
            expect(p.eventsOf("environment_fault").at(-1)!.payload.kind).toBe("owned_ref_changed");
            const launches = p.eventsOf("launch_reserved", "evil").length;
            // Put back as the reason says, resumed: evil's second attempt (which leaves refs alone) passes.
            git(p.root, "update-ref", "refs/heads/loop/t/item/first", head);
            expect((await p.ctl(["resume"])).code).toBe(0);
            await p.runToDrain();
            expect(p.eventsOf("launch_reserved", "evil").length).toBe(launches + 1);
            const pr = p.projection();
            expect([pr.items.first!.status, pr.items.evil!.status, pr.items.third!.status]).toEqual(["passed", "passed", "passed"]);
          },
        ),
      T,
    );

  test.concurrent(
    "landing merge: an agent that moves the target fails owned_ref_changed, and a target moved during a verify is not merged on top",
    () =>
      scenario(
        demoDefinition(
          [
            { id: "first", prompt: "first\n@demo write first.txt 1\n@demo commit first" },
            { id: "mover", prompt: "m", runner: "mover", dependsOn: ["first"], maxAttempts: 1 },
            {
              id: "late",
              prompt: "late\n@demo write late.txt 1\n@demo commit late",
              dependsOn: ["first"],
              maxAttempts: 1,
              verify: `${RGIT} update-ref refs/heads/loop/t/landed ${FOREIGN}`,
            },
          ],
          { defaults: { landing: "merge" }, runners: { mover: agent(`${RGIT} update-ref refs/heads/loop/t/landed ${FOREIGN}`) } },
        ),
        {},
        async (p) => {
          await p.runUntil((r) => r.transitions.some((t) => t.type === "verify_finished" && t.item === "mover"), { codes: [0, 1], what: "mover verified" });
          const moverVerdict = p.eventsOf("verify_finished", "mover")[0]!.payload;
          expect(moverVerdict.code).toBe("owned_ref_changed");
          expect(moverVerdict.reason).toMatch(/the landing target loop\/t\/landed was moved from [0-9a-f]{40} to [0-9a-f]{40}$/);
          // Put it back by hand, as the pause will ask, and go on: late's verify moves the target itself.
          const landed = p.eventsOf("landing_finished", "first")[0]!.payload.commit as string;
          await p.runUntil((r) => r.action === "paused", { codes: [0, 1], what: "paused on the moved target" });
          git(p.root, "update-ref", "refs/heads/loop/t/landed", landed);
          expect((await p.ctl(["resume"])).code).toBe(0);
          await p.runToDrain({ codes: [0, 1] });
          const late = p.eventsOf("landing_finished", "late")[0]!.payload;
          expect(late).toMatchObject({ outcome: "failed", code: "target_moved", commit: null });
          expect(late.reason).toMatch(/the landing target loop\/t\/landed was moved from [0-9a-f]{40} to [0-9a-f]{40}; loop does not merge on top/);
          expect(p.projection().items.late!.status).toBe("failed");
          // Nothing was merged on top of the foreign commit.
          expect(git(p.root, "log", "-1", "--format=%s", "refs/heads/loop/t/landed")).toBe("foreign");
          // Leave the target where loop left it, so the scenario's own end (status) is clean.
          git(p.root, "update-ref", "refs/heads/loop/t/landed", landed);
        },
      ),
    T,
  );
});
