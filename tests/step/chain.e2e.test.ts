// Chained steps (docs/cli/loop-run.md#chained-steps): the wrapper of a session or a verify runs the
// next `loop run` when its process ends. Through the CLI with real processes: one `loop run` by the
// test, and the log shows every later phase recorded by the steps the wrappers chained. The test
// environment turns chaining off (tests/helpers/env.ts); these tests turn it on.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, pollUntil, type Project, scenario } from "../helpers/project.ts";
import { dbPath, withReadSnapshot } from "../../lib/log/snapshot.ts";
import { Database } from "bun:sqlite";
import { hostname } from "node:os";
import { pidAlive } from "../../lib/shared/process.ts";

const T = 180_000;
const ON = { LOOP_CHAIN: "on" };

const items = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: `item-${i + 1}`,
    prompt: `@demo write f${i + 1}.txt ${i + 1}\n@demo commit add f${i + 1}`,
    verify: `test -s f${i + 1}.txt`,
  }));

/** Nothing of the loop runs any more: no step holds the lease, no wrapper (one may wait to try its chained step again). */
async function settled(p: Project): Promise<void> {
  await pollUntil(() => leaseFree(p) && p.sessionGroups().every((g) => !p.alive(g)), "the last chained step and its wrapper ended");
}

/** No step holds the lease (the row is gone or its holder is dead). */
function leaseFree(p: Project): boolean {
  const row = withReadSnapshot(p.stateRoot, ({ db }) => {
    try {
      return db.query("SELECT pid FROM lease").get() as { pid: number } | null;
    } catch {
      return null;
    }
  });
  return !row || !pidAlive(row.pid);
}

describe("chained steps", () => {
  test.concurrent(
    "one `loop run` drains a backlog of three items landed by merge: every later phase is a step the wrappers chained",
    () =>
      scenario(demoDefinition(items(3), { defaults: { landing: "merge" } }), { env: ON }, async (p) => {
        const first = await p.run();
        expect(first.action).toBe("launched");
        await pollUntil(() => p.projection().loop.state === "drained", "the loop drained without another tick");
        const st = p.projection();
        expect(st.order.map((id) => st.items[id]!.status)).toEqual(["passed", "passed", "passed"]);
        // Each item was verified and landed; the test ran one step, so the chained steps did all of it.
        for (const id of st.order) {
          expect(p.eventsOf("verify_started", id).length).toBe(1);
          expect(p.eventsOf("item_settled", id).map((e) => e.payload.outcome)).toEqual(["passed"]);
        }
        expect(git(p.root, "show", "loop/t/landed:f3.txt").trim()).toBe("3");
        // Never two steps at once: no step found another's lease and took it over.
        expect(p.eventsOf("lease_taken_over")).toEqual([]);
        // The chained steps' messages are kept in the attempt's folder.
        expect(existsSync(join(p.sessionDir("item-1", 1), "chain.log"))).toBe(true);
        await settled(p);
      }),
    T,
  );

  test.concurrent(
    "a chained step that finds the lease held does nothing and is tried again after a pause; once the lease is free, the loop drains without a tick",
    () =>
      scenario(demoDefinition([{ id: "slow", prompt: "@demo sleep 1\n@demo write s.txt s", verify: "test -s s.txt" }]), { env: ON }, async (p) => {
        await p.run();
        // A live holder (a process of this test), as a long step would be.
        const holder = Bun.spawn(["sleep", "600"], { stdout: "ignore" });
        const db = new Database(dbPath(p.stateRoot));
        try {
          const now = Date.now();
          db.run("INSERT OR REPLACE INTO lease(id, owner, pid, host, started, expires) VALUES (1, 'test', ?, ?, ?, ?)", [
            holder.pid,
            hostname(),
            new Date(now).toISOString(),
            new Date(now + 600_000).toISOString(),
          ]);
          const log = join(p.sessionDir("slow", 1), "chain.log");
          await pollUntil(() => existsSync(log) && readFileSync(log, "utf8").includes("another step holds the lease"), "the chained step found the lease held");
          expect(p.eventsOf("session_ended")).toEqual([]);
          db.run("DELETE FROM lease WHERE owner = 'test'");
        } finally {
          db.close();
          holder.kill();
        }
        await pollUntil(() => p.projection().loop.state === "drained", "drained once the lease was free, without a tick");
        expect(p.projection().items.slow!.status).toBe("passed");
        await settled(p);
      }),
    T,
  );

  test.concurrent(
    "LOOP_CHAIN=off (the tests' default): nothing happens between ticks; the launch record holds no chain",
    () =>
      scenario(demoDefinition(items(1)), {}, async (p) => {
        await p.run();
        await pollUntil(() => existsSync(join(p.sessionDir("item-1", 1), "exit.json")), "the agent ended");
        const launch = JSON.parse(readFileSync(join(p.sessionDir("item-1", 1), "launch.json"), "utf8"));
        expect(launch.chain).toBeUndefined();
        // The session ended, yet nothing observed it: the log ends with its start.
        expect(p.eventsOf("session_ended")).toEqual([]);
        await p.runToDrain();
      }),
    T,
  );

  test.concurrent(
    "an invalid LOOP_CHAIN is a warning of the step, and nothing is chained",
    () =>
      scenario(demoDefinition(items(1)), { env: { LOOP_CHAIN: "yes" } }, async (p) => {
        const r = await p.run();
        expect(r.warnings).toContain('LOOP_CHAIN must be on or off, not "yes"; steps are not chained (cron takes every step)');
        const launch = JSON.parse(readFileSync(join(p.sessionDir("item-1", 1), "launch.json"), "utf8"));
        expect(launch.chain).toBeUndefined();
        await p.runToDrain();
      }),
    T,
  );

  test.concurrent(
    "an item behind a gateway (network set) is chained too: its launch record, which the agent can read, names the chained step's command but holds no environment and no model key",
    () =>
      scenario(demoDefinition(items(1), { defaults: { network: "none" } }), { env: { ...ON, ANTHROPIC_API_KEY: "sk-ant-loops-own-key" } }, async (p) => {
        expect((await p.run()).action).toBe("launched");
        const text = readFileSync(join(p.sessionDir("item-1", 1), "launch.json"), "utf8");
        expect(JSON.parse(text).chain.argv.slice(-6)).toEqual(["run", "--quiet", "--root", p.root, "--state-root", p.stateRoot]);
        expect(JSON.parse(text).chain.env).toBeUndefined();
        expect(text).not.toContain("sk-ant-loops-own-key");
        await pollUntil(() => p.projection().loop.state === "drained", "drained without another tick");
        expect(p.projection().items["item-1"]!.status).toBe("passed");
        await settled(p);
      }),
    T,
  );

  test.concurrent(
    "the chained step runs with loop's environment without loop's secrets nor a session mark, handed to the wrapper privately: the launch record holds none of it",
    () =>
      scenario(
        (p) =>
          demoDefinition([{ id: "item-1", prompt: "@demo write f1.txt 1\n@demo commit add f1", verify: `env > ${join(p.aux, "verify-env")}; test -s f1.txt` }]),
        { env: { ...ON, GITHUB_TOKEN: "ghp_secret", LOOP_SESSION_MARK: "someone-else", KEEP_ME: "kept-7" } },
        async (p) => {
          await p.run();
          const launch = JSON.parse(readFileSync(join(p.sessionDir("item-1", 1), "launch.json"), "utf8"));
          expect(launch.chain.argv.slice(-6)).toEqual(["run", "--quiet", "--root", p.root, "--state-root", p.stateRoot]);
          expect(launch.chain.env).toBeUndefined();
          expect(launch.private).toBe("stdin");
          await pollUntil(() => p.projection().loop.state === "drained", "drained");
          // The verify was started by the chained step: what it inherited is what that step was given.
          const env = Object.fromEntries(
            readFileSync(join(p.aux, "verify-env"), "utf8")
              .split("\n")
              .filter((l) => l.includes("="))
              .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
          );
          expect(p.eventsOf("verify_started").length).toBe(1);
          expect({ chain: env.LOOP_CHAIN, kept: env.KEEP_ME, token: env.GITHUB_TOKEN, mark: env.LOOP_SESSION_MARK === "someone-else" }).toEqual({
            chain: "on",
            kept: "kept-7",
            token: undefined,
            mark: false,
          });
          await settled(p);
        },
      ),
    T,
  );

  test.concurrent(
    "a chained step killed at a failpoint (verify:after_reserve) holding the lease: the next tick takes the lease over and the loop drains",
    () =>
      scenario(demoDefinition(items(1), { defaults: { landing: "merge" } }), {}, async (p) => {
        // The failpoint travels with loop's environment to the chained step; the launching step never reaches it.
        const first = await p.loop(["run", "--json", "--root", p.root], { ...ON, LOOP_FAILPOINT: "verify:after_reserve" });
        expect(first.code).toBe(0);
        expect(JSON.parse(first.stdout).action).toBe("launched");
        await pollUntil(() => p.eventsOf("verify_reserved", "item-1").length === 1 && leaseFree(p), "the chained step reserved the verify and died");
        expect(p.eventsOf("verify_started")).toEqual([]);
        expect(readFileSync(join(p.sessionDir("item-1", 1), "chain.log"), "utf8")).toContain("verify:after_reserve");
        // Cron's next ticks, without the failpoint (and, as the tests' default, without chaining).
        await p.runToDrain();
        expect(p.eventsOf("lease_taken_over").length).toBe(1);
        expect(p.projection().items["item-1"]!.status).toBe("passed");
      }),
    T,
  );
});
