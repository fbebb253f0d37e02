// Nothing to steal (docs/threat-model.md#where-each-secret-lives), through the real entry point: an
// agent that looks for loop's keys everywhere a process of its user can look — its environment,
// every file of the state root it can read, the environment of every process it can see — finds
// none, with and without the sandbox, while `loop run --watch` and `loop serve` run holding them, as
// the agent's own user (not root: root reads any process; as root the test runs everything as
// nobody). What loop starts besides (workspace.setup, the verify, notify, loop's own git) holds none
// either. And the defects this closed, each through `loop run`: the chained step's record that held
// loop's environment in the session folder (policy "clean"), and the agent's PWD that was loop's.
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN, cliEnv, demoDefinition, git, LOOP, pollUntil, type Project, scenario } from "../helpers/project.ts";

const T = 240_000;

/** Loop's keys, one of each kind: the model keys, the forge token, an operator's secret (environment.secrets), and one the "clean" policy keeps from agents. */
const KEYS = {
  ANTHROPIC_API_KEY: "sk-ant-loops-own-model-key-0001",
  OPENAI_API_KEY: "sk-loops-own-openai-key-0002",
  GITHUB_TOKEN: "ghp_loopsOwnForgeToken0003",
  OPS_DB_PASSWORD: "ops-db-password-0004",
  NOT_DECLARED: "not-for-agents-0005",
};

/** Which of loop's keys `text` holds, by name (`agentsOnly` too: what the "clean" policy keeps from agents, their verify and setup, not from loop's own commands). */
function found(text: string, o: { agentsOnly?: boolean } = { agentsOnly: true }): string[] {
  return Object.entries(KEYS)
    .filter(([k, v]) => (o.agentsOnly || k !== "NOT_DECLARED") && text.includes(v))
    .map(([k]) => k);
}

const root = process.getuid?.() === 0;
/** Run as a user of its own, when the test runs as root (root reads every process, undumpable or not). */
const AS = root ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];

function chownTree(path: string): void {
  if (!root) return;
  chownSync(path, 65534, 65534);
  if (statSync(path).isDirectory()) for (const e of readdirSync(path)) chownTree(join(path, e));
}

/**
 * The agent (a command runner, and everything else a process of its user could do): what it can
 * read of its environment, of every file under the state root, and of every process's environment,
 * into `probe-*` files of its worktree (the one folder it can write in the sandbox: loop commits them
 * on its branch); which processes it could not read, by pid.
 */
function probeScript(p: Project): string {
  return [
    // Once loop serve runs too (the test says so; in the sandbox the test's folder is hidden, and so is every process outside).
    `i=0; while [ -d '${p.aux}' ] && [ ! -e '${join(p.aux, "go")}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`,
    "env > probe-env",
    `find '${p.stateRoot}' -type f -exec cat {} + > probe-files 2>/dev/null`,
    ": > probe-procs; : > probe-denied",
    "for d in /proc/[0-9]*; do",
    '  if cat "$d/environ" >> probe-procs 2>/dev/null; then :; else echo "${d#/proc/}" >> probe-denied; fi',
    "done",
    "echo done > DONE.md",
  ].join("\n");
}

/** Where, in the verify's log (in the sandbox), workspace.setup's environment and the verify's begin. */
const SETUP_MARK = "== the environment of workspace.setup";
const VERIFY_MARK = "== the environment of the verify";

/** The environment dump of a command loop starts outside the sandbox: `env` into a file of the test's. */
const dump = (p: Project, name: string) => `env > '${join(p.aux, name)}'`;

function keysDefinition(p: Project, o: { sandbox?: boolean } = {}) {
  writeFileSync(join(p.aux, "notify.sh"), `#!/bin/sh\n${dump(p, "notify-env")}\n`, { mode: 0o755 });
  // Loop's own git calls, as they find git on PATH: what they were given, appended.
  mkdirSync(join(p.aux, "bin"));
  writeFileSync(join(p.aux, "bin", "git"), `#!/bin/sh\nenv >> '${join(p.aux, "git-env")}'\nexec /usr/bin/git "$@"\n`, { mode: 0o755 });
  return demoDefinition(
    [
      // In the sandbox the verify and workspace.setup see nothing of the test's folder: setup leaves its
      // environment in the checkout (a product, never committed), and the verify prints it and its own into verify.log.
      {
        id: "look",
        prompt: "Look for loop's keys.",
        verify: o.sandbox ? `echo '${SETUP_MARK}'; cat setup-env; echo '${VERIFY_MARK}'; env; test -s DONE.md` : `${dump(p, "verify-env")}; test -s DONE.md`,
      },
      // One that fails, so that the loop drains Failed and notify runs.
      { id: "fails", runner: "demo", prompt: "@demo write x.txt x\n@demo commit x", verify: "false", maxAttempts: 1 },
    ],
    {
      defaults: { runner: "prober", ...(o.sandbox ? { sandbox: "bwrap" } : {}) },
      // Inline: the test's folder is hidden in the sandbox.
      runners: { prober: { command: ["sh", "-c", probeScript(p)] } },
      environment: { policy: "clean", secrets: ["OPS_DB_PASSWORD"] },
      workspace: { setup: o.sandbox ? "env > setup-env" : dump(p, "setup-env") },
      notify: { command: ["sh", join(p.aux, "notify.sh")] },
    },
  );
}

/** workspace.setup's environment and the verify's, as the verify in the sandbox printed them into its log. */
function sandboxed(log: string): Record<"setup-env" | "verify-env", string> {
  const setup = log.indexOf(SETUP_MARK);
  const verify = log.indexOf(VERIFY_MARK);
  expect({ setup: setup >= 0, verify: verify > setup }).toEqual({ setup: true, verify: true });
  return { "setup-env": log.slice(setup, verify), "verify-env": log.slice(verify) };
}

/** Start `loop <args>` as the agents' user, in the project, with loop's keys in its environment. */
function startAsUser(p: Project, args: string[], env: Record<string, string>) {
  return Bun.spawn([...AS, BUN, LOOP, ...args], { cwd: p.root, env: cliEnv({ ...p.env, ...env }), stdout: "pipe", stderr: "pipe" });
}

for (const sandbox of [false, true])
  describe(`where loop's keys are, ${sandbox ? "in the sandbox" : "without the sandbox"}`, () => {
    test(
      `an agent that looks everywhere its user can finds none of them, while loop run --watch and loop serve run holding them${root ? " (all of it as nobody: root reads any process)" : ""}; workspace.setup, the verify, notify and loop's git were given none`,
      () =>
        scenario(
          (p) => keysDefinition(p, { sandbox }),
          {},
          async (p) => {
            const home = join(p.base, "home");
            mkdirSync(home);
            // The state root and the worktrees are the agents' user's, as they would be.
            Object.assign(p.env, {
              PATH: `${join(p.aux, "bin")}:${process.env.PATH}`,
              HOME: home,
              XDG_STATE_HOME: join(p.base, "state"),
              LOOP_CHAIN: "on",
              GIT_CONFIG_GLOBAL: join(home, ".gitconfig"),
            });
            writeFileSync(join(home, ".gitconfig"), "[safe]\n\tdirectory = *\n[user]\n\temail = test@loop.invalid\n\tname = loop test\n");
            chmodSync(p.base, 0o755);
            chownTree(p.base);
            const watch = startAsUser(p, ["run", "--watch", "--interval", "1s", "--root", p.root], KEYS);
            // loop serve once there is a loop to serve; the agent looks once it runs.
            await pollUntil(() => existsSync(join(p.stateRoot, "loop.db")), "the watcher's first step made the store");
            const serve = startAsUser(p, ["serve", "--root", p.root, "--listen", "127.0.0.1:0"], KEYS);
            try {
              // Serving: its first line is its address.
              const served = await serve.stdout.getReader().read();
              expect({
                serving: new TextDecoder().decode(served.value ?? new Uint8Array()).includes("http://127.0.0.1:"),
                stderr: served.done ? await new Response(serve.stderr).text() : "",
              }).toEqual({ serving: true, stderr: "" });
              writeFileSync(join(p.aux, "go"), "");
              await pollUntil(() => watch.exitCode !== null, "the watcher drained the loop");
              expect({
                exit: await watch.exited,
                stderr: (await new Response(watch.stderr).text()).split("\n").filter((l) => l && !l.startsWith("warn:")),
                out: p.projection().items.look!.status === "passed" ? "" : await new Response(watch.stdout).text(),
              }).toEqual({ exit: 1, stderr: [], out: "" });
              expect(p.projection().items.look!.status).toBe("passed");
              // What the agent read: none of loop's keys, anywhere.
              const probe = (f: string) => git(p.root, "-c", "safe.directory=*", "show", `loop/t/item/look:probe-${f}`);
              expect({ env: found(probe("env")), files: found(probe("files")), procs: found(probe("procs")) }).toEqual({ env: [], files: [], procs: [] });
              // Its own stand-in, not loop's key: it is behind its gateway.
              expect(probe("env")).toMatch(/^ANTHROPIC_API_KEY=loop-stand-in-/m);
              if (!sandbox) {
                // It saw the watcher and loop serve, and could not read them: undumpable.
                const denied = probe("denied").split("\n");
                expect({ watcher: denied.includes(String(watch.pid)), serve: denied.includes(String(serve.pid)) }).toEqual({ watcher: true, serve: true });
              }
              // Nor was anything else loop started given one (loop's git: every call it made; the push is a forge loop's).
              const given = sandbox
                ? sandboxed(readFileSync(join(p.sessionDir("look", 1), "verify.log"), "utf8"))
                : { "setup-env": readFileSync(join(p.aux, "setup-env"), "utf8"), "verify-env": readFileSync(join(p.aux, "verify-env"), "utf8") };
              for (const [f, text] of Object.entries(given))
                expect({ f, keys: found(text), dumped: text.includes("PATH=") }).toEqual({ f, keys: [], dumped: true });
              // Loop's own commands get the operator's environment (the "clean" policy is the agents'), never loop's keys.
              for (const f of ["notify-env", "git-env"])
                expect({ f, keys: found(readFileSync(join(p.aux, f), "utf8"), { agentsOnly: false }) }).toEqual({ f, keys: [] });
              expect(readFileSync(join(p.aux, "git-env"), "utf8")).toContain("PATH=");
            } finally {
              serve.kill();
              await serve.exited;
            }
            watch.kill();
          },
        ),
      T,
    );
  });

describe("the chained step's record (policy clean)", () => {
  test(
    "the session folder, which the agent reads, holds no value of loop's environment the agent was not given: the chained step's environment goes to its wrapper privately",
    () =>
      scenario(
        (p) => {
          writeFileSync(
            join(p.aux, "read.sh"),
            `#!/bin/sh\ncat "$(dirname "$LOOP_HANDOFF")"/* > '${join(p.aux, "session-files")}' 2>/dev/null\necho done > DONE.md\n`,
          );
          return demoDefinition([{ id: "a", prompt: "Read your folder.", verify: "test -s DONE.md" }], {
            defaults: { runner: "reader" },
            runners: { reader: { command: ["sh", join(p.aux, "read.sh")] } },
            environment: { policy: "clean", secrets: ["OPS_DB_PASSWORD"] },
          });
        },
        { env: { ...KEYS, LOOP_CHAIN: "on" } },
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          await pollUntil(() => p.projection().loop.state === "drained", "the chained steps drained the loop");
          const text = readFileSync(join(p.aux, "session-files"), "utf8");
          expect(text).toContain('"chain"');
          expect(found(text)).toEqual([]);
          expect(found(readFileSync(join(p.sessionDir("a", 1), "launch.json"), "utf8"))).toEqual([]);
          await pollUntil(() => p.sessionGroups().every((g) => !p.alive(g)), "the wrappers ended");
        },
      ),
    T,
  );
});

describe("the agent's working directory", () => {
  test(
    "an agent that trusts $PWD (as opencode does) works in its worktree, never in the checkout `loop run` was started from: PWD is its working directory, OLDPWD is gone",
    () =>
      scenario(
        (p) =>
          demoDefinition([{ id: "a", prompt: "Write OUT.md where $PWD says.", verify: "test -s OUT.md" }], {
            defaults: { runner: "pwd" },
            // No shell: a shell would put PWD right itself.
            runners: {
              pwd: {
                command: [
                  BUN,
                  "-e",
                  "require('fs').writeFileSync(require('path').join(process.env.PWD, 'OUT.md'), JSON.stringify({ pwd: process.env.PWD, oldpwd: process.env.OLDPWD ?? null }))",
                ],
              },
            },
          }),
        {},
        async (p) => {
          // `loop run` as the operator starts it: from the main checkout, their shell's PWD and OLDPWD.
          Object.assign(p.env, { PWD: p.root, OLDPWD: p.base });
          await p.runToDrain();
          expect(p.projection().items.a!.status).toBe("passed");
          expect(git(p.root, "status", "--porcelain")).toBe("");
          expect(existsSync(join(p.root, "OUT.md"))).toBe(false);
          const wt = join(p.worktrees, "a");
          expect(JSON.parse(git(p.root, "show", `loop/t/item/a:OUT.md`))).toEqual({ pwd: wt, oldpwd: null });
        },
      ),
    T,
  );
});
