// The shipped deployment files (deploy/, docs/operations.md): the systemd units parse (a small INI
// reader here, and `systemd-analyze verify` where it exists) and say what the docs promise; the
// Kubernetes manifests parse (Bun's YAML) and reference what the binary expects: its flags (parsed
// by loop run's own argument spec), the environment variables it reads, the state root's paths.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgv, allArgs } from "../../lib/shared/cli.ts";
import { statePaths } from "../../lib/shared/paths.ts";
import { tool as runTool } from "../../cmd/loop-run.ts";
import { tool as statusTool } from "../../cmd/loop-status.ts";
import { REPO } from "../helpers/project.ts";
import { TempDirs } from "../helpers/fs.ts";
import { haveLitestream, LITESTREAM } from "../helpers/litestream.ts";
import { testEnv } from "../helpers/env.ts";
import { type Ini, parseUnit } from "../helpers/systemd-units.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

const SYSTEMD = join(REPO, "deploy", "systemd");
const K8S = join(REPO, "deploy", "kubernetes");

const unitFiles = readdirSync(SYSTEMD).filter((f) => /\.(service|timer)$/.test(f));
const units = Object.fromEntries(unitFiles.map((f) => [f, parseUnit(readFileSync(join(SYSTEMD, f), "utf8"), f)]));
const one = (u: Ini, section: string, key: string) => {
  const v = u[section]?.[key];
  expect({ key: `[${section}] ${key}`, count: v?.length ?? 0 }).toEqual({ key: `[${section}] ${key}`, count: 1 });
  return v![0]!;
};

/** `loop <tool> args…` from an ExecStart or a container command, checked by the tool's own parser. */
function loopArgs(argv: string[]): { tool: string; args: Record<string, unknown> } {
  expect(argv[0]).toMatch(/(^|\/)loop$/);
  const tools: Record<string, typeof runTool | typeof statusTool> = { run: runTool, status: statusTool };
  const t = tools[argv[1]!];
  if (!t) throw new Error(`unexpected tool ${argv[1]}`);
  return { tool: argv[1]!, args: parseArgv(argv.slice(2), allArgs(t as never)) as Record<string, unknown> };
}

describe("systemd units", () => {
  test("the four files are there and parse", () => {
    expect(unitFiles.sort()).toEqual(["loop-attention@.service", "loop-watch@.service", "loop@.service", "loop@.timer"]);
  });

  test("the oneshot step: busy and a loop waiting for a person are success, a failing step starts the attention unit, bounded, default KillMode", () => {
    const u = units["loop@.service"]!;
    expect(one(u, "Service", "Type")).toBe("oneshot");
    expect(one(u, "Service", "SuccessExitStatus").split(/\s+/).sort()).toEqual(["1", "75"]);
    expect(one(u, "Service", "TimeoutStartSec")).toMatch(/^\d+(min|s|h)$/);
    expect(one(u, "Unit", "OnFailure")).toBe("loop-attention@%i.service");
    expect(existsSync(join(SYSTEMD, "loop-attention@.service"))).toBe(true);
    // The recipe that killed the sessions set nothing; neither does this one, and it must not say process.
    expect(u.Service!.KillMode).toBeUndefined();
    expect(loopArgs(one(u, "Service", "ExecStart").split(" "))).toEqual({ tool: "run", args: expect.objectContaining({ json: true, watch: false }) });
  });

  test("the timer: every minute after the last step, to the second", () => {
    const t = units["loop@.timer"]!;
    expect(one(t, "Timer", "AccuracySec")).toBe("1s");
    expect(one(t, "Timer", "OnUnitInactiveSec")).toBe("1min");
    expect(one(t, "Install", "WantedBy")).toBe("timers.target");
  });

  test("the watcher: loop run --watch --forever, stopped by SIGTERM (130 is success), not restarted on a usage error", () => {
    const u = units["loop-watch@.service"]!;
    const { args } = loopArgs(one(u, "Service", "ExecStart").split(" "));
    expect(args).toMatchObject({ watch: true, forever: true, interval: "30s", json: true });
    expect(one(u, "Service", "SuccessExitStatus").split(/\s+/)).toContain("130");
    expect(one(u, "Service", "RestartPreventExitStatus").split(/\s+/)).toContain("2");
    expect(u.Service!.KillMode).toBeUndefined();
  });

  test("the attention unit runs loop status", () => {
    const exec = one(units["loop-attention@.service"]!, "Service", "ExecStart").replace(/^-/, "");
    expect(loopArgs(exec.split(" ")).tool).toBe("status");
  });

  test("the step and the watcher require a scope for their sessions (LOOP_SESSION_SCOPE=systemd: a launch without one pauses the loop)", () => {
    for (const f of ["loop@.service", "loop-watch@.service"]) expect({ f, env: units[f]!.Service!.Environment }).toEqual({ f, env: ["LOOP_SESSION_SCOPE=systemd"] });
  });

  test("their hardening is the safe set: nothing agents die of (docs/operations.md#hardening)", () => {
    // Agents are forked by the step and inherit all of it, whatever scope they run in.
    const UNSAFE = ["RestrictNamespaces", "MemoryDenyWriteExecute", "ProtectHome", "PrivateTmp", "SystemCallFilter", "PrivateUsers", "ProtectProc", "RemoveIPC", "CapabilityBoundingSet", "DynamicUser"];
    const ops = readFileSync(join(REPO, "docs", "operations.md"), "utf8");
    for (const f of ["loop@.service", "loop-watch@.service"]) {
      const service = units[f]!.Service!;
      expect({ f, unsafe: UNSAFE.filter((k) => k in service) }).toEqual({ f, unsafe: [] });
      for (const k of ["NoNewPrivileges", "ProtectSystem", "LockPersonality"]) expect({ f, k, set: k in service }).toEqual({ f, k, set: true });
      for (const k of Object.keys(service).filter((k) => /^(Protect|Restrict|NoNew|Lock|Private)/.test(k))) expect({ k, documented: ops.includes(`\`${k}=`) }).toEqual({ k, documented: true });
    }
    for (const k of UNSAFE.slice(0, 4)) expect({ k, documented: ops.includes(`\`${k}=`) }).toEqual({ k, documented: true });
  });

  test("every LOOP_ variable they set is one loop reads", () => {
    for (const [f, u] of Object.entries(units))
      for (const e of u.Service?.Environment ?? []) {
        const name = e.split("=")[0]!;
        if (name.startsWith("LOOP_")) expect({ f, name, read: loopReads(name) }).toEqual({ f, name, read: true });
      }
  });

  const analyze = Bun.which("systemd-analyze");
  if (!analyze) console.warn("skipping `systemd-analyze verify` of deploy/systemd: systemd-analyze is not on PATH");
  test.skipIf(!analyze)("systemd-analyze verify finds nothing to say about them (as instance api)", () => {
    const dir = temp.make("loop-units-");
    // verify checks that ExecStart's program exists: a stand-in loop where the units expect it.
    const bin = join(dir, "bin", "loop");
    mkdirSync(join(dir, "bin"));
    writeFileSync(bin, "#!/bin/sh\nexit 0\n");
    chmodSync(bin, 0o755);
    const paths: string[] = [];
    for (const f of unitFiles) {
      const text = readFileSync(join(SYSTEMD, f), "utf8").replaceAll("/usr/local/bin/loop", bin);
      // Templates are verified through an instance, as systemd would load them.
      for (const name of [f, f.replace("@.", "@api.")]) writeFileSync(join(dir, name), text);
      paths.push(join(dir, f.replace("@.", "@api.")));
    }
    const r = Bun.spawnSync([analyze!, "verify", "--man=no", ...paths], { stdout: "pipe", stderr: "pipe", env: { ...process.env, SYSTEMD_LOG_LEVEL: "notice" } });
    // It exits 0 even when it ignored a bad line, saying so: the output must be empty too.
    expect({ code: r.exitCode, out: (r.stdout.toString() + r.stderr.toString()).trim() }).toEqual({ code: 0, out: "" });
  });
});

/** Does loop read this environment variable (is it named anywhere in lib/ or cmd/)? */
function loopReads(name: string): boolean {
  const walk = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith(".ts") && readFileSync(join(dir, e.name), "utf8").includes(name)));
  return walk(join(REPO, "lib")) || walk(join(REPO, "cmd"));
}

describe("Kubernetes manifests", () => {
  const docs = readdirSync(K8S)
    .filter((f) => f.endsWith(".yaml"))
    .flatMap((f) => {
      const parsed = Bun.YAML.parse(readFileSync(join(K8S, f), "utf8")) as unknown;
      return (Array.isArray(parsed) ? parsed : [parsed]).map((d) => ({ file: f, doc: d as Record<string, any> }));
    });
  const byKind = (kind: string) => docs.filter((d) => d.doc.kind === kind).map((d) => d.doc);
  const sts = byKind("StatefulSet")[0]!;
  const pod = sts?.spec?.template?.spec;
  const loop = pod?.containers?.find((c: { name: string }) => c.name === "loop");
  const env = (c: any, name: string) => (c.env ?? []).find((e: { name: string }) => e.name === name);

  test("they parse: a StatefulSet, a Secret, a ConfigMap, each with apiVersion and a name", () => {
    expect(docs.map((d) => d.doc.kind).sort()).toEqual(["ConfigMap", "Secret", "StatefulSet"]);
    for (const { file, doc } of docs) expect({ file, apiVersion: typeof doc.apiVersion, name: typeof doc.metadata?.name }).toEqual({ file, apiVersion: "string", name: "string" });
  });

  test("exactly one replica, its state on a volume claim mounted where the state root is", () => {
    expect(sts.spec.replicas).toBe(1);
    const claim = sts.spec.volumeClaimTemplates[0].metadata.name;
    const mount = loop.volumeMounts.find((m: { name: string }) => m.name === claim);
    expect(mount).toBeDefined();
    const stateRoot = env(loop, "LOOP_STATE_ROOT").value as string;
    expect(stateRoot.startsWith(mount.mountPath + "/")).toBe(true);
    expect(stateRoot).toBe(join(loop.workingDir, ".loop"));
  });

  test("the container runs loop run --watch --forever under the image's entrypoint (args, not command: tini stays PID 1), flags as loop run parses them", () => {
    expect(loop.command).toBeUndefined();
    const { tool, args } = loopArgs(loop.args);
    expect(tool).toBe("run");
    expect(args).toMatchObject({ watch: true, forever: true });
  });

  test("the forge token comes from the Secret; every LOOP_ variable is one loop reads", () => {
    const secret = byKind("Secret")[0]!;
    for (const c of [loop, ...pod.initContainers]) {
      for (const e of c.env ?? []) {
        if (e.valueFrom?.secretKeyRef) {
          expect(e.valueFrom.secretKeyRef.name).toBe(secret.metadata.name);
          expect(Object.keys(secret.stringData)).toContain(e.valueFrom.secretKeyRef.key);
        }
        if (e.name.startsWith("LOOP_")) expect({ name: e.name, read: loopReads(e.name) }).toEqual({ name: e.name, read: true });
      }
      for (const f of c.envFrom ?? []) expect(f.secretRef.name).toBe(secret.metadata.name);
    }
    expect(env(loop, "GITHUB_TOKEN").valueFrom.secretKeyRef.key).toBe("GITHUB_TOKEN");
  });

  test("no token in a URL: the clone authenticates through a credential helper of that one command, so .git/config never holds it", () => {
    // No container's command or arguments carry credentials in a URL.
    for (const c of [...pod.initContainers, ...pod.containers])
      expect({ c: c.name, userinfo: [...(c.command ?? []), ...(c.args ?? [])].filter((a: string) => /:\/\/[^/\s]*@/.test(a)) }).toEqual({ c: c.name, userinfo: [] });
    const clone = pod.initContainers.find((c: { name: string }) => c.name === "clone");
    const script = clone.command[2] as string;
    expect(script).toContain("clone https://github.com/acme/api.git /work/repo");
    // The script run for real, against a local repository standing in for github.com.
    const dir = temp.make("loop-k8s-clone-");
    const origin = join(dir, "origin");
    mkdirSync(origin);
    const g = (cwd: string, ...args: string[]) => Bun.spawnSync(["git", ...args], { cwd, env: testEnv(), stdout: "pipe", stderr: "pipe" });
    g(origin, "init", "-q", "-b", "main");
    writeFileSync(join(origin, "f.txt"), "x\n");
    g(origin, "add", "-A");
    g(origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one");
    const local = script.replace("https://github.com/acme/api.git", origin).replaceAll("/work/repo", join(dir, "work", "repo"));
    const token = "ghp_clonetoken0123456789";
    const run = Bun.spawnSync(["sh", "-c", local], { cwd: dir, env: testEnv({ GITHUB_TOKEN: token, HOME: dir }), stdout: "pipe", stderr: "pipe" });
    expect({ code: run.exitCode, err: run.exitCode === 0 ? "" : run.stderr.toString() }).toEqual({ code: 0, err: "" });
    expect(readFileSync(join(dir, "work", "repo", "f.txt"), "utf8")).toBe("x\n");
    expect(readFileSync(join(dir, "work", "repo", ".git", "config"), "utf8")).not.toContain(token);
    // The helper answers github.com with the token (git's own credential protocol, for real).
    const helper = /credential\.helper='([^']+)'/.exec(script)![1]!;
    const fill = Bun.spawnSync(["git", "-c", `credential.helper=${helper}`, "credential", "fill"], {
      cwd: dir,
      env: testEnv({ GITHUB_TOKEN: token, HOME: dir, GIT_TERMINAL_PROMPT: "0" }),
      stdin: new TextEncoder().encode("protocol=https\nhost=github.com\npath=acme/api.git\n\n"),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(fill.stdout.toString()).toContain(`password=${token}`);
    expect(fill.stdout.toString()).toContain("username=x-access-token");
  });

  test("Litestream: a native sidecar and a restore before it, both on the store's own path, at the pinned version", () => {
    const cm = byKind("ConfigMap")[0]!;
    const config = Bun.YAML.parse(cm.data["litestream.yml"]) as { dbs: { path: string; replicas: unknown[] }[] };
    const db = statePaths(env(loop, "LOOP_STATE_ROOT").value).db;
    expect(config.dbs.map((d) => d.path)).toEqual([db]);
    const sidecar = pod.initContainers.find((c: { name: string }) => c.name === "litestream");
    const restore = pod.initContainers.find((c: { name: string }) => c.name === "restore");
    expect(sidecar.restartPolicy).toBe("Always");
    expect(sidecar.args.slice(0, 1)).toEqual(["replicate"]);
    expect(restore.restartPolicy).toBeUndefined();
    expect(restore.args[0]).toBe("restore");
    expect(restore.args).toContain("-if-db-not-exists");
    expect(restore.args.at(-1)).toBe(db);
    // The restore runs before the sidecar starts replicating.
    expect(pod.initContainers.indexOf(restore)).toBeLessThan(pod.initContainers.indexOf(sidecar));
    for (const c of [sidecar, restore]) {
      expect(c.image).toBe("litestream/litestream:0.3.13");
      const cfg = c.volumeMounts.find((m: { mountPath: string }) => m.mountPath === "/etc/litestream.yml");
      expect(pod.volumes.find((v: { name: string }) => v.name === cfg.name).configMap.name).toBe(cm.metadata.name);
    }
  });

  test.skipIf(!haveLitestream)("the real litestream reads the ConfigMap's configuration", () => {
    const dir = temp.make("loop-ls-config-");
    const file = join(dir, "litestream.yml");
    writeFileSync(file, byKind("ConfigMap")[0]!.data["litestream.yml"]);
    const r = Bun.spawnSync([LITESTREAM, "databases", "-config", file], { stdout: "pipe", stderr: "pipe" });
    expect({ code: r.exitCode, err: r.stderr.toString() }).toEqual({ code: 0, err: "" });
    expect(r.stdout.toString()).toContain("/work/repo/.loop/loop.db");
  });
});
