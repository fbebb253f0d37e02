// The shipped systemd units as a manager would run them (deploy/systemd/, docs/operations.md#systemd),
// with the stand-in of tests/helpers/systemd-units.ts: each Exec*= line run as systemd runs it (its
// specifiers, escapes and words), with the environment systemd gives it (STATE_DIRECTORY, an
// OnFailure= unit's MONITOR_*), its exit status judged by the unit's SuccessExitStatus=.
//   - The attention unit reports each new failure of a step once, not once a minute.
//   - Sessions that cannot have a scope that outlives the step are a fault naming the fix.
// Through `loop run` (a paused loop is no failed unit; the scope refusal): systemd.e2e.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { scopeFault } from "../../lib/decisions/faults.ts";
import { REPO } from "../helpers/cli.ts";
import { TempDirs } from "../helpers/fs.ts";
import { testEnv } from "../helpers/env.ts";
import { execArgv, parseUnit } from "../helpers/systemd-units.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

const unit = (name: string) => parseUnit(readFileSync(join(REPO, "deploy", "systemd", name), "utf8"), name);
const STEP = unit("loop@.service");
const ATTENTION = unit("loop-attention@.service");

/** Run one Exec*= value of a unit for instance `instance`, as the manager would: returns its exit code. */
function runExec(value: string, o: { spec: Record<string, string>; env: Record<string, string>; cwd: string }): number {
  const { argv } = execArgv(value, o.spec);
  const r = Bun.spawnSync(argv, { cwd: o.cwd, env: testEnv(o.env), stdout: "pipe", stderr: "pipe" });
  return r.exitCode ?? 128;
}

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
    const failed = (result: string, status: string) =>
      runExec(condition, { spec, cwd: dir, env: { STATE_DIRECTORY: stateDir, MONITOR_SERVICE_RESULT: result, MONITOR_EXIT_STATUS: status } });
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
    expect(
      runExec(condition, { spec, cwd: dir, env: { STATE_DIRECTORY: join(dir, "missing"), MONITOR_SERVICE_RESULT: "exit-code", MONITOR_EXIT_STATUS: "2" } }),
    ).toBe(255);
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
    expect(scopeFault({ refused: "no systemd user manager …", lack: "no_user_manager", user: null })!.fix).toContain(
      "`sudo loginctl enable-linger <the user loop runs as>`",
    );
    expect(scopeFault({ refused: "no systemd manager runs here", lack: "no_system_manager", user: "root" })!.fix).toContain("LOOP_SESSION_SCOPE=off");
    expect(scopeFault({ invalid: 'LOOP_SESSION_SCOPE must be auto, systemd or off, not "yes"' })).toMatchObject({
      kind: "scope_unavailable",
      fix: expect.stringContaining("auto, systemd or off"),
    });
    expect(scopeFault(null)).toBeNull();
  });
});
