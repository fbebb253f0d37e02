// Loop's keys stay loop's (docs/threat-model.md#where-each-secret-lives), through the real entry point: an agent, its verify
// command and a planner that dump their environment see none of loop's secrets (GITHUB_TOKEN,
// GH_TOKEN, LOOP_ALLOW_AUTO_MERGE, the forge's tokenEnv, loop.json's environment.secrets), under each
// policy: "inherit" passes everything else, "clean" only PATH, HOME, locale, TMPDIR and what is
// declared. In a process group, in tmux (the wrapper applies the policy again to the tmux server's
// environment), and with a forge, where the token is also in no file loop or git wrote.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, Project, scenario } from "../helpers/project.ts";
import { type FakeGitHub, startFakeGitHub } from "../helpers/fake-github.ts";

const T = 120_000;
const SECRETS = { GITHUB_TOKEN: "ghp_secretGithubToken0001", GH_TOKEN: "gho_secretGhToken0002", LOOP_ALLOW_AUTO_MERGE: "1", DEPLOY_KEY: "deploy-secret-0003" };
const OTHER = { KEEP_ME: "kept-4", RUNNER_KEY: "runner-5", PASSED_VAR: "passed-6" };

function envFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

/** None of `secrets`' names or values anywhere in what the process saw. */
function expectNoSecrets(path: string, secrets: Record<string, string>) {
  const text = readFileSync(path, "utf8");
  const env = envFile(path);
  expect({ path, names: Object.keys(secrets).filter((k) => k in env), values: Object.values(secrets).filter((v) => v !== "1" && text.includes(v)) }).toEqual({
    path,
    names: [],
    values: [],
  });
}

function dumpDefinition(p: Project, policy: "inherit" | "clean", o: { tmux?: boolean } = {}) {
  return demoDefinition([{ id: "dump", prompt: "dump", verify: `env > ${join(p.aux, "verify-env")}; test -s ${join(p.aux, "agent-env")}` }], {
    defaults: { runner: "dumper" },
    runners: { dumper: { command: ["sh", "-c", `env > ${join(p.aux, "agent-env")}; echo dumped`], environment: ["RUNNER_KEY"] } },
    environment: { policy, pass: ["PASSED_VAR"], secrets: ["DEPLOY_KEY"] },
    ...(o.tmux ? { sessions: { tmux: true } } : {}),
  });
}

describe("an agent and its verify command never see loop's secrets", () => {
  for (const policy of ["inherit", "clean"] as const)
    test.concurrent(
      `policy ${policy}: the agent's and the verify's environment hold no secret; ${policy === "inherit" ? "everything else passes" : "only PATH, HOME, locale, TMPDIR and what is declared"}`,
      () =>
        scenario(
          (p) => dumpDefinition(p, policy),
          { env: { ...SECRETS, ...OTHER } },
          async (p) => {
            await p.runToDrain();
            expect(p.projection().items.dump!.status).toBe("passed");
            const agent = join(p.aux, "agent-env");
            const verify = join(p.aux, "verify-env");
            expectNoSecrets(agent, SECRETS);
            expectNoSecrets(verify, SECRETS);
            const a = envFile(agent);
            const v = envFile(verify);
            expect(a.PATH).toBeDefined();
            expect(a.HOME).toBeDefined();
            expect(a.LOOP_ITEM).toBe("dump");
            expect(v.LOOP_ITEM).toBe("dump");
            expect(a.PASSED_VAR).toBe(OTHER.PASSED_VAR);
            expect(v.PASSED_VAR).toBe(OTHER.PASSED_VAR);
            expect(a.RUNNER_KEY).toBe(OTHER.RUNNER_KEY);
            if (policy === "inherit") {
              expect(a.KEEP_ME).toBe(OTHER.KEEP_ME);
              expect(v.KEEP_ME).toBe(OTHER.KEEP_ME);
              expect(v.RUNNER_KEY).toBe(OTHER.RUNNER_KEY);
            } else {
              expect(a.KEEP_ME).toBeUndefined();
              expect(v.KEEP_ME).toBeUndefined();
              // A runner's variables are the agent's, not the verify's.
              expect(v.RUNNER_KEY).toBeUndefined();
              // Nothing of loop's own steering either (LOOP_KILL_GRACE_MS is in loop run's environment).
              expect(a.LOOP_KILL_GRACE_MS).toBeUndefined();
            }
          },
        ),
      T,
    );

  const haveTmux = Bun.which("tmux") !== null;
  test.skipIf(!haveTmux)(
    "in tmux too: the wrapper applies the policy to the tmux server's environment, and a server loop starts holds no secret",
    () =>
      scenario(
        (p) => dumpDefinition(p, "inherit", { tmux: true }),
        {},
        async (p) => {
          const socket = `loop-secrets-${process.pid}-${Date.now()}`;
          p.env.LOOP_TMUX_SOCKET = socket;
          Object.assign(p.env, SECRETS, OTHER);
          try {
            await p.runToDrain();
            expect(p.projection().items.dump!.status).toBe("passed");
            expectNoSecrets(join(p.aux, "agent-env"), SECRETS);
            expect(envFile(join(p.aux, "agent-env")).KEEP_ME).toBe(OTHER.KEEP_ME);
            // The server loop started has none in its global environment either.
            const shown = Bun.spawnSync(["tmux", "-L", socket, "show-environment", "-g"], { stdout: "pipe", stderr: "pipe" });
            if (shown.exitCode === 0) expect(Object.values(SECRETS).filter((v) => v !== "1" && shown.stdout.toString().includes(v))).toEqual([]);
          } finally {
            Bun.spawnSync(["tmux", "-L", socket, "kill-server"], { stdout: "ignore", stderr: "ignore" });
          }
        },
      ),
    T,
  );
});

describe("a planner never sees loop's secrets", () => {
  for (const policy of ["inherit", "clean"] as const)
    test.concurrent(
      `policy ${policy}`,
      async () => {
        const p = new Project({ name: "t", items: [] }, { env: { ...SECRETS, ...OTHER } });
        try {
          writeFileSync(join(p.aux, "planner.sh"), `env > "${p.aux}/planner-env"\necho '{"outcome":"nothing_new","reason":"nothing to add","items":[]}'\n`);
          p.writeDefinition({
            name: "t",
            defaults: { runner: "demo", verify: "true" },
            runners: { scripted: { command: ["sh", join(p.aux, "planner.sh"), "{handoff}"], environment: ["RUNNER_KEY"] } },
            environment: { policy, secrets: ["DEPLOY_KEY"] },
            items: [],
          });
          const r = await p.loop(["plan", "Write the docs.", "--runner", "scripted", "--dry-run", "--json"]);
          expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
          const file = join(p.aux, "planner-env");
          expectNoSecrets(file, SECRETS);
          expect(envFile(file).RUNNER_KEY).toBe(OTHER.RUNNER_KEY);
          expect(envFile(file).KEEP_ME).toBe(policy === "inherit" ? OTHER.KEEP_ME : undefined);
        } finally {
          p.dispose();
        }
      },
      T,
    );
});

describe("with a forge", () => {
  const TOKEN = "ghs_forgeTokenThatNoAgentSees77";
  const open: { p: Project; gh: FakeGitHub }[] = [];
  afterEach(() => {
    for (const { p, gh } of open.splice(0)) {
      gh.stop();
      p.dispose();
    }
  });

  test(
    "the forge's tokenEnv and LOOP_ALLOW_AUTO_MERGE reach neither the agent nor the verify; the PR merges; no file of the state root or the repository's git dir holds the token",
    async () => {
      const p = new Project(demoDefinition([{ id: "x", prompt: "p" }]), { env: { FORGE_PAT: TOKEN, LOOP_ALLOW_AUTO_MERGE: "1", GH_TOKEN: SECRETS.GH_TOKEN } });
      const gh = startFakeGitHub({ dir: p.aux });
      open.push({ p, gh });
      gh.addIssue({ number: 1, title: "Add a", body: "a please" });
      p.writeDefinition(
        demoDefinition(
          [
            {
              ref: `github:${gh.owner}/${gh.repo}#1`,
              prompt: "Add a.txt\n@demo write a.txt hello\n@demo commit add a",
              verify: `env > ${join(p.aux, "verify-env")}; test -f a.txt`,
            },
          ],
          {
            defaults: { landing: "merge", runner: "dumper" },
            runners: { dumper: { command: ["sh", "-c", `env > ${join(p.aux, "agent-env")}; exec "$0" "$@"`, ...demoAgent()] } },
            forge: {
              provider: "github",
              repo: `${gh.owner}/${gh.repo}`,
              apiUrl: gh.apiUrl,
              gitUrl: gh.bare,
              tokenEnv: "FORGE_PAT",
              authorizedUsers: ["alice"],
            },
          },
        ),
      );
      git(p.root, "add", "-A");
      git(p.root, "commit", "-qm", "forge loop");
      git(p.root, "remote", "add", "origin", gh.bare);
      git(p.root, "push", "-q", "origin", "main");
      await p.runToDrain();
      expect(p.projection().items["api-1"]!.status).toBe("passed");
      expect(gh.merges).toHaveLength(1);
      for (const f of ["agent-env", "verify-env"]) {
        const env = envFile(join(p.aux, f));
        expect({ f, leaked: ["FORGE_PAT", "LOOP_ALLOW_AUTO_MERGE", "GH_TOKEN"].filter((k) => k in env) }).toEqual({ f, leaked: [] });
        expect(readFileSync(join(p.aux, f), "utf8")).not.toContain(TOKEN);
      }
      const walk = (dir: string): string[] =>
        existsSync(dir)
          ? readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []))
          : [];
      const leaks = [...walk(p.stateRoot), ...walk(join(p.root, ".git"))].filter((f) => readFileSync(f).includes(TOKEN));
      expect(leaks).toEqual([]);
      await p.finish();
    },
    T,
  );
});

/** The demo agent's argv (what the `demo` runner runs), for a runner that dumps its environment first. */
function demoAgent(): string[] {
  return [process.execPath, join(import.meta.dir, "..", "..", "cmd", "loop.ts"), "__demo-agent"];
}
