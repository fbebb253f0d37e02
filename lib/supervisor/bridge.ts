// `loop __bridge <socket-dir> -- <argv>`: the first process inside a sandbox whose network is
// unshared (docs/threat-model.md#the-gateway). It serves the session's gateway, whose two Unix
// sockets are bound into the sandbox, on the sandbox's own loopback (BRIDGE_HOST, BRIDGE_PORTS), runs the
// agent, and exits with the agent's status. Nothing else leaves the sandbox: it has no other
// interface and no name server.
import { connect, createServer, type Server } from "node:net";
import { join } from "node:path";
import { BRIDGE_HOST } from "../definition/network.ts";
import { BRIDGE_PORTS, GATEWAY_SOCKETS } from "./gateway-files.ts";

function serve(port: number, socket: string): Promise<Server> {
  const server = createServer((client) => {
    const up = connect(socket);
    client.on("error", () => up.destroy());
    up.on("error", () => client.destroy());
    client.pipe(up);
    up.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, BRIDGE_HOST, () => resolve(server));
  });
}

export async function runBridge(args: string[]): Promise<number> {
  const sep = args.indexOf("--");
  const dir = args[0];
  const argv = sep >= 0 ? args.slice(sep + 1) : [];
  if (!dir || sep !== 1 || argv.length === 0) {
    process.stderr.write("loop __bridge: usage: loop __bridge <socket-dir> -- <program> [args…]\n");
    return 2;
  }
  try {
    await serve(BRIDGE_PORTS.model, join(dir, GATEWAY_SOCKETS.model));
    await serve(BRIDGE_PORTS.proxy, join(dir, GATEWAY_SOCKETS.proxy));
  } catch (err) {
    process.stderr.write(`loop __bridge: cannot serve the gateway inside the sandbox: ${(err as Error).message}\n`);
    return 127;
  }
  let child: ReturnType<typeof Bun.spawn>;
  try {
    child = Bun.spawn(argv, { stdin: "ignore", stdout: "inherit", stderr: "inherit", env: process.env });
  } catch (err) {
    process.stderr.write(`loop: cannot start ${JSON.stringify(argv[0])}: ${(err as Error).message}\n`);
    return 127;
  }
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(sig, () => child.kill(sig));
  const code = await child.exited;
  return child.signalCode ? 128 + ({ SIGTERM: 15, SIGKILL: 9, SIGINT: 2, SIGHUP: 1 } as Record<string, number>)[String(child.signalCode)]! || 1 : code;
}
