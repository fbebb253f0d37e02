#!/usr/bin/env bun
// loop serve: a web page of one or more loops, with JSON APIs, Prometheus metrics and the page's
// actions (`loop ctl`'s verbs); --read-only serves no action, and never loads the writer.
import { DESCRIPTIONS } from "../lib/shared/tools.ts";
import { defineTool, resolveRoot, resolveStateRoot, main } from "../lib/shared/cli.ts";
import { EXIT, UsageError } from "../lib/shared/errors.ts";
import { startServe } from "../lib/serve/serve.ts";
import { DEFAULT_LISTEN, TOKEN_ENV } from "../lib/serve/access.ts";
import { makeUndumpable } from "../lib/supervisor/undumpable.ts";

export const tool = defineTool({
  name: "loop-serve",
  description: DESCRIPTIONS.serve,
  examples: [
    ["loop serve", "the live page of this loop on 127.0.0.1"],
    ["loop serve --root /srv/api --root /srv/web --listen 127.0.0.1:8080", "one page for several loops"],
  ],
  args: {
    root: {
      type: "string",
      multiple: true,
      description: "a project root to serve; repeatable, one loop each (default: nearest ancestor holding loop.json, else the cwd)",
      valueHint: "dir",
    },
    listen: { type: "string", description: `where to listen (default ${DEFAULT_LISTEN}; port 0 picks a free port)`, valueHint: "host:port" },
    token: {
      type: "string",
      description: `the token every request must carry (default $${TOKEN_ENV}); required to listen beyond loopback`,
      valueHint: "token",
    },
    "read-only": { type: "boolean", description: "serve no actions: the page shows none, POST is refused (405), the writer is never loaded" },
  },
  footer:
    "Prints the address on stdout (first line), serves until SIGINT or SIGTERM.\nExit codes: 130 stopped by a signal, 1 cannot listen, 2 usage (a token missing for a non-loopback address; missing, corrupt or outdated store).",
  async run(args, ctx) {
    // A long-running process of the user the agents run as, started from a shell that may hold loop's
    // keys: none of them may read its environment or memory (docs/threat-model.md#where-each-secret-lives).
    await makeUndumpable();
    const roots = args.root.length ? args.root : [undefined];
    if (roots.length > 1 && args["state-root"])
      throw new UsageError("--state-root names one state root: with several --root, each loop's state root is <root>/.loop");
    if (roots.length > 1 && ctx.env.LOOP_STATE_ROOT)
      throw new UsageError("LOOP_STATE_ROOT names one state root: unset it to serve several --root (each loop's state root is then <root>/.loop)");
    const loops = roots.map((r) => {
      const root = resolveRoot(r, ctx.cwd);
      return { root, stateRoot: resolveStateRoot({ root, flag: args["state-root"], env: ctx.env, cwd: ctx.cwd }) };
    });
    // The writer is loaded only for a server that takes actions: a read-only one never holds it (docs/architecture.md).
    const act = args["read-only"] ? undefined : (await import("../lib/serve/actions.ts")).actionsWith(ctx.env);
    const served = startServe({ loops, listen: args.listen ?? DEFAULT_LISTEN, token: args.token, env: ctx.env, log: (m) => ctx.log.warn(m), act });
    const doc = served.document;
    // The first line of stdout is the address (port 0: the one picked), written before serving on.
    await ctx.outRaw(
      ctx.format === "json" ? JSON.stringify(doc) + "\n" : `${doc.url}\n${doc.loops.map((l) => `${l.name}: ${l.url}  (${l.root})`).join("\n")}\n`,
    );
    ctx.log.info(
      `loop serve: ${doc.loops.length} loop${doc.loops.length === 1 ? "" : "s"} on ${doc.url}${doc.token ? " (token required)" : ""}${doc.actions ? ", actions on" : ", read-only"}; Ctrl-C stops`,
    );
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    await served.stop();
    return EXIT.interrupted;
  },
});

if (import.meta.main) await main(tool);
