// The sandbox through the real entry point, with the real bwrap (docs/runners.md#the-sandbox): an
// agent that tries to write outside its worktree, read loop.db, write another item's worktree,
// plant a git hook or config, move a branch it does not own, or forge its session's files fails to;
// its own work (edit, commit on its branch) succeeds; its verify runs in the same sandbox; a process
// it leaves behind dies with the sandbox; bwrap missing or refused is an environment fault that
// spends nothing. Every check looks at the real file system from outside. No assertion measures time.
import { worktreesOf } from "../helpers/env.ts";
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, type Project, scenario } from "../helpers/project.ts";

const T = 120_000;
const BWRAP = Bun.which("bwrap");
if (!BWRAP) throw new Error("these tests need bubblewrap (apt-get install bubblewrap; .ci/run installs it)");

const output = (p: Project, item: string, n = 1) => readFileSync(join(p.sessionDir(item, n), "output.log"), "utf8");
const sh = (script: string) => ({ command: ["sh", "-c", script] });

/** A PATH of links to sh and git only (no bwrap), in aux/bin-<name>, plus `extra` programs. */
function pathWithout(p: Project, name: string, extra: Record<string, string> = {}): string {
  const dir = join(p.aux, `bin-${name}`);
  mkdirSync(dir, { recursive: true });
  for (const prog of ["sh", "git", "env", "cat", "test", "true"]) {
    const found = Bun.which(prog);
    if (found && !existsSync(join(dir, prog))) symlinkSync(found, join(dir, prog));
  }
  for (const [prog, text] of Object.entries(extra)) {
    writeFileSync(join(dir, prog), text);
    chmodSync(join(dir, prog), 0o755);
  }
  return dir;
}

/** Live `sleep <token>` processes (host pids). */
function processesWith(token: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (/\) [ZX] /.test(stat)) continue;
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (argv[0]!.endsWith("sleep") && argv[1] === token) out.push(Number(name));
    } catch {}
  }
  return out;
}

/** The real home (outside /tmp, so the sandbox shows it read-only); a probe left there by a failure is removed. */
const HOME = process.env.HOME ?? "/root";
const homeProbe = `loop-sandbox-probe-${process.pid}.txt`;
afterAll(() => rmSync(join(HOME, homeProbe), { force: true }));

describe("the sandbox", () => {
  test.concurrent(
    "an agent in the sandbox commits on its branch but cannot write outside its worktree, read loop.db, see another worktree, plant a hook or config, move main, or forge its session's files",
    () =>
      scenario(
        (p) => {
          const loopDb = join(p.stateRoot, "loop.db");
          const other = join(worktreesOf(p.stateRoot), "first");
          const dir = join(p.stateRoot, "sessions", "probe", "1");
          const try_ = (what: string, cmd: string) => `if ${cmd} 2>/dev/null; then echo "ESCAPED: ${what}"; else echo "refused: ${what}"; fi`;
          const script = [
            "echo work > work.txt && git add work.txt && git commit -qm 'agent work' && echo committed",
            // Its git folder is its own (docs/threat-model.md#the-airlock); the repository's it finds through its alternate.
            'repo=$(dirname "$(head -1 "$(git rev-parse --git-dir)/objects/info/alternates")") && echo "repository: $repo"',
            try_("write aux", `echo x > ${join(p.aux, "escaped.txt")}`),
            try_("write the main checkout", `echo x > ${join(p.root, "escaped.txt")}`),
            try_("write HOME", `echo x > "$HOME/${homeProbe}"`),
            try_("read loop.db", `cat ${loopDb} > /dev/null`),
            try_("see the other worktree", `test -e ${join(other, "first.txt")}`),
            try_("write the other worktree", `echo x > ${join(other, "evil.txt")}`),
            try_("plant a hook", `mkdir -p "$repo/hooks" && echo 'touch ${join(p.aux, "hook-ran")}' > "$repo/hooks/post-commit"`),
            try_("set core.hooksPath", 'git --git-dir="$repo" config core.hooksPath /tmp'),
            try_("set core.fsmonitor in the repository's config", 'git --git-dir="$repo" config core.fsmonitor true'),
            // Written as git would, without git's check that the repository holds the commit.
            try_("move main", 'git rev-parse HEAD > "$repo/refs/heads/main"'),
            try_("forge exit.json", `echo '{"code":0}' > ${join(dir, "exit.json")}`),
            try_("forge verify-exit.json", `echo '{"code":0}' > ${join(dir, "verify-exit.json")}`),
            try_("point the repository's alternates elsewhere", 'echo /tmp > "$repo/objects/info/alternates"'),
            "exit 0",
          ].join("\n");
          return demoDefinition(
            [
              { id: "first", prompt: "first\n@demo write first.txt one\n@demo commit first" },
              { id: "probe", prompt: "probe", runner: "probe", dependsOn: ["first"], verify: "test -f work.txt" },
            ],
            { defaults: { sandbox: "bwrap", maxAttempts: 1 }, runners: { probe: sh(script) }, workspace: { keepCheckoutOnClose: true } },
          );
        },
        {},
        async (p) => {
          const mainBefore = git(p.root, "rev-parse", "main");
          const configBefore = readFileSync(join(p.root, ".git", "config"), "utf8");
          await p.runToDrain();
          const pr = p.projection();
          // Its normal work: the demo agent (first) and the shell agent (probe) both committed and passed.
          expect([pr.items.first!.status, pr.items.probe!.status]).toEqual(["passed", "passed"]);
          expect(git(p.root, "log", "-1", "--format=%s", "loop/t/item/probe")).toBe("agent work");
          const out = output(p, "probe");
          expect(out).toContain("committed");
          // Its attacks on the repository's git folder aimed at the real one.
          expect(out).toContain(`repository: ${join(p.root, ".git")}\n`);
          expect(out).not.toContain("ESCAPED");
          expect(out.match(/^refused: .*$/gm)).toHaveLength(13);
          // From outside: nothing was written, moved or planted.
          expect(existsSync(join(p.aux, "escaped.txt"))).toBe(false);
          expect(existsSync(join(p.root, "escaped.txt"))).toBe(false);
          expect(existsSync(join(HOME, homeProbe))).toBe(false);
          expect(existsSync(join(worktreesOf(p.stateRoot), "first", "evil.txt"))).toBe(false);
          expect(existsSync(join(p.root, ".git", "hooks", "post-commit"))).toBe(false);
          expect(existsSync(join(p.aux, "hook-ran"))).toBe(false);
          expect(readFileSync(join(p.root, ".git", "config"), "utf8")).toBe(configBefore);
          expect(existsSync(join(p.root, ".git", "objects", "info", "alternates"))).toBe(false);
          expect(git(p.root, "rev-parse", "main")).toBe(mainBefore);
          expect(JSON.parse(readFileSync(join(p.sessionDir("probe", 1), "exit.json"), "utf8")).at).toBeString();
          // The launch record shows the command as it ran: under bwrap, with no capabilities.
          const argv: string[] = JSON.parse(readFileSync(join(p.sessionDir("probe", 1), "launch.json"), "utf8")).argv;
          expect(argv[0]).toBe(BWRAP!);
          expect(argv.slice(argv.indexOf("--cap-drop"), argv.indexOf("--cap-drop") + 2)).toEqual(["--cap-drop", "ALL"]);
        },
      ),
    T,
  );

  test.concurrent(
    "the verify runs in the same sandbox: it cannot forge verify-exit.json, and its real exit decides",
    () =>
      scenario(
        (p) => {
          const dir = join(p.stateRoot, "sessions", "fix", "1");
          const verify = `echo '{"code":0,"signal":null,"error":null}' > ${join(dir, "verify-exit.json")} && echo FORGED; echo x > ${join(p.aux, "verify-escaped")}; exit 1`;
          return demoDefinition([{ id: "fix", prompt: "fix\n@demo write x.txt x\n@demo commit x", verify }], {
            defaults: { sandbox: "bwrap", maxAttempts: 1 },
          });
        },
        {},
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          expect(p.projection().items.fix!.status).toBe("failed");
          expect(p.eventsOf("verify_finished", "fix")[0]!.payload).toMatchObject({ passed: false, exitCode: 1, reason: "exit 1" });
          expect(readFileSync(join(p.sessionDir("fix", 1), "verify.log"), "utf8")).not.toContain("FORGED");
          expect(existsSync(join(p.aux, "verify-escaped"))).toBe(false);
          const argv: string[] = JSON.parse(readFileSync(join(p.sessionDir("fix", 1), "verify-launch.json"), "utf8")).argv;
          expect(argv[0]).toBe(BWRAP!);
        },
      ),
    T,
  );

  test.concurrent(
    "a process the agent leaves behind, in a session of its own and with its mark removed, dies with the sandbox when the agent exits",
    () => {
      const token = `4242.${process.pid}${Math.floor(Math.random() * 1e6)}`;
      return scenario(
        () =>
          demoDefinition([{ id: "fix", prompt: "fix", runner: "leaver", verify: "true" }], {
            defaults: { sandbox: "bwrap", maxAttempts: 1 },
            // It lingers until the test has seen the process it left (a file the test drops in its
            // checkout; a minute at most), then exits.
            runners: {
              leaver: sh(
                `env -u LOOP_SESSION_MARK -u LOOP_SESSION_ID setsid sleep ${token} </dev/null >/dev/null 2>&1 & echo x > x.txt; i=0; while [ ! -e seen ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; rm -f seen`,
              ),
            },
          }),
        {},
        async (p) => {
          try {
            expect((await p.run()).action).toBe("launched");
            for (let i = 0; i < 1200 && processesWith(token).length === 0; i++) await Bun.sleep(50);
            expect(processesWith(token).length).toBe(1);
            writeFileSync(join(p.projection().items.fix!.workspace!.worktree, "seen"), "");
            // Gone once the agent is: the sandbox's pid namespace ends with it, before any close path runs.
            for (let i = 0; i < 1200 && !existsSync(join(p.sessionDir("fix", 1), "exit.json")); i++) await Bun.sleep(50);
            for (let i = 0; i < 1200 && processesWith(token).length > 0; i++) await Bun.sleep(50);
            expect(processesWith(token)).toEqual([]);
            await p.runToDrain();
            expect(p.projection().items.fix!.status).toBe("passed");
          } finally {
            for (const pid of processesWith(token)) process.kill(pid, "SIGKILL");
          }
        },
      );
    },
    T,
  );

  test.concurrent(
    "a checkout whose .git a verify pointed at another repository: the next attempt's .git names a fresh git folder of its own, what was planted is gone, the other repository is never mounted or touched",
    () => {
      return scenario(
        (p) => {
          // Another repository on the machine, which no sandbox may make writable.
          const victim = join(p.aux, "victim");
          mkdirSync(victim);
          git(victim, "init", "-q");
          git(victim, "-c", "user.name=v", "-c", "user.email=v@v", "commit", "-q", "--allow-empty", "-m", "victim");
          // Attempt 1's verify (the agent's code, run in the sandbox) leaves a git folder of its own
          // making, convincing to git (HEAD on the item branch, objects and refs through commondir
          // in the victim), and points the checkout's .git at it; then it fails, so there is a retry.
          const plant = [
            "mkdir -p .fakegit",
            `printf '%s\\n' ${join(victim, ".git")} > .fakegit/commondir`,
            "printf 'ref: refs/heads/loop/t/item/fix\\n' > .fakegit/HEAD",
            `printf '%s\\n' "$PWD/.git" > .fakegit/gitdir`,
            `printf 'gitdir: %s\\n' "$PWD/.fakegit" > .git && echo PLANTED`,
          ].join(" && ");
          const verify = `if [ "$LOOP_ATTEMPT" = 1 ]; then ${plant}; exit 1; fi; test -f work.txt`;
          // Attempt 2's agent says which git folder its git uses, and tries what a sandbox built from that .git would allow.
          const agent = `if [ "$LOOP_ATTEMPT" = 2 ]; then echo "git-dir: $(git rev-parse --absolute-git-dir)"; ls -a; if echo x > ${join(victim, ".git", "objects", "pwned")} 2>/dev/null; then echo ESCAPED; else echo refused; fi; fi; echo work > work.txt`;
          return demoDefinition([{ id: "fix", prompt: "fix", runner: "agent", verify, maxAttempts: 2 }], {
            defaults: { sandbox: "bwrap" },
            runners: { agent: sh(agent) },
            workspace: { keepCheckoutOnClose: true },
          });
        },
        {},
        async (p) => {
          const victim = join(p.aux, "victim");
          const before = git(victim, "for-each-ref");
          await p.runToDrain({ codes: [0, 1] });
          expect(readFileSync(join(p.sessionDir("fix", 1), "verify.log"), "utf8")).toContain("PLANTED");
          expect(p.projection().items.fix!.status).toBe("passed");
          // Attempt 2's git used the git folder loop made for it, and the planted one was gone from its checkout.
          expect(output(p, "fix", 2)).toContain(`git-dir: ${join(p.sessionDir("fix", 2), "git")}\n`);
          expect(output(p, "fix", 2)).not.toContain(".fakegit");
          expect(existsSync(join(worktreesOf(p.stateRoot), "fix", ".fakegit"))).toBe(false);
          // And its verify's, the last loop pointed it at.
          expect(readFileSync(join(worktreesOf(p.stateRoot), "fix", ".git"), "utf8").trim()).toBe(`gitdir: ${join(p.sessionDir("fix", 2), "verify-git")}`);
          // The victim was never mounted, written or given loop's folders.
          expect(output(p, "fix", 2)).toContain("refused");
          expect(output(p, "fix", 2)).not.toContain("ESCAPED");
          expect(existsSync(join(victim, ".git", "objects", "pwned"))).toBe(false);
          expect(existsSync(join(victim, ".git", "refs", "heads", "loop"))).toBe(false);
          expect(git(victim, "for-each-ref")).toBe(before);
        },
      );
    },
    T,
  );

  test.concurrent(
    "bwrap missing is an environment fault: nothing reserved, the loop paused with the reason, exit 1; with bwrap back and resumed, the item runs",
    () =>
      scenario(
        () => demoDefinition([{ id: "fix", prompt: "fix\n@demo write x.txt x\n@demo commit x" }], { defaults: { sandbox: "bwrap" } }),
        {},
        async (p) => {
          const r = await p.loop(["run", "--json", "--root", p.root], { PATH: pathWithout(p, "nobwrap") });
          expect(r.code).toBe(1);
          const doc = JSON.parse(r.stdout);
          expect(doc.action).toBe("paused");
          expect(doc.loop.reason).toContain(
            'environment fault launching fix: the item asks for the sandbox ("sandbox": "bwrap"), but bwrap (bubblewrap) was not found on PATH',
          );
          expect(doc.loop.reason).toContain("install bubblewrap");
          expect(p.eventsOf("launch_reserved")).toEqual([]);
          expect(p.eventsOf("environment_fault")[0]!.payload).toMatchObject({ kind: "sandbox_unavailable", attempt: null });
          expect((await p.ctl(["resume"])).code).toBe(0);
          await p.runToDrain();
          const it = p.projection().items.fix!;
          // The verdicts ride along, so a failure says why the verify did not pass.
          expect({ status: it.status, attempts: it.attempts.length, why: it.attempts.map((a) => a.verify?.reason ?? a.end?.reason ?? null) }).toMatchObject({
            status: "passed",
            attempts: 1,
          });
        },
      ),
    T,
  );

  test.concurrent(
    "bwrap refusing to make a sandbox is an environment fault naming what bwrap said",
    () =>
      scenario(
        () => demoDefinition([{ id: "fix", prompt: "fix" }], { defaults: { sandbox: "bwrap" } }),
        {},
        async (p) => {
          const PATH = pathWithout(p, "refusing", { bwrap: "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n" });
          const r = await p.loop(["run", "--json", "--root", p.root], { PATH });
          expect(r.code).toBe(1);
          const reason = JSON.parse(r.stdout).loop.reason as string;
          expect(reason).toContain("refused to make a sandbox: bwrap: No permissions to create new namespace");
          expect(reason).toContain("unprivileged user namespaces");
          expect(p.eventsOf("launch_reserved")).toEqual([]);
          // Only the fault's own step: a later step with bwrap back still needs the operator's resume.
          expect((await p.ctl(["resume"])).code).toBe(0);
          await p.runToDrain();
          expect(p.projection().items.fix!.status).toBe("passed");
        },
      ),
    T,
  );

  test.concurrent(
    "bwrap gone when the verify is due: the loop pauses before reserving it, the attempt untouched; resumed with bwrap, the verify runs",
    () =>
      scenario(
        () => demoDefinition([{ id: "fix", prompt: "fix\n@demo write x.txt x\n@demo commit x", verify: "test -f x.txt" }], { defaults: { sandbox: "bwrap" } }),
        {},
        async (p) => {
          expect((await p.run()).action).toBe("launched");
          for (let i = 0; i < 1200 && !existsSync(join(p.sessionDir("fix", 1), "exit.json")); i++) await Bun.sleep(50);
          const r = await p.loop(["run", "--json", "--root", p.root], { PATH: pathWithout(p, "nobwrap") });
          expect(r.code).toBe(1);
          const doc = JSON.parse(r.stdout);
          expect(doc.action).toBe("paused");
          expect(doc.loop.reason).toContain("environment fault verifying fix: the item asks for the sandbox");
          expect(p.eventsOf("verify_reserved")).toEqual([]);
          expect(p.projection().items.fix!).toMatchObject({ status: "ended", failures: 0 });
          expect((await p.ctl(["resume"])).code).toBe(0);
          await p.runToDrain();
          const it = p.projection().items.fix!;
          // The verdicts ride along, so a failure says why the verify did not pass.
          expect({ status: it.status, attempts: it.attempts.length, why: it.attempts.map((a) => a.verify?.reason ?? a.end?.reason ?? null) }).toMatchObject({
            status: "passed",
            attempts: 1,
          });
        },
      ),
    T,
  );
});
