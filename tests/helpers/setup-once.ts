// What the setup-once tests read of a loop (tests/step/setup-once*.e2e.test.ts, spare-checkout):
// how often setup ran (its command appends a line to `<aux>/setup-runs`), where an item's setup
// products came from, its setup log, and a step killed at a failpoint.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Project } from "./project.ts";

/** The `echo ran >> …` a setup command starts with, to be counted by `setupRuns`. */
export const countRun = (p: Project): string => `echo ran >> ${join(p.aux, "setup-runs")}`;

export function setupRuns(p: Project): number {
  const file = join(p.aux, "setup-runs");
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0;
}

/** `workspace_prepared`'s `setup.reusedFrom` of the item's last prepared checkout (null: setup ran, or none). */
export function reusedFrom(p: Project, id: string): string | null {
  return (p.eventsOf("workspace_prepared", id).at(-1)!.payload.setup as { reusedFrom?: string | null } | null)?.reusedFrom ?? null;
}

/** The setup log of the item's last prepared checkout (a launch cut short gives its attempt back: the next may be numbered on). */
export function setupLog(p: Project, id: string): string {
  return readFileSync((p.eventsOf("workspace_prepared", id).at(-1)!.payload.setup as { log: string }).log, "utf8");
}

/** Step with the failpoint armed until a step dies there (exit 137). */
export async function killAt(p: Project, fp: string): Promise<void> {
  for (let i = 0; i < 60; i++) {
    const r = await p.loop(["run", "--json"], { LOOP_FAILPOINT: fp });
    if (r.code === 137) return;
    await Bun.sleep(200);
  }
  throw new Error(`never killed at ${fp}\n${p.history()}`);
}
