// `loop logs`: an attempt's output found from the log, printed as it is on disk to a pipe and
// escaped on a terminal, followed while the session lives (across the output cap's cuts, each
// output byte printed once or counted by a marker), every mistake an exit 2 with a clear message,
// and nothing under the state root touched.
import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { printLog, type LogTarget } from "../../lib/reports/logs.ts";
import { CappedLog, markerLine, MIN_OUTPUT_CAP, outputLayout } from "../../lib/supervisor/output-log.ts";
import { snapshotTree, TempDirs } from "../helpers/fs.ts";
import { BUN, cliEnv, demoDefinition, LOOP, pollUntil, type Project, scenario, shq } from "../helpers/project.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());
const TIMEOUT = 120_000; // a bound for real processes on 2 cores, not an expectation

/** Numbered lines: any byte's place in the output can be checked. */
function stream(count: number): Buffer {
  let s = "";
  for (let i = 1; i <= count; i++) s += `${i}\n`;
  return Buffer.from(s);
}

/**
 * Check what a follower printed against the output it followed: runs of output in order, and
 * where it skipped, one marker whose count is exactly the bytes skipped. Returns the markers' counts.
 */
function checkFollowed(printed: Buffer, output: Buffer, cap: number): number[] {
  const text = printed.toString("latin1");
  const re = /\n\[loop: (\d+) bytes of output dropped here \(output cap (\d+) bytes\)\]\n/g;
  const skips: number[] = [];
  let at = 0;
  let pos = 0;
  for (let m = re.exec(text); ; m = re.exec(text)) {
    const end = m ? m.index : text.length;
    const run = printed.subarray(at, end);
    expect(run.equals(output.subarray(pos, pos + run.length))).toBe(true);
    pos += run.length;
    if (!m) break;
    expect(Number(m[2])).toBe(cap);
    skips.push(Number(m[1]));
    pos += Number(m[1]);
    at = m.index + m[0].length;
  }
  expect(pos).toBe(output.length);
  return skips;
}

describe("following a capped log (lib/reports/logs.ts printLog)", () => {
  const cap = MIN_OUTPUT_CAP;
  const { keep } = outputLayout(cap);

  /** The writer writes one chunk each time the follower finds nothing new: a deterministic interleaving. */
  async function follow(output: Buffer, chunk: number): Promise<{ printed: Buffer; skips: number[] }> {
    const path = join(temp.make(), "output.log");
    const log = new CappedLog(path, cap);
    const target: LogTarget = { item: "a", epoch: 0, attempt: 1, attempts: 1, kind: "output", path, cap };
    const parts: Buffer[] = [];
    let written = 0;
    const end = await printLog({
      target,
      write: async (b) => (parts.push(Buffer.from(b)), true),
      live: () => {
        if (written >= output.length) return false;
        log.write(output.subarray(written, written + chunk));
        written += chunk;
        return true;
      },
      pollMs: 0,
      liveEveryMs: 0,
    });
    log.close();
    expect(end).toBe("ended");
    const printed = Buffer.concat(parts);
    return { printed, skips: checkFollowed(printed, output, cap) };
  }

  test("a follower that keeps up prints the whole output, byte for byte, across every cut", async () => {
    const output = stream(60_000); // 350 KB: several cuts of a 64 KiB cap
    const { printed, skips } = await follow(output, Math.floor(keep / 3));
    expect(skips).toEqual([]);
    expect(printed.equals(output)).toBe(true);
  });

  test("a follower that falls behind prints one marker per gap, counting exactly what it missed", async () => {
    const output = stream(120_000);
    const { skips } = await follow(output, 5 * keep); // several cuts between two reads
    expect(skips.length).toBeGreaterThan(1);
    for (const n of skips) expect(n).toBeGreaterThan(0);
  });

  test("without follow, a cut file prints as it is: head, its own marker, tail", async () => {
    const path = join(temp.make(), "output.log");
    const log = new CappedLog(path, cap);
    const output = stream(30_000);
    log.write(output);
    log.close();
    const parts: Buffer[] = [];
    const end = await printLog({
      target: { item: "a", epoch: 0, attempt: 1, attempts: 1, kind: "output", path, cap },
      write: async (b) => (parts.push(Buffer.from(b)), true),
    });
    expect(end).toBe("ended");
    expect(Buffer.concat(parts).equals(readFileSync(path))).toBe(true);
    expect(readFileSync(path, "utf8")).toContain(markerLine(log.droppedBytes, cap));
  });
});

// ---------------------------------------------------------------------------------------------
// Through the real entry point.

async function logs(p: Project, args: string[], env: Record<string, string | undefined> = {}) {
  const proc = Bun.spawn([BUN, LOOP, "logs", ...args, "--root", p.root], {
    cwd: p.root,
    env: cliEnv({ ...p.env, ...env }),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).arrayBuffer(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout: Buffer.from(stdout), stderr };
}

/** Start `loop logs … --follow`, collecting its stdout as it comes. */
function follower(p: Project, args: string[]) {
  const proc = Bun.spawn([BUN, LOOP, "logs", ...args, "--follow", "--root", p.root], {
    cwd: p.root,
    env: cliEnv(p.env),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const chunks: Buffer[] = [];
  const reading = (async () => {
    for await (const c of proc.stdout as ReadableStream<Uint8Array>) chunks.push(Buffer.from(c));
  })();
  return {
    proc,
    text: () => Buffer.concat(chunks).toString(),
    async done() {
      await reading;
      const stderr = await new Response(proc.stderr).text();
      return { code: await proc.exited, stdout: Buffer.concat(chunks), stderr };
    },
  };
}

/** Prints a line, waits for `gate`, prints another, then does its work. */
const gated = (gate: string) => ({
  command: ["sh", "-c", `echo before-gate; while [ ! -e ${shq(gate)} ]; do sleep 0.05; done; echo after-gate; echo done > DONE-$LOOP_ITEM.md`],
});

describe("loop logs", () => {
  test(
    "prints the latest or a chosen attempt, the verify output, the facts as JSON; every mistake is exit 2; nothing changes",
    async () => {
      await scenario(
        demoDefinition([
          // Both attempts fail their verify (with directives the demo agent writes no DEMO-a.md); b is then blocked.
          { id: "a", prompt: "work\n@demo print hello from a\n@demo attempt 1 exit 3", verify: "echo checking; test -f DEMO-a.md" },
          { id: "b", prompt: "never runs", dependsOn: ["a"] },
        ]),
        {},
        async (p) => {
          await p.runToDrain();
          expect(p.projection().items.a!.attempts).toHaveLength(2);
          const before = snapshotTree(p.stateRoot);

          const latest = await logs(p, ["a"]);
          expect(latest.code).toBe(0);
          expect(latest.stdout.equals(readFileSync(join(p.sessionDir("a", 2), "output.log")))).toBe(true);
          expect(latest.stdout.toString()).toContain("hello from a");
          const first = await logs(p, ["a", "--attempt", "1"]);
          expect(first.stdout.equals(readFileSync(join(p.sessionDir("a", 1), "output.log")))).toBe(true);
          expect(first.stdout.toString()).toContain("exit 3");
          const verify = await logs(p, ["a", "--verify", "--attempt", "2"]);
          expect(verify.stdout.toString()).toBe("checking\n");
          // Following an attempt that is over prints it and ends.
          const over = await logs(p, ["a", "-f"]);
          expect(over.code).toBe(0);
          expect(over.stdout.equals(latest.stdout)).toBe(true);

          const facts = JSON.parse((await logs(p, ["a", "--json"])).stdout.toString());
          expect(facts).toEqual({
            schema: "loop/logs@1",
            item: "a",
            attempt: 2,
            attempts: 2,
            kind: "output",
            path: join(p.sessionDir("a", 2), "output.log"),
            exists: true,
            bytes: latest.stdout.length,
            droppedBytes: 0,
          });

          const refused: [string[], string, string][] = [
            [["zzz"], "unknown_item", 'item "zzz": no item of this loop has this id'],
            [["a", "--attempt", "3"], "usage", "--attempt 3: a has 2 attempts (1 to 2)"],
            [["a", "--attempt", "0"], "usage", '--attempt must be a positive whole number, not "0"'],
            [["a", "--attempt", "two"], "usage", '--attempt must be a positive whole number, not "two"'],
            [["a", "--json", "--follow"], "usage", "--json and --follow exclude each other"],
            [["b"], "usage", "b has no attempts yet (it is blocked): nothing was logged"],
            [["bad ref"], "invalid_ref", "invalid work-item"],
          ];
          for (const [args, code, message] of refused) {
            const r = await logs(p, args);
            expect({ args, code: r.code, out: r.stdout.length }).toEqual({ args, code: 2, out: 0 });
            const err = JSON.parse(r.stderr).error;
            expect(err.code).toBe(code);
            expect(err.message).toContain(message);
          }
          const noItem = await logs(p, []);
          expect(noItem.code).toBe(2);
          expect(noItem.stderr).toContain("missing required argument <item>");
          // Read-only: not a byte, not an mtime, no -wal or -shm.
          expect(snapshotTree(p.stateRoot)).toEqual(before);
        },
      );
    },
    TIMEOUT,
  );

  test(
    "raw bytes to a pipe, control characters escaped on a terminal (line breaks and tabs kept)",
    async () => {
      const colourful = { command: ["sh", "-c", "printf 'plain\\033[31mred\\033[0m\\tand a tab\\r\\nend\\n'"] };
      await scenario(demoDefinition([{ id: "a", prompt: "p", runner: "colourful" }], { runners: { colourful } }), {}, async (p) => {
        await p.runToDrain();
        const raw = await logs(p, ["a"]);
        expect(raw.stdout.toString()).toBe("plain\u001b[31mred\u001b[0m\tand a tab\r\nend\n");
        const HAVE_SCRIPT = spawnSync("script", ["--version"]).status === 0;
        if (!HAVE_SCRIPT) return console.warn("logs.test.ts: the terminal case SKIPPED: no `script` (util-linux) to make a pty");
        // `script` runs it on a pseudo-terminal (which turns each \n into \r\n on the way out).
        const cmd = [BUN, LOOP, "logs", "a", "--root", p.root].map(shq).join(" ");
        const tty = spawnSync("script", ["-qec", cmd, "/dev/null"], { env: cliEnv(), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
        expect(tty.status).toBe(0);
        expect(tty.stdout.replace(/\r\n/g, "\n")).toBe("plain\\u001b[31mred\\u001b[0m\tand a tab\\r\nend\n");
      });
    },
    TIMEOUT,
  );

  test(
    "--follow prints as the agent works and ends by itself when the session does; Ctrl-C is exit 130",
    async () => {
      await scenario(
        (q) =>
          demoDefinition(
            [
              { id: "a", prompt: "p", runner: "gated" },
              { id: "b", prompt: "p", runner: "slow" },
            ],
            {
              runners: { gated: gated(join(q.aux, "gate")), slow: gated(join(q.aux, "gate-b")) },
            },
          ),
        {},
        async (p) => {
          expect(await p.run()).toMatchObject({ action: "launched", item: "a" });
          const before = snapshotTree(p.stateRoot);
          const f = follower(p, ["a"]);
          await pollUntil(() => f.text().includes("before-gate\n"), "the follower printed the agent's first line");
          expect(f.proc.exitCode).toBeNull(); // still following: the agent waits
          // Its verify has not run: nothing printed, said on stderr (not with --quiet), exit 0.
          const noVerify = await logs(p, ["a", "--verify"]);
          expect({ code: noVerify.code, out: noVerify.stdout.length }).toEqual({ code: 0, out: 0 });
          expect(noVerify.stderr).toContain(`a attempt 1: no verify output yet (${join(p.sessionDir("a", 1), "verify.log")} does not exist)`);
          expect((await logs(p, ["a", "--verify", "--quiet"])).stderr).toBe("");
          writeFileSync(join(p.aux, "gate"), "");
          const r = await f.done();
          expect(r.code).toBe(0);
          expect(r.stdout.toString()).toBe("before-gate\nafter-gate\n");
          expect(r.stdout.equals(readFileSync(join(p.sessionDir("a", 1), "output.log")))).toBe(true);
          // Following changed nothing under the state root (the session's own files aside).
          const after = snapshotTree(p.stateRoot);
          for (const k of Object.keys(before).filter((k) => !k.startsWith("sessions") && !k.startsWith("workspaces"))) expect(after[k]).toEqual(before[k]);

          await p.runUntil((x) => x.action === "launched" && x.item === "b", { what: "b launched" });
          const g = follower(p, ["b"]);
          await pollUntil(() => g.text().includes("before-gate\n"), "the follower of b printed");
          g.proc.kill("SIGINT");
          expect((await g.done()).code).toBe(130);
          writeFileSync(join(p.aux, "gate-b"), "");
          await p.runToDrain();
        },
      );
    },
    TIMEOUT,
  );

  test(
    "--follow of an agent that prints 40 times the cap: every byte printed once or counted by a marker",
    async () => {
      const COUNT = 400_000;
      const flood = (go: string) => ({ command: ["sh", "-c", `echo ready; while [ ! -e ${shq(go)} ]; do sleep 0.05; done; seq 1 ${COUNT}; echo THE-END`] });
      await scenario(
        (q) => demoDefinition([{ id: "loud", prompt: "p", runner: "flood" }], { runners: { flood: flood(join(q.aux, "go")) } }),
        { env: { LOOP_OUTPUT_CAP: "64K" } },
        async (p) => {
          expect(await p.run()).toMatchObject({ action: "launched", item: "loud" });
          const f = follower(p, ["loud"]);
          await pollUntil(() => f.text().startsWith("ready\n"), "the follower is following");
          writeFileSync(join(p.aux, "go"), "");
          const r = await f.done();
          expect(r.code).toBe(0);
          const output = Buffer.concat([Buffer.from("ready\n"), stream(COUNT), Buffer.from("THE-END\n")]);
          checkFollowed(r.stdout, output, MIN_OUTPUT_CAP);
          expect(r.stdout.toString().endsWith(`${COUNT}\nTHE-END\n`)).toBe(true);
          await p.runToDrain();
        },
      );
    },
    TIMEOUT,
  );
});
