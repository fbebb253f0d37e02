// `loop serve` as one call: check the address and the token, open each loop (refusing a store it
// cannot read, and two loops under one name), start the server, and say where it listens.
import { UsageError } from "../shared/errors.ts";
import { parseListen, tokenFor } from "./access.ts";
import { loopHref } from "./page.ts";
import { type Served, type ServeOptions, startServer } from "./server.ts";
import { LoopSource } from "./source.ts";

interface ServeRequest {
  loops: { root: string; stateRoot: string }[];
  /** `host:port` as given to --listen. */
  listen: string;
  /** --token, if given ($LOOP_SERVE_TOKEN otherwise). */
  token: string | undefined;
  env: Record<string, string | undefined>;
  pollMs?: ServeOptions["pollMs"];
  now?: ServeOptions["now"];
  log?: ServeOptions["log"];
  /** The page's actions (lib/serve/actions.ts), loaded by the caller; absent: read-only. */
  act?: ServeOptions["act"];
}

/** What `loop serve` prints first (`loop/serve@1`, docs/cli/loop-serve.md#output). */
interface ServeDocument {
  schema: "loop/serve@1";
  url: string;
  listen: string;
  token: boolean;
  /** Whether the page and POST /api/loops/<name>/actions take actions (false under --read-only). */
  actions: boolean;
  loops: { name: string; root: string; stateRoot: string; url: string }[];
}

export function startServe(r: ServeRequest): Served & { document: ServeDocument; sources: LoopSource[] } {
  const listen = parseListen(r.listen);
  const token = tokenFor(listen, r.token, r.env);
  const sources = r.loops.map((l) => {
    const s = new LoopSource({ root: l.root, stateRoot: l.stateRoot, env: r.env });
    s.open();
    return s;
  });
  const seen = new Map<string, LoopSource>();
  for (const s of sources) {
    const other = seen.get(s.name);
    if (other)
      throw new UsageError(
        other.stateRoot === s.stateRoot
          ? `--root ${s.root} is given twice (state root ${s.stateRoot})`
          : `two loops are named ${JSON.stringify(s.name)} (${other.root} and ${s.root}): their pages would have one address`,
      );
    seen.set(s.name, s);
  }
  let served: Served;
  try {
    served = startServer({ sources, listen, token, pollMs: r.pollMs, now: r.now, log: r.log, act: r.act });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // An address in use or not this machine's: the environment's fault (io_error, exit 1), said with the address.
    if (typeof e?.code === "string" && /^E[A-Z]+$/.test(e.code))
      throw Object.assign(new Error(`cannot listen on ${r.listen}: ${e.message} (${e.code})`), { code: e.code, syscall: e.syscall ?? "listen" });
    throw err;
  }
  const document: ServeDocument = {
    schema: "loop/serve@1",
    url: served.url,
    listen: `${listen.host.includes(":") ? `[${listen.host}]` : listen.host}:${served.port}`,
    token: token !== null,
    actions: r.act !== undefined,
    loops: sources.map((s) => ({ name: s.name, root: s.root, stateRoot: s.stateRoot, url: new URL(loopHref(s.name), served.url).href })),
  };
  return { ...served, document, sources };
}
