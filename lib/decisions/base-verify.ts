// The default verify on the base tree (docs/cli/loop-run.md#the-verify-on-the-base): whether a step
// runs it before the next launch, and the environment fault a failure pauses the loop with. Pure:
// the key of the verify and setup in force and what the log recorded of the last run, in.
import type { BaseVerifyRecord } from "../log/projection.ts";
import type { BaseVerifyCode } from "../log/vocabulary.ts";
import type { EnvironmentFault } from "./faults.ts";

/** Whether to run it: not (off, or done for this key: passed or accepted), or run (again: `takeover` when a step was cut short during the last). */
type BaseVerifyNeed = { kind: "none" } | { kind: "run"; takeover: boolean };

/**
 * `key` names the pair of the default verify and `workspace.setup` (null: no base verify). A run
 * that passed or whose failure a person accepted holds for its key; one that failed is run again
 * once the loop is resumed without `--yes` (the person fixed something); one left running was cut
 * short with its step, and is run again.
 */
export function baseVerifyNeed(key: string | null, record: BaseVerifyRecord | undefined): BaseVerifyNeed {
  if (key === null) return { kind: "none" };
  if (record?.key !== key) return { kind: "run", takeover: false };
  if (record.status === "passed" || record.status === "accepted") return { kind: "none" };
  return { kind: "run", takeover: record.status === "running" };
}

/** The fault `base_verify_failed`: what failed on the base, its telling lines (escaped by the caller), and the two ways on. */
export function baseVerifyFault(o: {
  code: Exclude<BaseVerifyCode, "passed">;
  verify: string;
  setup: string | null;
  commit: string;
  base: string;
  why: string;
  log: string;
}): EnvironmentFault {
  const what =
    o.code === "setup_failed"
      ? `workspace.setup (${JSON.stringify(o.setup)}) failed on the base ${o.base} (${o.commit.slice(0, 12)}), before the verify could run`
      : `the verify ${JSON.stringify(o.verify)} failed on the base ${o.base} (${o.commit.slice(0, 12)}), before any item changed it`;
  return {
    kind: "base_verify_failed",
    message: `${what}: ${o.why} (its output: ${o.log}). No item was launched and no attempt was spent`,
    fix: "fix the environment, `workspace.setup` or the verify in loop.json, then `loop ctl resume` (it runs again); or, if the verify is meant to fail until the items land, `loop ctl resume --yes` accepts it for this verify and setup",
  };
}
