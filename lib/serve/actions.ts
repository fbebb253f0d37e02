// The page's actions carried out: the one module of lib/serve that reaches the writer, through
// `loop ctl`'s own function (lib/control/ctl-request.ts), so a page's action is the command's, with
// its checks, confirmation word, events and errors. Nothing in lib/serve imports it: `loop serve`
// loads it (a dynamic import) only when it takes actions, so a `--read-only` server never loads the
// writer (.dependency-cruiser.cjs, tests/architecture.test.ts).
import { runCtl } from "../control/ctl-request.ts";
import type { Act } from "./action-request.ts";

/** The actions of a server whose sessions end with `env` (the server's own: grace periods, as `loop ctl` reads them). */
export function actionsWith(env: Record<string, string | undefined>): Act {
  return (loop, a, actor) =>
    runCtl({
      root: loop.root,
      stateRoot: loop.stateRoot,
      env,
      actor,
      request: { verb: a.verb, items: a.item === undefined ? [] : [a.item], text: a.text, reason: a.reason },
      confirmation: { kind: "typed", word: a.confirm ?? null },
    });
}
