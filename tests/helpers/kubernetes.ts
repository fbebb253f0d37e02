// Kubernetes manifests held to the official API (tests/deploy/manifests.test.ts), offline:
//   - `kubernetes-models` (generated from Kubernetes' own OpenAPI description) validates each object
//     with its compiled schema: types, enums, required fields, formats;
//   - the same package's declarations, read with the TypeScript checker, give every object's fields,
//     so a field the API does not have (a typo, a field of another version) or one it calls deprecated
//     is named with its path: Kubernetes' schema allows unknown fields, and the API server drops them
//     without a word (that is how a misspelt securityContext field ships);
//   - Pod Security Standards (baseline, restricted), the checks of the published standard
//     (kubernetes.io/docs/concepts/security/pod-security-standards, as of Kubernetes 1.35), for the
//     pod template a workload carries.
import ts from "typescript";
import { join } from "node:path";
import { REPO } from "./cli.ts";

/** The models of the kinds the manifests use: the module that exports each, and its interface. */
const KINDS: Record<string, { module: string; name: string; iface: string }> = {
  "apps/v1 StatefulSet": { module: "kubernetes-models/apps/v1/StatefulSet", name: "StatefulSet", iface: "IStatefulSet" },
  "v1 Secret": { module: "kubernetes-models/v1/Secret", name: "Secret", iface: "ISecret" },
  "v1 ConfigMap": { module: "kubernetes-models/v1/ConfigMap", name: "ConfigMap", iface: "IConfigMap" },
  "policy/v1 PodDisruptionBudget": { module: "kubernetes-models/policy/v1/PodDisruptionBudget", name: "PodDisruptionBudget", iface: "IPodDisruptionBudget" },
  "v1 Service": { module: "kubernetes-models/v1/Service", name: "Service", iface: "IService" },
};

export const KNOWN_KINDS = Object.keys(KINDS);

/** Validate with the package's compiled schema: the error's words, or null. */
export async function schemaProblem(doc: { apiVersion?: string; kind?: string; [k: string]: unknown }): Promise<string | null> {
  const k = KINDS[`${doc.apiVersion} ${doc.kind}`];
  if (!k) return `no model for ${doc.apiVersion} ${doc.kind}`;
  const mod = (await import(k.module)) as Record<string, new (d: unknown) => { validate(): void }>;
  try {
    new mod[k.name]!(doc).validate();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

let checker: { checker: ts.TypeChecker; types: Record<string, ts.Type> } | null = null;

/** The TypeScript checker over a file importing each kind's interface (built once, ~1 s). */
function typesOf(): { checker: ts.TypeChecker; types: Record<string, ts.Type> } {
  if (checker) return checker;
  const entry = join(REPO, "tests", "helpers", "__kubernetes_kinds__.ts");
  const text = Object.entries(KINDS)
    .map(([, k], i) => `import type { ${k.iface} as K${i} } from "${k.module}";\nexport type T${i} = K${i};`)
    .join("\n");
  // No default library (parsing it is most of the cost): the few global types the declarations use.
  const lib = join(REPO, "tests", "helpers", "__kubernetes_lib__.d.ts");
  const libText = [
    "interface Array<T> { length: number; [n: number]: T; }",
    "interface ReadonlyArray<T> { readonly length: number; readonly [n: number]: T; }",
    "interface Boolean {} interface Function {} interface CallableFunction {} interface NewableFunction {}",
    "interface IArguments {} interface Number {} interface Object {} interface RegExp {} interface String {} interface Symbol {}",
    "interface Promise<T> {} type Record<K extends keyof any, T> = { [P in K]: T }; type Partial<T> = { [P in keyof T]?: T[P] };",
    "type Pick<T, K extends keyof T> = { [P in K]: T[P] }; type Omit<T, K extends keyof any> = Pick<T, Exclude<keyof T, K>>; type Exclude<T, U> = T extends U ? never : T;",
  ].join("\n");
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    strict: true,
    noEmit: true,
    types: [],
    noLib: true,
    skipLibCheck: true,
  };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) =>
    name === entry ? ts.createSourceFile(name, text, lang) : name === lib ? ts.createSourceFile(name, libText, lang) : read(name, lang, ...rest);
  const program = ts.createProgram([lib, entry], options, host);
  const c = program.getTypeChecker();
  const sf = program.getSourceFile(entry)!;
  const types: Record<string, ts.Type> = {};
  const names = Object.keys(KINDS);
  for (const st of sf.statements) if (ts.isTypeAliasDeclaration(st)) types[names[Number(st.name.text.slice(1))]!] = c.getTypeAtLocation(st.name);
  for (const n of names)
    if (!types[n] || (types[n]!.flags & ts.TypeFlags.Any) !== 0) throw new Error(`the declarations of ${n} did not resolve (kubernetes-models installed?)`);
  return (checker = { checker: c, types });
}

/** How the API's descriptions mark a deprecated field ("Deprecated: use …", "DEPRECATED", "…is deprecated"). */
const DEPRECATED = /^Deprecated\b|\bDeprecated:|DEPRECATED|\bis deprecated\b/m;

/**
 * Every field of `doc` the API does not have, or calls deprecated, with its path (`spec.template.spec.containers[0].securityContext.procMout`).
 * Walked against the declared types: objects by their properties, arrays by their element, maps by their values.
 */
export function unknownFields(doc: { apiVersion?: string; kind?: string; [k: string]: unknown }): string[] {
  const { checker: c, types } = typesOf();
  const root = types[`${doc.apiVersion} ${doc.kind}`];
  if (!root) return [`(no model for ${doc.apiVersion} ${doc.kind})`];
  const out: string[] = [];
  const walk = (value: unknown, type: ts.Type, path: string): void => {
    const t = c.getNonNullableType(type);
    if (t.isUnion()) {
      // IntOrString, Quantity and enums are unions of primitives: nothing below them.
      const objects = t.types.filter((m) => (m.flags & ts.TypeFlags.Object) !== 0);
      if (objects.length === 0) return;
      return walk(value, objects[0]!, path);
    }
    if ((t.flags & ts.TypeFlags.Object) === 0 || value === null || typeof value !== "object") return;
    if (c.isArrayType(t)) {
      const el = c.getTypeArguments(t as ts.TypeReference)[0]!;
      if (Array.isArray(value)) value.forEach((v, i) => walk(v, el, `${path}[${i}]`));
      return;
    }
    const index = c.getIndexInfoOfType(t, ts.IndexKind.String);
    const props = c.getPropertiesOfType(t);
    if (index && props.length === 0) {
      for (const [k, v] of Object.entries(value)) walk(v, index.type, `${path}[${JSON.stringify(k)}]`);
      return;
    }
    for (const [k, v] of Object.entries(value)) {
      const here = path ? `${path}.${k}` : k;
      const prop = t.getProperty(k);
      if (!prop) {
        out.push(`${here}: no such field`);
        continue;
      }
      const docText = ts.displayPartsToString(prop.getDocumentationComment(c));
      if (DEPRECATED.test(docText)) out.push(`${here}: deprecated (${docText.split("\n")[0]!.slice(0, 120)})`);
      walk(v, c.getTypeOfSymbol(prop), here);
    }
  };
  walk(doc, root, "");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Pod Security Standards

type Any = Record<string, any>;

const BASELINE_CAPABILITIES = [
  "AUDIT_WRITE",
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "KILL",
  "MKNOD",
  "NET_BIND_SERVICE",
  "SETFCAP",
  "SETGID",
  "SETPCAP",
  "SETUID",
  "SYS_CHROOT",
];
const SAFE_SYSCTLS = [
  "kernel.shm_rmid_forced",
  "net.ipv4.ip_local_port_range",
  "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.tcp_syncookies",
  "net.ipv4.ping_group_range",
  "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
];
const RESTRICTED_VOLUMES = ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret", "image"];
const SELINUX_TYPES = ["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];

/** Every container of a pod spec, with where it is. */
function containers(pod: Any): { where: string; c: Any }[] {
  return (["initContainers", "containers", "ephemeralContainers"] as const).flatMap((k) =>
    (pod[k] ?? []).map((c: Any, i: number) => ({ where: `${k}[${i}] ${c.name}`, c })),
  );
}

/** What the pod spec breaks of Pod Security "baseline" (1.35), one line per violation. */
export function baselineViolations(pod: Any): string[] {
  const out: string[] = [];
  const userns = pod.hostUsers === false;
  for (const k of ["hostNetwork", "hostPID", "hostIPC"]) if (pod[k]) out.push(`${k}: must be false`);
  if (pod.securityContext?.windowsOptions?.hostProcess) out.push("securityContext.windowsOptions.hostProcess");
  for (const v of pod.volumes ?? []) if (v.hostPath) out.push(`volume ${v.name}: hostPath`);
  const seLinux = (o: Any | undefined, where: string) => {
    if (!o) return;
    if (!SELINUX_TYPES.includes(o.type ?? "")) out.push(`${where}: seLinuxOptions.type ${o.type}`);
    if (o.user || o.role) out.push(`${where}: seLinuxOptions.user/role`);
  };
  seLinux(pod.securityContext?.seLinuxOptions, "pod");
  if (pod.securityContext?.seccompProfile?.type === "Unconfined") out.push("pod: seccompProfile Unconfined");
  if (pod.securityContext?.appArmorProfile?.type === "Unconfined") out.push("pod: appArmorProfile Unconfined");
  for (const s of pod.securityContext?.sysctls ?? []) if (!SAFE_SYSCTLS.includes(s.name)) out.push(`sysctl ${s.name}`);
  for (const { where, c } of containers(pod)) {
    const sc = c.securityContext ?? {};
    if (sc.privileged) out.push(`${where}: privileged`);
    if (sc.windowsOptions?.hostProcess) out.push(`${where}: hostProcess`);
    for (const cap of sc.capabilities?.add ?? []) if (!BASELINE_CAPABILITIES.includes(cap)) out.push(`${where}: adds capability ${cap}`);
    for (const p of c.ports ?? []) if (p.hostPort) out.push(`${where}: hostPort ${p.hostPort}`);
    // 1.35: an unmasked /proc is allowed in a pod with its own user namespace.
    if (sc.procMount && sc.procMount !== "Default" && !(sc.procMount === "Unmasked" && userns)) out.push(`${where}: procMount ${sc.procMount}`);
    if (sc.seccompProfile?.type === "Unconfined") out.push(`${where}: seccompProfile Unconfined`);
    if (sc.appArmorProfile?.type === "Unconfined") out.push(`${where}: appArmorProfile Unconfined`);
    seLinux(sc.seLinuxOptions, where);
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe, c.lifecycle?.postStart, c.lifecycle?.preStop])
      if (probe?.httpGet?.host || probe?.tcpSocket?.host) out.push(`${where}: a probe or lifecycle handler names a host`);
  }
  return out;
}

/** What the pod spec breaks of Pod Security "restricted" (1.35): baseline's, then restricted's own. */
export function restrictedViolations(pod: Any): string[] {
  const out = baselineViolations(pod);
  const userns = pod.hostUsers === false;
  for (const v of pod.volumes ?? []) {
    const kind = Object.keys(v).find((k) => k !== "name");
    if (!kind || !RESTRICTED_VOLUMES.includes(kind)) out.push(`volume ${v.name}: ${kind} is not a restricted volume type`);
  }
  const podSc = pod.securityContext ?? {};
  for (const { where, c } of containers(pod)) {
    const sc = c.securityContext ?? {};
    if (sc.allowPrivilegeEscalation !== false) out.push(`${where}: allowPrivilegeEscalation must be false`);
    // 1.35: runAsNonRoot and runAsUser are not checked in a pod with its own user namespace.
    if (!userns && (sc.runAsNonRoot ?? podSc.runAsNonRoot) !== true) out.push(`${where}: runAsNonRoot must be true`);
    if (!userns && (sc.runAsUser ?? podSc.runAsUser) === 0) out.push(`${where}: runAsUser 0`);
    const seccomp = (sc.seccompProfile ?? podSc.seccompProfile)?.type;
    if (seccomp !== "RuntimeDefault" && seccomp !== "Localhost")
      out.push(`${where}: seccompProfile must be RuntimeDefault or Localhost (is ${seccomp ?? "unset"})`);
    if (!(sc.capabilities?.drop ?? []).includes("ALL")) out.push(`${where}: capabilities must drop ALL`);
    for (const cap of sc.capabilities?.add ?? []) if (cap !== "NET_BIND_SERVICE") out.push(`${where}: adds capability ${cap}`);
    if (sc.procMount && sc.procMount !== "Default") out.push(`${where}: procMount ${sc.procMount} (restricted allows Default only)`);
  }
  return out;
}
