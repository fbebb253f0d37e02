// The shipped systemd units as a manager would run them (deploy/systemd/, docs/operations.md#systemd),
// with the stand-in of tests/helpers/systemd-units.ts: each Exec*= line run as systemd runs it (its
// specifiers, escapes and words), with the environment systemd gives it (STATE_DIRECTORY, an
// OnFailure= unit's MONITOR_*), its exit status judged by the unit's SuccessExitStatus=.
//   - A loop waiting for a person is not a failed unit: the step's unit never starts the attention
//     unit for it, and loop.json's notify tells once.
//   - The attention unit reports each new failure of a step once, not once a minute.
//   - Sessions that cannot have a scope that outlives the step (no manager, a user manager without
//     linger) pause the loop before the launch, naming the fix, instead of dying later.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { probeSystemd, scopeLack } from "../../lib/supervisor/scope.ts";
import { scopeFault } from "../../lib/decisions/faults.ts";
import { demoDefinition, Project, REPO, scenario } from "../helpers/project.ts";
import { TempDirs } from "../helpers/fs.ts";
import { testEnv } from "../helpers/env.ts";
import { execArgv, parseUnit } from "../helpers/systemd-units.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());
const T = 120_000;

const unit = (name: string) => parseUnit(readFileSync(join(REPO, "deploy", "systemd", name), "utf8"), name);
const STEP = unit("loop@.service");
const ATTENTION = unit("loop-attention@.service");

/** What the manager makes of an exit status: success per SuccessExitStatus= (and 0), else a failed unit. */
function unitResult(u: ReturnType<typeof unit>, code: number): "success" | "exit-code" {
  const ok = new Set(["0", ...(u.Service!.SuccessExitStatus ?? []).flatMap((v) => v.split(/\s+/))]);
  return ok.has(String(code)) ? "success" : "exit-code";
}

/** Run one Exec*= value of a unit for instance `instance`, as the manager would: returns its exit code. */
function runExec(value: string, o: { spec: Record<string, string>; env: Record<string, string>; cwd: string }): number {
  const { argv } = execArgv(value, o.spec);
  const r = Bun.spawnSync(argv, { cwd: o.cwd, env: testEnv(o.env), stdout: "pipe", stderr: "pipe" });
  return r.exitCode ?? 128;
}

describe("a loop waiting for a person", () => {
  test.concurrent(
    "is not a failed unit: every step of a paused loop exits 1, which the step's unit takes as success, so the attention unit never starts; notify tells once",
    () =>
      scenario(
        (p) =>
          demoDefinition([{ id: "asks", prompt: "@demo ask Which license?" }], {
            notify: { command: ["sh", "-c", `cat >> ${join(p.aux, "notified")}`] },
          }),
        {},
        async (p) => {
          // The unit's own command line (loop run --json), run in the project as each tick runs it.
          const { argv } = execArgv(STEP.Service!.ExecStart![0]!, { i: "api" });
          expect(argv.slice(1)).toEqual(["run", "--json"]);
          const results: string[] = [];
          let paused = 0;
          for (let i = 0; i < 60 && paused < 4; i++) {
            const r = await p.loop(["run", "--json", "--root", p.root]);
            results.push(unitResult(STEP, r.code));
            if (JSON.parse(r.stdout).action === "paused") paused++;
            else await Bun.sleep(100);
          }
          expect(paused).toBe(4);
          expect(results.filter((r) => r !== "success")).toEqual([]);
          // The news went out once, through loop.json's notify.
          const sent = readFileSync(join(p.aux, "notified"), "utf8").trim().split("\n").map((l) => JSON.parse(l).kind);
          expect(sent).toEqual(["question"]);
          // What still fails the unit: an invalid loop.json (exit 2).
          writeFileSync(join(p.root, "loop.json"), "{ not json");
          expect(unitResult(STEP, (await p.loop(["run", "--json", "--root", p.root])).code)).toBe("exit-code");
        },
      ),
    T,
  );
});

describe("the attention unit", () => {
  test("reports each new failure of the step once; a good step in between makes the same failure news again", () => {
    const dir = temp.make("loop-attention-");
    const stateRoot = join(dir, "state");
    const spec = { i: "api", S: stateRoot };
    // StateDirectory=loop-attention/%i: created by the manager before the unit runs.
    const stateDir = join(stateRoot, ...execArgv(ATTENTION.Service!.StateDirectory![0]!, spec).argv[0]!.split("/"));
    mkdirSync(stateDir, { recursive: true });
    const condition = ATTENTION.Service!.ExecCondition![0]!;
    // 0: run the unit (report); 1-254: skip it, not failed; 255: fail it.
    const failed = (result: string, status: string) => runExec(condition, { spec, cwd: dir, env: { STATE_DIRECTORY: stateDir, MONITOR_SERVICE_RESULT: result, MONITOR_EXIT_STATUS: status } });
    const goodStep = () => {
      const post = STEP.Service!.ExecStartPost![0]!;
      expect(runExec(post, { spec, cwd: dir, env: {} })).toBe(0);
    };
    expect([failed("exit-code", "2"), failed("exit-code", "2"), failed("exit-code", "2")]).toEqual([0, 1, 1]);
    // Another failure is news; the same one again is not.
    expect([failed("timeout", "15"), failed("exit-code", "70"), failed("exit-code", "70")]).toEqual([0, 0, 1]);
    goodStep();
    expect(existsSync(join(stateDir, "reported"))).toBe(false);
    expect([failed("exit-code", "70"), failed("exit-code", "70")]).toEqual([0, 1]);
    // A state it cannot write fails the unit (255), never skips it unsaid.
    expect(runExec(condition, { spec, cwd: dir, env: { STATE_DIRECTORY: join(dir, "missing"), MONITOR_SERVICE_RESULT: "exit-code", MONITOR_EXIT_STATUS: "2" } })).toBe(255);
    // What it runs once it reports: loop status, whose own exit does not count (the leading '-').
    const exec = execArgv(ATTENTION.Service!.ExecStart![0]!, spec);
    expect({ argv: exec.argv.slice(1), ignoreFailure: exec.ignoreFailure }).toEqual({ argv: ["status", "--text"], ignoreFailure: true });
    expect(STEP.Unit!.OnFailure).toEqual(["loop-attention@%i.service"]);
  });
});

describe("sessions need a scope that outlives the step (LOOP_SESSION_SCOPE=systemd, as the units set it)", () => {
  test("the fault names the fix for each lack, loginctl enable-linger for a user manager that only a login keeps", () => {
    expect(scopeFault({ refused: "lingering is off for loop (uid 1001): …", lack: "no_linger", user: "loop" })).toEqual({
      kind: "scope_unavailable",
      message: "sessions must run in a systemd scope of their own, but lingering is off for loop (uid 1001): …",
      fix: "let the user's systemd manager outlive its logins: `sudo loginctl enable-linger loop`, then `loop ctl resume`",
    });
    expect(scopeFault({ refused: "no systemd user manager …", lack: "no_user_manager", user: null })!.fix).toContain("`sudo loginctl enable-linger <the user loop runs as>`");
    expect(scopeFault({ refused: "no systemd manager runs here", lack: "no_system_manager", user: "root" })!.fix).toContain("LOOP_SESSION_SCOPE=off");
    expect(scopeFault({ invalid: 'LOOP_SESSION_SCOPE must be auto, systemd or off, not "yes"' })).toMatchObject({ kind: "scope_unavailable", fix: expect.stringContaining("auto, systemd or off") });
    expect(scopeFault(null)).toBeNull();
  });

  // Where this machine has no scope to give (a container, a user without linger), `loop run` under the
  // units' setting must pause before it reserves anything; where it has one, there is nothing to refuse.
  const lack = scopeLack(probeSystemd(process.env));
  if (!lack) console.warn("skipping the scope refusal through loop run: this machine gives sessions a scope");
  test.concurrent.skipIf(!lack)(
    "through loop run: paused before the reservation with the fault, no attempt spent; with LOOP_SESSION_SCOPE=auto after a resume, the item runs",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "@demo write A.md a", verify: "test -s A.md", maxAttempts: 1 }]), { env: { LOOP_SESSION_SCOPE: "systemd" } }, async (p) => {
        const r = await p.run([1]);
        expect(r.action).toBe("paused");
        expect(r.loop.reason).toContain("environment fault launching a: sessions must run in a systemd scope of their own, but");
        expect(r.transitions.map((t) => t.type)).toEqual(["definition_imported", "loop_started", "environment_fault"]);
        expect(p.eventsOf("launch_reserved")).toEqual([]);
        expect((await p.ctl(["resume"])).code).toBe(0);
        const cli = (args: string[]) => p.loop(args, { LOOP_SESSION_SCOPE: "auto" });
        for (let i = 0; i < 100; i++) {
          const s = JSON.parse((await cli(["run", "--json", "--root", p.root])).stdout);
          if (s.action === "drained") break;
          await Bun.sleep(100);
        }
        expect(p.projection().items.a!.status).toBe("passed");
        expect(p.projection().items.a!.failures).toBe(0);
      }),
    T,
  );

  test.concurrent(
    "an invalid LOOP_SESSION_SCOPE is a fault before the reservation too (it used to fail the launch and spend the attempt)",
    async () => {
      const p = new Project(demoDefinition([{ id: "a", prompt: "@demo write A.md a", verify: "test -s A.md" }]), { env: { LOOP_SESSION_SCOPE: "yes" } });
      try {
        const r = await p.run([1]);
        expect(r.loop.reason).toContain('LOOP_SESSION_SCOPE must be auto, systemd or off, not "yes"');
        expect(p.eventsOf("launch_reserved")).toEqual([]);
      } finally {
        p.dispose();
      }
    },
    T,
  );
});
