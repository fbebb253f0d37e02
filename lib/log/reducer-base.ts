// The reducer's handlers of the default verify on the base tree (docs/events.md#base_verify_started):
// its run started, its result, and a person's acceptance of a failure. Part of the one definition of
// what the log means (reducer.ts spreads them into its table). The pause a failure causes is the
// environment_fault recorded in the same commit.
import type { Handlers } from "./reducer-rules.ts";

export const BASE_HANDLERS: Pick<Handlers, "base_verify_started" | "base_verify_finished" | "base_verify_accepted"> = {
  base_verify_started(p, e, fail) {
    if (e.item !== null) fail("item_forbidden", "base_verify_started names no item");
    if (p.loop.state !== "running") fail("loop_state", `base_verify_started needs a running loop, it is ${p.loop.state}`);
    if (p.loop.current !== null) fail("one_in_flight", `base_verify_started while "${p.loop.current}" is in flight`);
    const pl = e.payload;
    // A run left "running" was cut short with its step: this one takes it over.
    p.loop.baseVerify = {
      key: pl.key,
      status: "running",
      verify: pl.verify,
      setup: pl.setup,
      commit: pl.commit,
      startedAt: e.ts,
      finishedAt: null,
      code: null,
      exitCode: null,
      quote: null,
      log: null,
      acceptedBy: null,
    };
  },
  base_verify_finished(p, e, fail) {
    if (e.item !== null) fail("item_forbidden", "base_verify_finished names no item");
    const b = p.loop.baseVerify;
    const pl = e.payload;
    if (!b || b.key !== pl.key || b.status !== "running") return fail("base_verify_order", `base_verify_finished for ${pl.key}, which is not running`);
    b.status = pl.code === "passed" ? "passed" : "failed";
    b.finishedAt = e.ts;
    b.code = pl.code;
    b.exitCode = pl.exitCode;
    b.quote = pl.quote;
    b.log = pl.log;
  },
  base_verify_accepted(p, e, fail) {
    if (e.item !== null) fail("item_forbidden", "base_verify_accepted names no item");
    const b = p.loop.baseVerify;
    if (!b || b.key !== e.payload.key || b.status !== "failed")
      return fail("base_verify_order", `base_verify_accepted for ${e.payload.key}, which did not fail`);
    b.status = "accepted";
    b.acceptedBy = e.actor;
  },
};
