// The agent cannot rewrite its own proof (docs/threat-model.md#what-loop-checks), played by shell-script agents
// through the real entry point (`bun cmd/loop.ts run`), real git, real processes:
//   1. a verify result written by anyone but the recorded verify's wrapper is never accepted;
//   2. the session's processes are ended before verify starts, and exactly the verified commit lands;
//   3. a swapped worktree never gets commits onto the operator's branch (worktree_replaced);
//   4. hooks, fsmonitor and filter/merge drivers the agent plants never run inside loop's git, and
//      the change is reported;
//   5. loop's files under the state root are never opened through a link, and a FIFO in place of
//      RUNLOG.md hangs neither `loop run` nor `loop ctl`.
import { describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, git, gitOk, type Project, scenario } from "../helpers/project.ts";

const T = 120_000;
const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** A definition whose one item "x" is run by the shell script `script` (cwd: the worktree). */
function scripted(p: Project, script: string, o: { verify?: string; landing?: "none" | "merge"; maxAttempts?: number } = {}) {
  return demoDefinition([{ id: "x", prompt: "x", verify: o.verify ?? "test -f ok.txt" }], {
    defaults: { runner: "agent", landing: o.landing ?? "none", maxAttempts: o.maxAttempts ?? 1 },
    runners: { agent: { command: ["sh", "-c", script] } },
  });
}

describe("1. a forged verify result is never accepted", () => {
  test.concurrent(
    "an agent that writes verify-exit.json {code: 0} before it exits: the real verify's exit 1 is what counts",
    () =>
      scenario(
        (p) =>
          scripted(p, `echo ok > ok.txt; d=$(dirname "$LOOP_ASK_FILE"); echo '{"code":0,"signal":null,"error":null}' > "$d/verify-exit.json"; echo forged`, {
            verify: "sleep 4; exit 1",
          }),
        {},
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          const it = p.projection().items.x!;
          expect(it.status).toBe("failed");
          expect(p.eventsOf("verify_finished", "x").map((e) => [e.payload.passed, e.payload.reason])).toEqual([[false, "exit 1"]]);
        },
      ),
    T,
  );

  test.concurrent(
    "code the verify runs that writes a passing verify-exit.json and then hangs: verify_result_forged, never a pass",
    () =>
      scenario(
        (p) =>
          scripted(p, "echo ok > ok.txt", {
            verify: `d=$(dirname "$LOOP_WORKDIR"); echo '{"code":0,"signal":null,"error":null,"proof":"guessed"}' > ${shq(p.stateRoot)}/sessions/x/1/verify-exit.json; sleep 30; exit 1`,
          }),
        {},
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          expect(p.projection().items.x!.status).toBe("failed");
          const [v] = p.eventsOf("verify_finished", "x");
          expect(v!.payload).toMatchObject({ passed: false, code: "verify_result_forged" });
          expect(v!.payload.reason).toContain("verify-exit.json was not written by the recorded verify");
          // The log recorded the hashes of the secrets that prove an exit status, never the secrets.
          const started = p.eventsOf("verify_started", "x")[0]!.payload;
          expect(started.proof).toEqual({ pass: expect.stringMatching(/^[0-9a-f]{64}$/), fail: expect.stringMatching(/^[0-9a-f]{64}$/) });
        },
      ),
    T,
  );

  test.concurrent(
    "an honest verify still passes, proven by its wrapper's secret",
    () =>
      scenario(
        (p) => scripted(p, "echo ok > ok.txt"),
        {},
        async (p) => {
          await p.runToDrain();
          expect(p.projection().items.x!.status).toBe("passed");
          const exit = JSON.parse(readFileSync(join(p.sessionDir("x", 1), "verify-exit.json"), "utf8"));
          const proof = p.eventsOf("verify_started", "x")[0]!.payload.proof as { pass: string };
          expect(new Bun.CryptoHasher("sha256").update(exit.proof).digest("hex")).toBe(proof.pass);
        },
      ),
    T,
  );
});

describe("2. the verified commit is what lands", () => {
  // A child the agent leaves behind (setsid: out of its group, carrying its mark) waits for the
  // verify to start, then removes what the verify checks and commits EVIL.sh.
  const saboteur = (p: Project) =>
    `echo ok > ok.txt; git add -A; git commit -qm ok; ` +
    `setsid sh -c 'd=$(dirname "$LOOP_ASK_FILE"); while [ ! -e "$d/verify-started.json" ]; do sleep 0.05; done; echo ran > ${shq(join(p.aux, "saboteur-ran"))}; rm -f ok.txt; echo evil > EVIL.sh; git add -A; git commit -qm evil' >/dev/null 2>&1 < /dev/null & ` +
    `echo left a child`;

  test.concurrent(
    "landing merge: a child the agent left running is ended before verify starts; the target gets exactly the verified commit, no EVIL.sh",
    () =>
      scenario(
        (p) => scripted(p, saboteur(p), { verify: "test -f ok.txt && sleep 1", landing: "merge" }),
        {},
        async (p) => {
          await p.runToDrain();
          expect(p.projection().items.x!.status).toBe("passed");
          expect(existsSync(join(p.aux, "saboteur-ran"))).toBe(false);
          const reserved = p.eventsOf("verify_reserved", "x")[0]!.payload as { head: string };
          expect(reserved.head).toMatch(/^[0-9a-f]{40}$/);
          expect(git(p.root, "rev-parse", "loop/t/item/x")).toBe(reserved.head);
          expect(git(p.root, "show", `${p.projection().items.x!.landing!.commit}^2`, "--format=%H", "-s")).toBe(reserved.head);
          expect(git(p.root, "ls-tree", "--name-only", "loop/t/landed")).not.toContain("EVIL.sh");
        },
      ),
    T,
  );

  test.concurrent(
    "a commit the verify makes stays in its own git folder: the item branch holds what was verified, and that is what merges",
    () =>
      scenario(
        (p) =>
          scripted(p, "echo ok > ok.txt", {
            verify: "test -f ok.txt && echo late > LATE.txt && git add LATE.txt && git -c user.name=v -c user.email=v@v commit -qm late",
            landing: "merge",
          }),
        {},
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          const it = p.projection().items.x!;
          expect(it.status).toBe("passed");
          const head = p.eventsOf("verify_reserved", "x")[0]!.payload.head!;
          expect(git(p.root, "rev-parse", "loop/t/item/x")).toBe(head);
          expect(git(p.root, "show", `${it.landing!.commit}^2`, "--format=%H", "-s")).toBe(head);
          expect(git(p.root, "ls-tree", "--name-only", "loop/t/landed")).not.toContain("LATE.txt");
        },
      ),
    T,
  );

  test.concurrent(
    "a verify that moves the item branch in the repository itself does not pass (branch_moved_by_verify); nothing merges",
    () =>
      scenario(
        (p) =>
          scripted(p, "echo ok > ok.txt", {
            verify: `test -f ok.txt && git --git-dir=${shq(join(p.root, ".git"))} update-ref refs/heads/loop/t/item/x $(git --git-dir=${shq(join(p.root, ".git"))} rev-parse main)`,
            landing: "merge",
          }),
        {},
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          const it = p.projection().items.x!;
          expect(it.status).toBe("failed");
          expect(p.eventsOf("verify_finished", "x").map((e) => e.payload.code)).toEqual(["branch_moved_by_verify"]);
          expect(gitOk(p.root, "rev-parse", "--verify", "-q", "loop/t/landed")).toBe(false);
        },
      ),
    T,
  );

  test.concurrent(
    "landing none: what appears in the checkout after the verify is never committed on the branch; the checkout goes",
    () =>
      scenario(
        (p) => scripted(p, "echo ok > ok.txt", { verify: "test -f ok.txt && echo after > AFTER.txt" }),
        {},
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          expect(p.projection().items.x!.status).toBe("passed");
          const head = p.eventsOf("verify_reserved", "x")[0]!.payload.head!;
          expect(git(p.root, "rev-parse", "loop/t/item/x")).toBe(head);
          expect(git(p.root, "ls-tree", "--name-only", "loop/t/item/x")).not.toContain("AFTER.txt");
          expect(p.runs.flatMap((r) => r.errors)).toEqual([]);
          expect(existsSync(p.projection().items.x!.workspace!.worktree)).toBe(false);
        },
      ),
    T,
  );
});

describe("3. a swapped worktree never gets commits onto the operator's branch", () => {
  const swaps = [
    {
      name: "the worktree replaced by a link to the main checkout",
      script: (root: string) => `echo agent > AGENT.txt; wt=$PWD; cd ..; mv "$wt" "$wt.x"; ln -s ${shq(root)} "$wt"; echo swapped`,
      refused: true,
    },
    // The attempt's git folder is named outright by the seal: a .git file naming another is not followed.
    {
      name: "its .git file rewritten to the main git dir",
      script: (root: string) => `echo agent > AGENT.txt; echo "gitdir: ${root}/.git" > .git; echo rewritten`,
      refused: false,
    },
  ];
  for (const s of swaps)
    test.concurrent(
      `${s.name}: ${s.refused ? "the attempt fails with worktree_replaced" : "the seal follows nothing of it, the work lands on the item branch"}; main, the operator's edits and untracked notes are untouched`,
      () =>
        scenario(
          (p) => scripted(p, s.script(p.root), { verify: "true" }),
          {},
          async (p) => {
            writeFileSync(join(p.root, "README.md"), "# operator's uncommitted edit\n");
            writeFileSync(join(p.root, "notes.txt"), "operator's notes\n");
            const head = git(p.root, "rev-parse", "main");
            await p.runToDrain({ codes: [0, 1] });
            const [v] = p.eventsOf("verify_finished", "x");
            if (s.refused) {
              expect(p.projection().items.x!.status).toBe("failed");
              expect(v!.payload.code).toBe("worktree_replaced");
              expect(v!.payload.reason).toMatch(/\/x is not the checkout loop made \(it is a link to \//);
            } else {
              expect(p.projection().items.x!.status).toBe("passed");
              expect(git(p.root, "show", "loop/t/item/x:AGENT.txt")).toBe("agent");
              expect(git(p.root, "ls-tree", "--name-only", "loop/t/item/x")).not.toContain("notes.txt");
            }
            expect(git(p.root, "rev-parse", "main")).toBe(head);
            expect(git(p.root, "diff", "--name-only")).toBe("README.md");
            expect(git(p.root, "diff", "--cached", "--name-only")).toBe("");
            expect(git(p.root, "ls-files", "--others", "--exclude-standard")).toBe("notes.txt");
            expect(readFileSync(join(p.root, "README.md"), "utf8")).toBe("# operator's uncommitted edit\n");
          },
        ),
      T,
    );
});

describe("4. the agent's hooks and git config never run inside loop's git", () => {
  test.concurrent(
    "hooks in the common git dir, core.fsmonitor, a filter and a merge driver: none runs in loop's add, commit, worktree or merge; the change is reported, and so is a network key (http.proxy, http.<url>.sslVerify, url.<x>.insteadOf)",
    () =>
      scenario(
        (p) => {
          // Each mark says whose side it ran on: the seal runs on the agent's (its session's mark set, no key of loop's).
          const mark = (what: string) => `#!/bin/sh\necho "${what} \${LOOP_SESSION_MARK:+agent-side}" >> ${shq(join(p.aux, "ran"))}\ncat\n`;
          writeFileSync(join(p.aux, "hook.sh"), mark("hook"));
          writeFileSync(join(p.aux, "fsmonitor.sh"), mark("fsmonitor"));
          writeFileSync(join(p.aux, "filter.sh"), mark("filter"));
          writeFileSync(join(p.aux, "merge.sh"), `#!/bin/sh\necho merge >> ${shq(join(p.aux, "ran"))}\nexit 0\n`);
          const hooks = [
            "pre-commit",
            "prepare-commit-msg",
            "commit-msg",
            "post-commit",
            "post-checkout",
            "post-merge",
            "reference-transaction",
            "pre-auto-gc",
          ];
          // The repository's own git folder (the attempt's git folder names its store as an alternate):
          // without the sandbox the agent can write there, and loop's git must run none of it.
          const script =
            `common=$(dirname "$(cat "$(git rev-parse --git-dir)/objects/info/alternates")"); mkdir -p "$common/hooks"; ` +
            hooks.map((h) => `cp ${shq(join(p.aux, "hook.sh"))} "$common/hooks/${h}"; chmod +x "$common/hooks/${h}"; `).join("") +
            `chmod +x ${shq(p.aux)}/*.sh; ` +
            `cfg() { git config --file "$common/config" "$@"; }; ` +
            `cfg core.fsmonitor ${shq(join(p.aux, "fsmonitor.sh"))}; ` +
            `cfg filter.evil.clean ${shq(join(p.aux, "filter.sh"))}; cfg filter.evil.smudge ${shq(join(p.aux, "filter.sh"))}; ` +
            `cfg merge.evil.driver ${shq(join(p.aux, "merge.sh"))}; ` +
            // Network keys: loop's own git reads none; your git would send its traffic there.
            `cfg http.proxy http://127.0.0.1:9; cfg http.https://github.com/.sslVerify false; cfg url.http://127.0.0.1:9/.insteadOf https://github.com/; ` +
            `printf '* filter=evil merge=evil\\n' > .gitattributes; echo ok > ok.txt; echo left uncommitted`;
          return scripted(p, script, { landing: "merge" });
        },
        {},
        async (p) => {
          await p.runToDrain({ codes: [0, 1] });
          expect(p.projection().items.x!.status).toBe("passed");
          // The leftovers were sealed and merged, and nothing the agent planted ran in loop's own git:
          // its filter ran only where the agent's own git would run it, in the seal on its side.
          expect(git(p.root, "ls-tree", "--name-only", "loop/t/item/x")).toContain("ok.txt");
          const ran = existsSync(join(p.aux, "ran")) ? readFileSync(join(p.aux, "ran"), "utf8").trim().split("\n") : [];
          expect(ran.filter((l) => l !== "filter agent-side")).toEqual([]);
          const warnings = p.runs.flatMap((r) => r.warnings).join("\n");
          expect(warnings).toMatch(/x: attempt 1: the repository's hooks, executable or network git config, or ssh's config changed during the session/);
          expect(warnings).toContain("hooks/post-commit");
          expect(warnings).toContain("core.fsmonitor=");
          expect(warnings).toContain("filter.evil.clean=");
          expect(warnings).toContain("http.proxy=http://127.0.0.1:9");
          expect(warnings).toContain("http.https://github.com/.sslverify=false");
          expect(warnings).toContain("url.http://127.0.0.1:9/.insteadof=https://github.com/");
        },
      ),
    T,
  );
});

describe("5. loop's files are never opened through a link, and a FIFO never hangs a step", () => {
  test.concurrent(
    "an agent that plants verify.log as a link to a secret file: the verify's output is not appended to it, and its content is recorded nowhere",
    () =>
      scenario(
        (p) => {
          writeFileSync(join(p.aux, "secret"), "TOP-SECRET-CONTENT\n");
          return scripted(p, `echo ok > ok.txt; ln -s ${shq(join(p.aux, "secret"))} "$(dirname "$LOOP_ASK_FILE")/verify.log"; echo planted`, {
            verify: "echo verify-output; test -f ok.txt",
          });
        },
        {},
        async (p) => {
          await p.runToDrain();
          expect(p.projection().items.x!.status).toBe("passed");
          expect(readFileSync(join(p.aux, "secret"), "utf8")).toBe("TOP-SECRET-CONTENT\n");
          const log = join(p.sessionDir("x", 1), "verify.log");
          expect(lstatSync(log).isSymbolicLink()).toBe(false);
          expect(readFileSync(log, "utf8")).toContain("verify-output");
          const recorded = JSON.stringify(p.events()) + readFileSync(join(p.stateRoot, "state.json"), "utf8");
          expect(recorded).not.toContain("TOP-SECRET");
        },
      ),
    T,
  );

  test.concurrent(
    "an agent that plants the next attempt's session folder (its ask.txt): the folder is made afresh, the planted one moved aside; no question is asked",
    () =>
      scenario(
        (p) =>
          scripted(
            p,
            `if [ "$LOOP_ATTEMPT" = 1 ]; then next="$(dirname "$LOOP_ASK_FILE")/../2"; mkdir -p "$next"; echo 'Planted question?' > "$next/ask.txt"; else echo ok > ok.txt; fi; echo done`,
            { maxAttempts: 2 },
          ),
        {},
        async (p) => {
          await p.runUntil((r) => r.action === "drained" || r.action === "paused", { codes: [0, 1], what: "drained or paused" });
          expect(p.eventsOf("needs_input", "x")).toEqual([]);
          expect(p.projection().items.x!.status).toBe("passed");
          expect(existsSync(join(p.sessionDir("x", 2), "ask.txt"))).toBe(false);
        },
      ),
    T,
  );

  test.concurrent(
    "a FIFO in place of RUNLOG.md (and state.json a link outside): `loop run` and `loop ctl` finish, replace them, and write nothing through them",
    () =>
      scenario(
        (p) => {
          writeFileSync(join(p.aux, "outside"), "outside\n");
          return scripted(
            p,
            `echo ok > ok.txt; root=$(cd ../.. && pwd); rm -f "$root/RUNLOG.md" "$root/state.json"; mkfifo "$root/RUNLOG.md"; ln -s ${shq(join(p.aux, "outside"))} "$root/state.json"; echo planted`,
          );
        },
        {},
        async (p) => {
          // Bounded by the harness: a hang fails the test on its timeout, never passes it.
          await p.runToDrain();
          expect(p.projection().items.x!.status).toBe("passed");
          const ctl = await p.ctl(["pause"]);
          expect(ctl.code).toBe(0);
          expect(lstatSync(join(p.stateRoot, "RUNLOG.md")).isFile()).toBe(true);
          expect(readFileSync(join(p.stateRoot, "RUNLOG.md"), "utf8")).toContain("### x · attempt 1 · passed");
          expect(lstatSync(join(p.stateRoot, "state.json")).isFile()).toBe(true);
          expect(readFileSync(join(p.aux, "outside"), "utf8")).toBe("outside\n");
          await p.ctl(["resume"]);
          rmSync(join(p.aux, "outside"));
        },
      ),
    T,
  );
});
