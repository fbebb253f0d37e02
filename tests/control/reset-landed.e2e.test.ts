// `loop reset` of an item that landed (docs/cli/loop-reset.md#never-removed): the plan, the dry
// run and the report say what stays on the landing target and that the attempts' logs go; the
// re-run that finds its change already there lands nothing and is recorded `already_contained`
// (docs/events.md#landing_finished), never a merge. Real `loop run`, `loop reset`, git.
import { describe, expect, test } from "bun:test";
import { demoDefinition, git, scenario } from "../helpers/project.ts";

const T = 120_000;
const TARGET = "loop/t/landed";

describe("loop reset of a landed item", () => {
  test.concurrent(
    "says what stays on the target (dry run and real) and that the logs are deleted; the re-run's landing is already_contained and the target does not move",
    () =>
      scenario(
        demoDefinition([{ id: "a", prompt: "a", verify: "test -s a.txt" }], {
          defaults: { runner: "agent", landing: "merge" },
          runners: { agent: { command: ["sh", "-c", "echo a > a.txt; git add -A; git commit -qm a || true"] } },
        }),
        {},
        async (p) => {
          await p.runToDrain();
          const first = p.eventsOf("landing_finished", "a");
          expect(first.map((e) => e.payload.outcome)).toEqual(["merged"]);
          const landedAt = git(p.root, "rev-parse", TARGET);
          expect(first[0]!.payload.commit).toBe(landedAt);
          const stays = `${TARGET} keeps what a landed in attempt 1 (at ${landedAt.slice(0, 12)}): a reset does not undo a landing; a re-run that changes nothing more lands nothing (already_contained), and to take the change out, revert it on ${TARGET}`;

          const dry = await p.loop(["reset", "--work-item", "a", "--dry-run", "--json"]);
          expect(dry.code).toBe(0);
          const plan = JSON.parse(dry.stdout).items[0];
          expect(plan.stays).toEqual([stays]);
          expect(plan.effects).toContain(
            "delete a's session record and its folder sessions/a/ (every attempt's output and verify logs: `loop logs` has none of them afterwards)",
          );
          const dryText = await p.loop(["reset", "--work-item", "a", "--dry-run", "--text"]);
          expect(dryText.stdout).toContain(`  stays: ${stays}`);

          const real = await p.loop(["reset", "--work-item", "a", "--yes", "--text"]);
          expect(real.code).toBe(0);
          expect(real.stdout).toContain(`  stays: ${stays}`);
          expect(real.stdout).toContain("  logs: every attempt's output and verify logs were deleted with sessions/a/ (`loop logs` has none of them now)");

          // The re-run branches from the target, finds a.txt there and adds nothing: nothing lands.
          await p.runToDrain();
          const all = p.eventsOf("landing_finished", "a");
          expect(all.map((e) => e.payload.outcome)).toEqual(["merged", "already_contained"]);
          expect(all[1]!.payload.commit).toBe(landedAt);
          expect(git(p.root, "rev-parse", TARGET)).toBe(landedAt);
          const settled = p.eventsOf("item_settled", "a").at(-1)!.payload;
          expect(settled.outcome).toBe("passed");
          expect(settled.reason).toContain(`already contained in ${TARGET} (at ${landedAt.slice(0, 12)}): nothing was merged, nothing changed`);
          // Its status shows the landing as it was recorded.
          const st = JSON.parse((await p.loop(["status", "--json"])).stdout).items[0];
          expect(st.landing).toMatchObject({ outcome: "already_contained", commit: landedAt });
        },
      ),
    T,
  );
});
