// workspace.setup as a process (docs/loop-json.md#workspace): `sh -c <command>` in a new worktree,
// in a process group of its own, its output in the attempt's setup.log, the whole group killed at
// its deadline. The launch waits for it (the agent must not start in a half-prepared checkout), so
// it runs while the step holds its lease; the caller renews the lease for the deadline first.
import { closeSync, constants as fsConstants, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childEnvironment, type EnvRule } from "../definition/child-environment.ts";
import { formatDuration } from "../definition/duration.ts";
import { readTextOrNull, sliceText } from "../shared/fsutil.ts";
import { killGroup } from "../shared/process.ts";
import { type SandboxRequest, sandboxArgv, sandboxSpec } from "./sandbox.ts";
import type { GatewayRequest } from "./gateway-files.ts";
import { selfArgv, selfFiles } from "./self.ts";

/** How it ended: `exitCode` null when it was killed or never ran; `quote` the telling lines of its output (setupQuote), "" on a pass. */
type SetupRun = { ok: true; ms: number } | { ok: false; ms: number; reason: string; exitCode: number | null; quote: string };

export async function runSetup(o: {
  command: string;
  cwd: string;
  /** Added to the filtered environment (LOOP_ITEM, LOOP_ATTEMPT, LOOP_WORKDIR). */
  env: Record<string, string>;
  /** What it gets of loop's environment: the verify command's rule (lib/definition/child-environment.ts verifyRule). */
  envRule: EnvRule;
  logPath: string;
  timeoutMs: number;
  /**
   * The sandbox it runs in (docs/threat-model.md#the-airlock), or null: run as a plain child. With
   * `allow` (its setupNetwork a list) the network is unshared and the hosts listed are reached
   * through a proxy-only gateway, as a verify's list is.
   */
  sandbox?: { request: SandboxRequest; sessionDir: string; allow?: string[] } | null;
  /** Told the process group's id once it runs (the base verify records it, for the step that takes a cut-short one over). */
  onSpawn?: (pgid: number) => void;
}): Promise<SetupRun> {
  const started = Date.now();
  // Created afresh: never written through a link (or into a FIFO) found under its name.
  rmSync(o.logPath, { force: true });
  const fd = openSync(o.logPath, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o644);
  let timedOut = false;
  let proxy: { env: Record<string, string>; stop(): Promise<void> } | null = null;
  try {
    let child: Bun.Subprocess<"ignore", number, number>;
    try {
      let inner = ["sh", "-c", o.command];
      let request = o.sandbox?.request;
      if (o.sandbox?.allow) {
        const socketDir = mkdtempSync(join(tmpdir(), "lg-"));
        // Loaded only for a list: a server's modules cost every other setup's start.
        const { startSessionGateway } = await import("./session-gateway.ts");
        const gateway: GatewayRequest = {
          standIn: `loop-setup-${crypto.randomUUID().replaceAll("-", "")}`,
          allow: o.sandbox.allow,
          proxyOnly: true,
          socketDir,
        };
        try {
          proxy = await startSessionGateway({ dir: o.sandbox.sessionDir, request: gateway, env: {}, role: "setup", say: (line) => writeSync(fd, line) });
        } catch (err) {
          rmSync(socketDir, { recursive: true, force: true });
          return {
            ok: false,
            ms: Date.now() - started,
            reason: `could not start the proxy of its network (workspace.setupNetwork): ${(err as Error).message}`,
            exitCode: null,
            quote: "",
          };
        }
        // The bridge comes first inside, as for a session: it serves the proxy on the sandbox's loopback.
        inner = [...selfArgv(), "__bridge", socketDir, "--", ...inner];
        request = { ...request!, programs: [...(request!.programs ?? []), ...selfFiles()], gatewaySockets: socketDir };
      }
      const argv = o.sandbox ? sandboxArgv(sandboxSpec(request!, o.sandbox.sessionDir), inner) : inner;
      child = Bun.spawn(argv, {
        cwd: o.cwd,
        env: { ...childEnvironment(process.env, o.envRule, { cwd: o.cwd }), ...o.env, ...proxy?.env, LOOP_FAILPOINT: "" },
        detached: true,
        stdio: ["ignore", fd, fd],
      });
    } catch (err) {
      return { ok: false, ms: Date.now() - started, reason: `could not run sh: ${(err as Error).message}`, exitCode: null, quote: "" };
    }
    o.onSpawn?.(child.pid);
    const timer = setTimeout(() => {
      timedOut = true;
      void killGroup(child.pid, 2000);
    }, o.timeoutMs);
    await child.exited;
    clearTimeout(timer);
    // Whatever it left running in its group (a daemon an install started) ends with it.
    await killGroup(child.pid, 0);
    const ms = Date.now() - started;
    const last = outputTail(o.logPath);
    const failed = { ok: false as const, ms, exitCode: child.signalCode || timedOut ? null : child.exitCode, quote: last.replace(/^: /, "") };
    if (timedOut) return { ...failed, reason: `timed out after ${formatDuration(o.timeoutMs)}${last}` };
    if (child.signalCode) return { ...failed, reason: `killed by ${child.signalCode}${last}` };
    if (child.exitCode !== 0) return { ...failed, reason: `exited ${child.exitCode}${last}` };
    return { ok: true, ms };
  } finally {
    await proxy?.stop();
    closeSync(fd);
  }
}

function outputTail(path: string): string {
  try {
    return setupQuote(readTextOrNull(path, { noLinks: true }) ?? "");
  } catch {
    return "";
  }
}

/** A line that says what failed: a tool's `error:`/`ERROR:`/`fatal:` (cargo's `error[E0432]:`), npm's `npm ERR!`, an exception's `SomethingError: …`. */
const ERROR_LINE = /(^|[\s:])(error(\[[A-Za-z0-9]+\])?|ERROR|Error|fatal|FATAL):|npm ERR!|^[A-Za-z_][\w.]*(Error|Exception)(: |$)/;

/**
 * What a failed setup's reason quotes of its output (pure): the first line that reads as an error
 * (a Python traceback's is its last line, the exception) and then the last lines, ` / ` between
 * them, `…` where lines were left out; "" for no output.
 */
export function setupQuote(text: string, o: { last?: number; maxChars?: number } = {}): string {
  const lines = text
    .replace(/\r/g, "")
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== "");
  if (!lines.length) return "";
  const lastN = o.last ?? 3;
  const start = Math.max(0, lines.length - lastN);
  let first = -1;
  for (let i = 0; i < lines.length && first < 0; i++) {
    if (/^Traceback \(most recent call last\):/.test(lines[i]!)) {
      // The exception is the first line after the frames that is not indented.
      let j = i + 1;
      while (j < lines.length && /^\s/.test(lines[j]!)) j++;
      if (j < lines.length) first = j;
    } else if (ERROR_LINE.test(lines[i]!.trim())) first = i;
  }
  const cut = (l: string) => sliceText(l.trim(), 0, 300);
  const quoted =
    first >= 0 && first < start ? [cut(lines[first]!), ...(first < start - 1 ? ["…"] : []), ...lines.slice(start).map(cut)] : lines.slice(start).map(cut);
  const said = quoted.join(" / ");
  return `: ${said.length > (o.maxChars ?? 800) ? sliceText(said, 0, o.maxChars ?? 800) + "…" : said}`;
}
