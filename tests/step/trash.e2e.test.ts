// Nothing deleted on the critical path (docs/state.md#the-trash): a passed item's checkout, with
// what its setup made, is kept as the spare for the next item (docs/state.md#the-spare-checkout);
// the spare it replaces, and the last one once the loop drains, are moved into the worktrees folder's
// trash and deleted by the steps' sweeps; a step killed between the move and the sweep strands nothing.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, type Project, scenario } from "../helpers/project.ts";

const item = (id: string) => ({ id, prompt: `@demo write ${id}.txt 1\n@demo commit ${id}`, verify: `test -s ${id}.txt` });
const definition = demoDefinition([item("one")], {
  // A dependency folder of a few hundred files, as `npm ci` leaves one (never committed).
  workspace: { setup: "mkdir -p deps && for i in $(seq 1 300); do echo $i > deps/f$i.js; done" },
});

const trashOfProject = (p: Project) => join(p.worktrees, ".trash");

async function trashStatus(p: Project): Promise<{ entries: number; bytes: number; unknown: number }> {
  const st = JSON.parse((await p.loop(["status", "--json"])).stdout);
  return st.loop.trash;
}

describe("the trash", () => {
  test.concurrent(
    "a passed item's checkout is moved aside and deleted by the step's sweep; status says nothing waits",
    () =>
      scenario(definition, { env: {} }, async (p) => {
        expect((await p.runToDrain()).reason).toBe("Succeeded");
        expect(p.eventsOf("session_closed", "one").at(-1)!.payload.worktreeRemoved).toBe(true);
        expect(existsSync(join(p.worktrees, "one"))).toBe(false);
        // Kept as the spare while the loop ran; the drained loop dropped it, and the sweep deleted it.
        expect(readdirSync(p.worktrees).filter((n) => n.startsWith(".spare-"))).toEqual([]);
        expect(existsSync(trashOfProject(p))).toBe(false);
        expect(await trashStatus(p)).toEqual({ entries: 0, bytes: 0, unknown: 0 });
      }),
    120_000,
  );

  test.concurrent(
    "a step killed at trash:after_move leaves the checkout in the trash, status counts it, and the next step finishes the sweep",
    () =>
      // The drained loop moves the spare (one's checkout) to the trash.
      scenario(definition, { env: {} }, async (p) => {
        let killed = false;
        for (let i = 0; i < 60 && !killed; i++) {
          const r = await p.loop(["run", "--json"], { LOOP_FAILPOINT: "trash:after_move" });
          if (r.code === 137) killed = true;
          else await Bun.sleep(200);
        }
        expect(killed).toBe(true);
        // One's checkout is gone from its place and from the spare's, whole in the trash (with what setup made).
        expect(existsSync(join(p.worktrees, "one"))).toBe(false);
        expect(existsSync(join(p.worktrees, ".spare-one"))).toBe(false);
        const entries = readdirSync(trashOfProject(p)).filter((n) => !n.endsWith(".bytes"));
        expect(entries).toHaveLength(1);
        expect(readdirSync(join(trashOfProject(p), entries[0]!, "deps"))).toHaveLength(300);
        const waiting = await trashStatus(p);
        expect(waiting.entries).toBe(1);
        expect(waiting.unknown).toBe(0);
        expect(waiting.bytes).toBeGreaterThan(300);
        expect(p.eventsOf("loop_drained")).toHaveLength(1);
        // The next step finds the loop drained and sweeps what waits.
        expect((await p.runToDrain()).reason).toBe("Succeeded");
        expect(readdirSync(p.worktrees).filter((n) => n.startsWith(".spare-"))).toEqual([]);
        expect(existsSync(trashOfProject(p))).toBe(false);
        expect((await trashStatus(p)).entries).toBe(0);
      }),
    120_000,
  );
});
