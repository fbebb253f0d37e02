// Sessions and verify commands in a systemd scope (lib/supervisor/scope.ts): the decision as plain data,
// the argv, the launch through a stand-in systemd-run (which execs its command, as the real one
// does once the scope exists, or refuses), a verify's scope beside its session's, the close path
// ending every process of a cgroup (setsid'd ones too). For real on this machine through `loop run`
// (the fallback to process groups recorded in session_started and verify_started): scope.e2e.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  decideMechanism,
  endRecordedScope,
  endScope,
  launchDetached,
  readScopeRecord,
  type ScopeMode,
  scopeArgv,
  scopeMode,
  scopeUnitName,
  type SystemdFacts,
  writeScopeRecord,
} from "../../lib/supervisor/scope.ts";
import { endVerify } from "../../lib/supervisor/verify-command.ts";
import { pidAlive, processStartTime } from "../../lib/shared/process.ts";
import { TempDirs } from "../helpers/fs.ts";
import { pollUntil } from "../helpers/project.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

const target = { role: "session" as const, loopName: "api", item: "fix-login", epoch: 0, attempt: 2, stateRoot: "/srv/api/.loop" };
const unit = scopeUnitName(target);
const verifyTarget = { ...target, role: "verify" as const };
const verifyUnit = scopeUnitName(verifyTarget);
const facts = (over: Partial<SystemdFacts> = {}): SystemdFacts => ({
  systemdRun: "/usr/bin/systemd-run",
  systemctl: "/usr/bin/systemctl",
  systemManager: true,
  userManager: true,
  runtimeDir: "/run/user/1000",
  uid: 1000,
  user: "loop",
  linger: true,
  ...over,
});

describe("the decision, as data", () => {
  const cases: { name: string; facts: SystemdFacts; mode: ScopeMode; want: unknown }[] = [
    { name: "root with a system manager: a system scope", facts: facts({ uid: 0 }), mode: "auto", want: { use: "systemd_scope", unit, manager: "system" } },
    { name: "a user with a user manager: a user scope", facts: facts(), mode: "auto", want: { use: "systemd_scope", unit, manager: "user" } },
    {
      name: "a user without a user manager (no linger): process group, saying how to get one",
      facts: facts({ userManager: false }),
      mode: "auto",
      want: {
        use: "process_group",
        why: "no systemd user manager for uid 1000 (/run/user/1000/systemd/private is missing; `loginctl enable-linger` starts one)",
      },
    },
    {
      name: "root in a container without systemd: process group",
      facts: facts({ uid: 0, systemManager: false }),
      mode: "auto",
      want: { use: "process_group", why: "no systemd manager runs here (/run/systemd/system is missing)" },
    },
    {
      name: "no systemd-run: process group",
      facts: facts({ systemdRun: null }),
      mode: "auto",
      want: { use: "process_group", why: "systemd-run is not on PATH" },
    },
    { name: "off: process group even with systemd", facts: facts(), mode: "off", want: { use: "process_group", why: "LOOP_SESSION_SCOPE=off" } },
    { name: "systemd demanded and there: the scope", facts: facts({ uid: 0 }), mode: "systemd", want: { use: "systemd_scope", unit, manager: "system" } },
    {
      name: "systemd demanded but absent: refused with the reason",
      facts: facts({ uid: 0, systemManager: false }),
      mode: "systemd",
      want: { use: "refuse", why: "LOOP_SESSION_SCOPE=systemd, but no systemd manager runs here (/run/systemd/system is missing)", lack: "no_system_manager" },
    },
    {
      name: "a user whose user manager runs only for a login (no linger): process group, saying why; the scope would end at logout",
      facts: facts({ linger: false }),
      mode: "auto",
      want: {
        use: "process_group",
        why: "lingering is off for loop (uid 1000): its systemd user manager runs only while it is logged in, and ends every scope in it after the last logout (`loginctl enable-linger` keeps it)",
      },
    },
    {
      name: "systemd demanded by a user without linger: refused, naming loginctl enable-linger",
      facts: facts({ linger: false }),
      mode: "systemd",
      want: { use: "refuse", why: expect.stringContaining("`loginctl enable-linger` keeps it"), lack: "no_linger" },
    },
    {
      name: "linger unknown (no name for the uid): a user manager that is there is used",
      facts: facts({ user: null, linger: null }),
      mode: "auto",
      want: { use: "systemd_scope", unit, manager: "user" },
    },
    { name: "root needs no linger", facts: facts({ uid: 0, linger: false }), mode: "systemd", want: { use: "systemd_scope", unit, manager: "system" } },
  ];
  for (const c of cases) test(c.name, () => expect(decideMechanism(c.facts, c.mode, target)).toEqual(c.want as never));

  test("LOOP_SESSION_SCOPE: auto by default; anything else is named", () => {
    expect(scopeMode({})).toBe("auto");
    expect(scopeMode({ LOOP_SESSION_SCOPE: "" })).toBe("auto");
    expect(scopeMode({ LOOP_SESSION_SCOPE: "systemd" })).toBe("systemd");
    expect(scopeMode({ LOOP_SESSION_SCOPE: "off" })).toBe("off");
    expect(scopeMode({ LOOP_SESSION_SCOPE: "yes" })).toEqual({ invalid: 'LOOP_SESSION_SCOPE must be auto, systemd or off, not "yes"' });
  });
});

describe("unit names and argv", () => {
  test("a unit per loop, item, epoch, attempt and state root, escaped as systemd-escape does", () => {
    expect(unit).toMatch(/^loop-api-fix-login-e0-a2-[0-9a-f]{8}\.scope$/);
    expect(scopeUnitName({ ...target, attempt: 3 })).not.toBe(unit);
    expect(scopeUnitName({ ...target, epoch: 1 })).not.toBe(unit);
    expect(scopeUnitName({ ...target, stateRoot: "/srv/other/.loop" })).not.toBe(unit);
    expect(scopeUnitName({ ...target, loopName: "my loop/ü" })).toMatch(/^loop-my\\x20loop\\x2f\\xc3\\xbc-fix-login-e0-a2-[0-9a-f]{8}\.scope$/);
    const long = scopeUnitName({ ...target, item: "x".repeat(400) });
    expect(long.length).toBeLessThanOrEqual(255);
    expect(long).toMatch(/-[0-9a-f]{8}\.scope$/);
  });

  test("an attempt's verify has a unit of its own, the same but for -verify (kept when a long name is cut)", () => {
    expect(verifyUnit).toBe(unit.replace(/-([0-9a-f]{8})\.scope$/, "-verify-$1.scope"));
    const long = scopeUnitName({ ...verifyTarget, item: "x".repeat(400) });
    expect(long.length).toBeLessThanOrEqual(255);
    expect(long).toMatch(/-verify-[0-9a-f]{8}\.scope$/);
    expect(long).not.toBe(scopeUnitName({ ...target, item: "x".repeat(400) }));
  });

  test("system and user scopes", () => {
    const command = ["/usr/local/bin/loop", "__session", "/srv/api/.loop/sessions/fix-login/2"];
    expect(scopeArgv({ systemdRun: "/usr/bin/systemd-run", unit, manager: "system", description: "loop api: fix-login attempt 2", command })).toEqual([
      "/usr/bin/systemd-run",
      "--scope",
      "--collect",
      "--quiet",
      `--unit=${unit}`,
      "--description=loop api: fix-login attempt 2",
      "--",
      ...command,
    ]);
    expect(scopeArgv({ systemdRun: "systemd-run", unit, manager: "user", description: "d", command }).slice(0, 3)).toEqual([
      "systemd-run",
      "--user",
      "--scope",
    ]);
  });
});

/** A stand-in systemd-run: records its argv and environment, then execs what follows `--` (or refuses). */
function fakeSystemdRun(dir: string, behaviour: "exec" | "refuse"): string {
  const path = join(dir, "systemd-run");
  writeFileSync(
    path,
    `#!/bin/sh
printf '%s\\n' "$@" > ${JSON.stringify(join(dir, "argv"))}
printf '%s\\n' "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" > ${JSON.stringify(join(dir, "env"))}
${behaviour === "refuse" ? 'echo "Failed to start transient scope unit: Interactive authentication required." >&2; exit 1' : 'while [ "$1" != "--" ]; do shift; done; shift; exec "$@"'}
`,
  );
  chmodSync(path, 0o755);
  return path;
}

function spawnDetached(argv: string[], env: Record<string, string | undefined>, errLog: string | null): number {
  const child = Bun.spawn(argv, { detached: true, stdio: ["ignore", "ignore", errLog ? Bun.file(errLog) : "ignore"], env });
  child.unref();
  return child.pid;
}

describe("launching through systemd-run", () => {
  test("the wrapper started through systemd-run: a scope, recorded in scope.json for the close path", async () => {
    const dir = temp.make("loop-scope-");
    const started = join(dir, "started.json");
    const run = fakeSystemdRun(dir, "exec");
    const r = launchDetached({
      dir,
      command: ["/bin/sh", "-c", `echo '{}' > ${started}; sleep 30`],
      target,
      env: { PATH: process.env.PATH },
      spawn: spawnDetached,
      startedFile: started,
      facts: facts({ systemdRun: run, runtimeDir: "/run/user/4242", uid: 4242 }),
    });
    try {
      expect(r.mechanism).toEqual({ kind: "systemd_scope", unit, manager: "user" });
      const argv = readFileSync(join(dir, "argv"), "utf8").trim().split("\n");
      expect(argv.slice(0, 5)).toEqual(["--user", "--scope", "--collect", "--quiet", `--unit=${unit}`]);
      // A service has no XDG_RUNTIME_DIR: systemd-run is given the user's, to find the user manager.
      expect(readFileSync(join(dir, "env"), "utf8").trim()).toBe("XDG_RUNTIME_DIR=/run/user/4242");
      expect(readScopeRecord(dir)).toMatchObject({ unit, manager: "user", runtimeDir: "/run/user/4242" });
      expect(pidAlive(r.pid)).toBe(true);
    } finally {
      process.kill(-r.pid, "SIGKILL");
    }
  });

  test("systemd-run refuses: a process group instead, with its message as the reason; demanded, the launch fails", async () => {
    const dir = temp.make("loop-scope-");
    const started = join(dir, "started.json");
    const run = fakeSystemdRun(dir, "refuse");
    const o = {
      dir,
      command: ["/bin/sh", "-c", `echo '{}' > ${started}; sleep 30`],
      target,
      env: { PATH: process.env.PATH } as Record<string, string | undefined>,
      spawn: spawnDetached,
      startedFile: started,
      facts: facts({ systemdRun: run, uid: 0 }),
    };
    const r = launchDetached(o);
    try {
      expect(r.mechanism).toEqual({
        kind: "process_group",
        why: `systemd-run could not start the scope ${unit}: Failed to start transient scope unit: Interactive authentication required.`,
      });
      expect(existsSync(join(dir, "scope.json"))).toBe(false);
      await pollUntil(() => existsSync(started), "the wrapper started in a process group");
    } finally {
      process.kill(-r.pid, "SIGKILL");
    }
    rmSync(started);
    expect(() => launchDetached({ ...o, env: { ...o.env, LOOP_SESSION_SCOPE: "systemd" } })).toThrow(
      `systemd-run could not start the scope ${unit}: Failed to start transient scope unit: Interactive authentication required.`,
    );
  });
});

/** A stand-in cgroup: a directory whose cgroup.procs lists the given pids, as cgroup v2 does. */
function fakeCgroup(pids: number[], name = unit, root = temp.make("loop-cgroup-")): { root: string; cgroup: string } {
  const cgroup = `/system.slice/${name}`;
  mkdirSync(join(root, cgroup), { recursive: true });
  writeFileSync(join(root, cgroup, "cgroup.procs"), pids.map((p) => `${p}\n`).join(""));
  return { root, cgroup };
}

describe("a verify command in a scope of its own, beside its session's", () => {
  test("started through systemd-run under the verify unit, recorded in verify-scope.json; ending it ends its cgroup, not the session's", async () => {
    const dir = temp.make("loop-scope-");
    const run = fakeSystemdRun(dir, "exec");
    const f = facts({ systemdRun: run, uid: 0 });
    // The session first, as a step does: its scope.json, and its started.json already there.
    const sessionStarted = join(dir, "started.json");
    const session = launchDetached({
      dir,
      command: ["/bin/sh", "-c", `echo '{}' > ${sessionStarted}; sleep 60`],
      target,
      env: { PATH: process.env.PATH },
      spawn: spawnDetached,
      startedFile: sessionStarted,
      facts: f,
    });
    await pollUntil(() => existsSync(sessionStarted), "the session started");
    const sessionRecord = readFileSync(join(dir, "scope.json"), "utf8");
    const verifyStarted = join(dir, "verify-started.json");
    const verify = launchDetached({
      dir,
      command: ["/bin/sh", "-c", `echo '{}' > ${verifyStarted}; sleep 60`],
      target: verifyTarget,
      env: { PATH: process.env.PATH },
      spawn: spawnDetached,
      startedFile: verifyStarted,
      facts: f,
    });
    // Something the verify started that left its process group: only its cgroup still holds it.
    const escaped = Bun.spawn(["setsid", "sleep", "60"], { stdio: ["ignore", "ignore", "ignore"] });
    try {
      expect(verify.mechanism).toEqual({ kind: "systemd_scope", unit: verifyUnit, manager: "system" });
      expect(readFileSync(join(dir, "argv"), "utf8").trim().split("\n")).toContain(`--unit=${verifyUnit}`);
      expect(readScopeRecord(dir, "verify")).toMatchObject({ unit: verifyUnit, manager: "system" });
      expect(readFileSync(join(dir, "scope.json"), "utf8")).toBe(sessionRecord);
      expect(readScopeRecord(dir)).toMatchObject({ unit, manager: "system" });
      await pollUntil(() => existsSync(verifyStarted), "the verify started");
      await pollUntil(() => readFileSync(`/proc/${escaped.pid}/cmdline`, "utf8").startsWith("sleep"), "setsid exec'd sleep");
      // The stand-in makes no cgroups: point each record at a stand-in one holding its processes.
      const root = temp.make("loop-cgroup-");
      const vcg = fakeCgroup([verify.pid, escaped.pid], verifyUnit, root);
      const scg = fakeCgroup([session.pid], unit, root);
      writeFileSync(join(dir, "verify-scope.json"), JSON.stringify({ ...readScopeRecord(dir, "verify"), cgroup: vcg.cgroup }) + "\n");
      writeFileSync(join(dir, "scope.json"), JSON.stringify({ ...readScopeRecord(dir), cgroup: scg.cgroup }) + "\n");
      const sessionBefore = readFileSync(join(dir, "scope.json"), "utf8");
      const how = await endVerify({
        proc: { pid: verify.pid, startTime: processStartTime(verify.pid) },
        dir,
        graceMs: 2000,
        cgroupRoot: root,
        systemctl: null,
      });
      expect(how).toBe("terminated");
      expect(await escaped.exited).not.toBeNull();
      await pollUntil(() => !pidAlive(verify.pid), "the verify's wrapper ended");
      // The session, its scope and its record are untouched.
      expect(pidAlive(session.pid)).toBe(true);
      expect(readFileSync(join(dir, "scope.json"), "utf8")).toBe(sessionBefore);
      expect(await endRecordedScope(dir, 2000, "verify", { cgroupRoot: root, systemctl: null })).toBe("not_running");
    } finally {
      for (const pid of [session.pid, verify.pid])
        try {
          process.kill(-pid, "SIGKILL");
        } catch {}
      escaped.kill("SIGKILL");
    }
  });

  test("systemd-run refuses a verify: a process group, its record removed and the session's kept", async () => {
    const dir = temp.make("loop-scope-");
    writeScopeRecord(dir, { unit, manager: "system", cgroup: null, runtimeDir: "/run/user/0" });
    const run = fakeSystemdRun(dir, "refuse");
    // The session's started.json is there already: a verify is given its own (startSession does), so it does not count.
    writeFileSync(join(dir, "started.json"), "{}\n");
    const verifyStarted = join(dir, "verify-started.json");
    const r = launchDetached({
      dir,
      command: ["/bin/sh", "-c", `echo '{}' > ${verifyStarted}; sleep 30`],
      target: verifyTarget,
      env: { PATH: process.env.PATH },
      spawn: spawnDetached,
      startedFile: verifyStarted,
      facts: facts({ systemdRun: run, uid: 0 }),
    });
    try {
      expect(r.mechanism).toEqual({
        kind: "process_group",
        why: `systemd-run could not start the scope ${verifyUnit}: Failed to start transient scope unit: Interactive authentication required.`,
      });
      expect(existsSync(join(dir, "verify-scope.json"))).toBe(false);
      expect(readFileSync(join(dir, "verify-scope.log"), "utf8")).toContain("Interactive authentication required");
      expect(readScopeRecord(dir)).toMatchObject({ unit });
    } finally {
      process.kill(-r.pid, "SIGKILL");
    }
  });
});

describe("ending a scope: every process in its cgroup", () => {
  test("a session's processes, one of which left its process group by setsid, all end; then not_running", async () => {
    const inGroup = Bun.spawn(["sleep", "60"], { detached: true, stdio: ["ignore", "ignore", "ignore"] });
    const escaped = Bun.spawn(["setsid", "sleep", "60"], { stdio: ["ignore", "ignore", "ignore"] });
    await pollUntil(() => readFileSync(`/proc/${escaped.pid}/cmdline`, "utf8").startsWith("sleep"), "setsid exec'd sleep");
    const { root, cgroup } = fakeCgroup([inGroup.pid, escaped.pid]);
    const record = { unit, manager: "system" as const, cgroup, runtimeDir: "/run/user/0" };
    expect(await endScope(record, 2000, { cgroupRoot: root, systemctl: null })).toBe("terminated");
    expect(await inGroup.exited).not.toBeNull();
    expect(await escaped.exited).not.toBeNull();
    expect(await endScope(record, 2000, { cgroupRoot: root, systemctl: null })).toBe("not_running");
  });

  test("a process that ignores SIGTERM is killed after the grace period", async () => {
    const stubborn = Bun.spawn(["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"], { stdout: "pipe", stderr: "ignore" });
    const reader = stubborn.stdout.getReader();
    await reader.read(); // the trap is set
    const { root, cgroup } = fakeCgroup([stubborn.pid]);
    expect(await endScope({ unit, manager: "system", cgroup, runtimeDir: "/run/user/0" }, 200, { cgroupRoot: root, systemctl: null })).toBe("killed");
    expect(await stubborn.exited).not.toBeNull();
    expect(stubborn.signalCode).toBe("SIGKILL");
  });
});
