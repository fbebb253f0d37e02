// What a session's or a verify's wrapper runs when its process ends (docs/cli/loop-run.md#chained-steps):
// this step's own `loop run`, for the same root and state root, with loop's environment less loop's
// secrets (its model keys kept: the next step's gateways hold them). That environment is handed to the
// wrapper privately (lib/supervisor/sessions.ts), never written in the session folder the agent reads.
// Not in a loop with a forge: the next step would need the forge's token, and nothing the agent runs
// beside may hold it (docs/threat-model.md). `LOOP_CHAIN=off` turns it off.
import { join } from "node:path";
import { childEnvironment, toolRule } from "../definition/child-environment.ts";
import { SESSION_MARK_VAR } from "../shared/process.ts";
import { CHAIN_LOG, type ChainRecord } from "../supervisor/chain.ts";
import { selfArgv } from "../supervisor/self.ts";
import type { StepContext } from "./context.ts";

/** `$LOOP_CHAIN`: on (the default) or off; anything else is said, and taken as off. */
function chainMode(env: Record<string, string | undefined>): "on" | "off" | { invalid: string } {
  const v = env.LOOP_CHAIN ?? "";
  if (v === "" || v === "on") return "on";
  if (v === "off") return "off";
  return { invalid: `LOOP_CHAIN must be on or off, not ${JSON.stringify(v)}; steps are not chained (cron takes every step)` };
}

/** The chain record for a wrapper started in `dir` (an attempt's session folder), or null for none. */
function chainFor(ctx: StepContext, dir: string): ChainRecord | null {
  const mode = chainMode(ctx.options.env);
  if (typeof mode === "object") {
    if (!ctx.warnings.includes(mode.invalid)) {
      ctx.warnings.push(mode.invalid);
      ctx.options.log.warn(mode.invalid);
    }
    return null;
  }
  if (mode === "off" || ctx.def.forge) return null;
  // Loop's environment, less its secrets and a session's mark (the close path ends whatever carries one).
  const rule = toolRule(ctx.def, { keepModelKeys: true });
  const env = { ...childEnvironment(ctx.options.env, { ...rule, drop: [...rule.drop, SESSION_MARK_VAR] }, { cwd: ctx.options.root }), [CHAINED_STEP_VAR]: "1" };
  return {
    argv: [...selfArgv(), "run", "--quiet", "--root", ctx.options.root, "--state-root", ctx.options.stateRoot],
    cwd: ctx.options.root,
    env,
    log: join(dir, CHAIN_LOG),
  };
}

/** Set in a chained step's environment: its lease says it is one, so a busy `loop run` can say who holds it (lib/shared/errors.ts BusyLease). */
export const CHAINED_STEP_VAR = "LOOP_CHAINED_STEP";

/** chainFor as an option of a wrapper's start: absent when there is no chained step. (`_it`: the item, which changes nothing now.) */
export function chainOption(ctx: StepContext, dir: string, _it?: unknown): { chain?: ChainRecord } {
  const chain = chainFor(ctx, dir);
  return chain ? { chain } : {};
}
