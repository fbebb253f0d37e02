// The shipped deployment files (deploy/, docs/operations.md): the systemd units parse (a small INI
// reader, and `systemd-analyze verify` where it exists) and say what the docs promise; the
// Kubernetes manifests are valid against the official API schema with no unknown or deprecated
// field (tests/helpers/kubernetes.ts), meet the Pod Security level each claims, give each container
// only its own keys, and reference what the binary expects: its flags (parsed by loop run's own
// argument spec), the environment variables it reads, the state root's paths.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
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
import { baselineViolations, restrictedViolations, schemaProblem, unknownFields } from "../helpers/kubernetes.ts";

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

  test("the step and the watcher require a scope for their sessions (LOOP_SESSION_SCOPE=systemd: a launch without one pauses the loop), and keep worktrees in a state directory of their own (docs/state.md#where-worktrees-live)", () => {
    for (const f of ["loop@.service", "loop-watch@.service"]) {
      expect({ f, env: units[f]!.Service!.Environment }).toEqual({ f, env: ["LOOP_SESSION_SCOPE=systemd", "LOOP_WORKTREES=%S/loop-worktrees/%i"] });
      expect({ f, dir: units[f]!.Service!.StateDirectory }).toEqual({ f, dir: ["loop-worktrees/%i"] });
    }
  });

  test("their hardening is the safe set: nothing agents die of (docs/operations.md#hardening)", () => {
    // Agents are forked by the step and inherit all of it, whatever scope they run in.
    const UNSAFE = [
      "RestrictNamespaces",
      "MemoryDenyWriteExecute",
      "ProtectHome",
      "PrivateTmp",
      "SystemCallFilter",
      "PrivateUsers",
      "ProtectProc",
      "RemoveIPC",
      "CapabilityBoundingSet",
      "DynamicUser",
    ];
    const ops = readFileSync(join(REPO, "docs", "operations.md"), "utf8");
    for (const f of ["loop@.service", "loop-watch@.service"]) {
      const service = units[f]!.Service!;
      expect({ f, unsafe: UNSAFE.filter((k) => k in service) }).toEqual({ f, unsafe: [] });
      for (const k of ["NoNewPrivileges", "ProtectSystem", "LockPersonality"]) expect({ f, k, set: k in service }).toEqual({ f, k, set: true });
      for (const k of Object.keys(service).filter((k) => /^(Protect|Restrict|NoNew|Lock|Private)/.test(k)))
        expect({ k, documented: ops.includes(`\`${k}=`) }).toEqual({ k, documented: true });
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
    const r = Bun.spawnSync([analyze!, "verify", "--man=no", ...paths], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, SYSTEMD_LOG_LEVEL: "notice" },
    });
    // It exits 0 even when it ignored a bad line, saying so: the output must be empty too.
    expect({ code: r.exitCode, out: (r.stdout.toString() + r.stderr.toString()).trim() }).toEqual({ code: 0, out: "" });
  });
});

/** Does loop read this environment variable (is it named anywhere in lib/ or cmd/)? */
function loopReads(name: string): boolean {
  const walk = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith(".ts") && readFileSync(join(dir, e.name), "utf8").includes(name),
    );
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
  const inFile = (file: string) => docs.find((d) => d.file === file)!.doc;
  const secretNamed = (name: string) => byKind("Secret").find((s) => s.metadata.name === name)!;
  // The restricted variant (no sandbox) and the sandbox variant.
  const STS = { plain: inFile("statefulset.yaml"), sandbox: inFile("statefulset-sandbox.yaml") };
  const sts = STS.plain;
  const pod = sts.spec.template.spec;
  const loop = pod.containers.find((c: { name: string }) => c.name === "loop");
  const env = (c: any, name: string) => (c.env ?? []).find((e: { name: string }) => e.name === name);
  const podsOf = () => Object.entries(STS).map(([variant, s]) => ({ variant, pod: s.spec.template.spec }));
  const allContainers = (p: any) => [...(p.initContainers ?? []), ...p.containers];

  test("they parse: two StatefulSets (restricted, sandbox), two Secrets, a ConfigMap, a PodDisruptionBudget, each with apiVersion and a name", () => {
    expect(docs.map((d) => `${d.file} ${d.doc.kind}`).sort()).toEqual([
      "litestream-configmap.yaml ConfigMap",
      "poddisruptionbudget.yaml PodDisruptionBudget",
      "secret.yaml Secret",
      "secret.yaml Secret",
      "statefulset-sandbox.yaml StatefulSet",
      "statefulset.yaml StatefulSet",
    ]);
    for (const { file, doc } of docs)
      expect({ file, apiVersion: typeof doc.apiVersion, name: typeof doc.metadata?.name }).toEqual({ file, apiVersion: "string", name: "string" });
  });

  test("every object is valid against the official API schema (kubernetes-models), with no field the API does not have or calls deprecated", async () => {
    for (const { file, doc } of docs) {
      expect({ file, kind: doc.kind, problem: await schemaProblem(doc) }).toEqual({ file, kind: doc.kind, problem: null });
      expect({ file, kind: doc.kind, fields: unknownFields(doc) }).toEqual({ file, kind: doc.kind, fields: [] });
    }
  }, 60_000);

  test("the checks can fail: a misspelt field, a deprecated one, a wrong type and a wrong enum are each named with their path", async () => {
    const bad = structuredClone(sts);
    bad.spec.template.spec.containers[0].securityContext = { ...loop.securityContext, procMout: "Unmasked" };
    bad.spec.template.spec.serviceAccount = "loop";
    bad.spec.volumeClaimTemplates[0].spec.acessModes = ["ReadWriteOnce"];
    expect(unknownFields(bad)).toEqual([
      "spec.template.spec.containers[0].securityContext.procMout: no such field",
      expect.stringMatching(/^spec\.template\.spec\.serviceAccount: deprecated /),
      "spec.volumeClaimTemplates[0].spec.acessModes: no such field",
    ]);
    expect(await schemaProblem({ ...sts, spec: { ...sts.spec, replicas: "one" } })).toContain("replicas must be integer");
    const enumBad = structuredClone(sts);
    enumBad.spec.template.spec.securityContext.fsGroupChangePolicy = "OnMismatch";
    expect(await schemaProblem(enumBad)).toContain("fsGroupChangePolicy must be equal to one of the allowed values");
  }, 60_000);

  test('Pod Security: the plain variant passes "restricted"; the sandbox variant passes "baseline", and fails restricted only for its unmasked /proc and its node-default seccomp', () => {
    expect(restrictedViolations(STS.plain.spec.template.spec)).toEqual([]);
    const sandboxPod = STS.sandbox.spec.template.spec;
    expect(baselineViolations(sandboxPod)).toEqual([]);
    expect(restrictedViolations(sandboxPod)).toEqual([
      "containers[0] loop: seccompProfile must be RuntimeDefault or Localhost (is unset)",
      "containers[0] loop: procMount Unmasked (restricted allows Default only)",
    ]);
    // And what each check exists for is caught.
    const p = structuredClone(STS.plain.spec.template.spec);
    delete p.securityContext.runAsNonRoot;
    p.initContainers[0].securityContext = {
      ...p.initContainers[0].securityContext,
      allowPrivilegeEscalation: true,
      capabilities: { drop: ["NET_RAW"], add: ["SYS_ADMIN"] },
    };
    p.containers[0].securityContext = { ...p.containers[0].securityContext, procMount: "Unmasked" };
    p.volumes.push({ name: "host", hostPath: { path: "/" } });
    expect(restrictedViolations(p)).toEqual(
      expect.arrayContaining([
        "initContainers[0] clone: adds capability SYS_ADMIN",
        "containers[0] loop: procMount Unmasked",
        "volume host: hostPath",
        "initContainers[0] clone: allowPrivilegeEscalation must be false",
        "initContainers[0] clone: runAsNonRoot must be true",
        "initContainers[0] clone: capabilities must drop ALL",
      ]),
    );
  });

  test("the sandbox variant is the plain one but for the sandbox's needs: its own user namespace, an unmasked /proc for loop, seccomp per container", () => {
    const expected = structuredClone(STS.plain);
    const p = expected.spec.template.spec;
    p.hostUsers = false;
    const seccomp = p.securityContext.seccompProfile;
    delete p.securityContext.seccompProfile;
    for (const c of p.initContainers) c.securityContext = { ...c.securityContext, seccompProfile: seccomp };
    p.containers[0].securityContext = { ...p.containers[0].securityContext, procMount: "Unmasked" };
    expect(STS.sandbox).toEqual(expected);
    // It says what the cluster needs, and that loop.json must put the agents in the sandbox.
    const text = readFileSync(join(K8S, "statefulset-sandbox.yaml"), "utf8");
    for (const s of ['"defaults": {"sandbox": "bwrap"}', "hostUsers", "procMount: Unmasked", "seccomp", '"baseline"']) expect(text).toContain(s);
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

  test("the volume: one pod at a time (ReadWriteOncePod), a storage class named (never the default's, which may be NFS), chgrp'ed only on a mismatch; nothing claims a guarantee the spec lacks", () => {
    const claim = sts.spec.volumeClaimTemplates[0].spec;
    expect(claim.accessModes).toEqual(["ReadWriteOncePod"]);
    expect(typeof claim.storageClassName).toBe("string");
    expect(pod.securityContext.fsGroupChangePolicy).toBe("OnRootMismatch");
    // No Service exists to govern it, and OrderedReady promises nothing at one replica.
    expect(sts.spec.serviceName).toBeUndefined();
    expect(sts.spec.podManagementPolicy).toBeUndefined();
  });

  test("each container is bounded (requests, a memory limit), the loop and Litestream report readiness, and nothing restarts the loop container (that would be a drain)", () => {
    for (const { variant, pod: p } of podsOf()) {
      for (const c of allContainers(p))
        expect({ variant, c: c.name, requests: Object.keys(c.resources?.requests ?? {}).sort(), memory: typeof c.resources?.limits?.memory }).toEqual({
          variant,
          c: c.name,
          requests: ["cpu", "memory"],
          memory: "string",
        });
      const l = p.containers.find((c: any) => c.name === "loop");
      expect(l.readinessProbe.exec.command.slice(0, 2)).toEqual(["loop", "status"]);
      expect(loopArgs(l.readinessProbe.exec.command).tool).toBe("status");
      expect(l.livenessProbe).toBeUndefined();
      expect(p.initContainers.find((c: any) => c.name === "litestream").readinessProbe.exec.command.slice(0, 2)).toEqual(["litestream", "snapshots"]);
    }
  });

  test("a read-only root file system, with emptyDirs where agents write outside their worktrees: /tmp and the home of the image's user", () => {
    const home = /useradd [^\n]*--create-home[^\n]* loop\b/.test(readFileSync(join(REPO, "deploy", "container", "Containerfile"), "utf8"))
      ? "/home/loop"
      : null;
    expect(home).toBe("/home/loop");
    for (const { pod: p } of podsOf()) {
      for (const c of allContainers(p)) expect({ c: c.name, ro: c.securityContext.readOnlyRootFilesystem }).toEqual({ c: c.name, ro: true });
      const l = p.containers.find((c: any) => c.name === "loop");
      const mounts = Object.fromEntries(l.volumeMounts.map((m: any) => [m.mountPath, p.volumes.find((v: any) => v.name === m.name)]));
      expect(mounts["/tmp"]?.emptyDir).toEqual({});
      expect(mounts[home!]?.emptyDir).toEqual({});
    }
  });

  test("drains: the grace period is what the watcher needs on SIGTERM (as loop-watch@'s TimeoutStopSec), the autoscaler leaves the pod be, the optional budget selects its pods, no service-account token in the pod", () => {
    const stop = one(units["loop-watch@.service"]!, "Service", "TimeoutStopSec");
    const seconds = Number(/^(\d+)min$/.exec(stop)![1]) * 60;
    for (const { variant, pod: p } of podsOf()) {
      expect({ variant, grace: p.terminationGracePeriodSeconds }).toEqual({ variant, grace: seconds });
      expect(p.automountServiceAccountToken).toBe(false);
    }
    expect(sts.spec.template.metadata.annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"]).toBe("false");
    const pdb = byKind("PodDisruptionBudget")[0]!;
    expect(pdb.spec.selector.matchLabels).toEqual(sts.spec.selector.matchLabels);
    expect({ maxUnavailable: pdb.spec.maxUnavailable, unhealthy: pdb.spec.unhealthyPodEvictionPolicy }).toEqual({
      maxUnavailable: 0,
      unhealthy: "AlwaysAllow",
    });
  });

  test("the container runs loop run --watch --forever under the image's entrypoint (args, not command: tini stays PID 1), flags as loop run parses them", () => {
    expect(loop.command).toBeUndefined();
    const { tool, args } = loopArgs(loop.args);
    expect(tool).toBe("run");
    expect(args).toMatchObject({ watch: true, forever: true });
  });

  test("each container gets only its own keys: the clone the token, Litestream the replica's, loop the token and the model keys; never a whole Secret", () => {
    const KEYS: Record<string, string[]> = {
      clone: ["loop-api/GITHUB_TOKEN"],
      restore: ["loop-api-replica/LITESTREAM_ACCESS_KEY_ID", "loop-api-replica/LITESTREAM_SECRET_ACCESS_KEY"],
      litestream: ["loop-api-replica/LITESTREAM_ACCESS_KEY_ID", "loop-api-replica/LITESTREAM_SECRET_ACCESS_KEY"],
      loop: ["loop-api/ANTHROPIC_API_KEY", "loop-api/GITHUB_TOKEN", "loop-api/OPENAI_API_KEY"],
    };
    for (const { variant, pod: p } of podsOf())
      for (const c of allContainers(p)) {
        expect({ variant, c: c.name, envFrom: c.envFrom }).toEqual({ variant, c: c.name, envFrom: undefined });
        const refs = (c.env ?? [])
          .filter((e: any) => e.valueFrom?.secretKeyRef)
          .map((e: any) => `${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`);
        expect({ variant, c: c.name, refs: refs.sort() }).toEqual({ variant, c: c.name, refs: KEYS[c.name] });
        for (const e of c.env ?? []) {
          // Each variable is named as its key: loop and Litestream read those names.
          if (e.valueFrom?.secretKeyRef) {
            expect(e.name).toBe(e.valueFrom.secretKeyRef.key);
            expect(Object.keys(secretNamed(e.valueFrom.secretKeyRef.name).stringData)).toContain(e.name);
          }
          if (e.name.startsWith("LOOP_")) expect({ name: e.name, read: loopReads(e.name) }).toEqual({ name: e.name, read: true });
        }
        // No Secret mounted as files anywhere: what is on disk, every process of the pod could read.
        expect(p.volumes.filter((v: any) => v.secret || v.projected)).toEqual([]);
      }
  });

  test("no token in a URL: the clone authenticates through a credential helper of that one command, so .git/config never holds it", () => {
    // No container's command or arguments carry credentials in a URL.
    for (const c of [...pod.initContainers, ...pod.containers])
      expect({ c: c.name, userinfo: [...(c.command ?? []), ...(c.args ?? [])].filter((a: string) => /:\/\/[^/\s]*@/.test(a)) }).toEqual({
        c: c.name,
        userinfo: [],
      });
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

  test("Litestream: a native sidecar and a restore before it, both on the store's own path, at the pinned version, the ConfigMap mounted as a folder (a subPath never sees an edit)", () => {
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
      const configPath = c.args[c.args.indexOf("-config") + 1] as string;
      const cfg = c.volumeMounts.find((m: { mountPath: string }) => configPath.startsWith(m.mountPath + "/"));
      expect(cfg.subPath).toBeUndefined();
      expect(join(cfg.mountPath, "litestream.yml")).toBe(configPath);
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
