// The runner image recipe (deploy/container/Containerfile, docs/operations.md#a-runner-image). No
// container engine runs here, so the file is parsed (its instructions, continuations and exec
// forms), its shell is checked by sh -n, and what it installs is held to the release (the archive's
// name and layout, the checksum before the unpacking), to loop (its runners, its tools, loop run's
// own flags) and to the StatefulSet that runs it (the uid, the command).
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allArgs, parseArgv } from "../../lib/shared/cli.ts";
import { PRESETS } from "../../lib/definition/runners.ts";
import { tool as runTool } from "../../cmd/loop-run.ts";
import { VERSION } from "../../lib/shared/version.ts";
import { artifactName, artifactStem, TARGETS } from "../../scripts/release/targets.ts";
import { REPO } from "../helpers/project.ts";
import { testEnv } from "../helpers/env.ts";

const PATH = "deploy/container/Containerfile";
const TEXT = readFileSync(join(REPO, PATH), "utf8");

interface Instruction {
  line: number;
  op: string;
  args: string;
  /** The exec (JSON) form's argv, or null for the shell form. */
  exec: string[] | null;
}

const OPS = new Set(["FROM", "ARG", "ENV", "COPY", "RUN", "USER", "WORKDIR", "ENTRYPOINT", "CMD", "LABEL"]);

/** The instructions, as an engine reads them: comments and blank lines dropped, `\` continuations joined. */
function parseContainerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const start = i + 1;
    let line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    while (line.endsWith("\\")) {
      line = line.slice(0, -1);
      // Comment lines inside a continued instruction are dropped too.
      do i++;
      while (i < lines.length && lines[i]!.trim().startsWith("#"));
      if (i >= lines.length) throw new Error(`${PATH}:${start}: a continuation runs past the end of the file`);
      line += " " + lines[i]!.trim();
    }
    const m = /^([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m || !OPS.has(m[1]!.toUpperCase())) throw new Error(`${PATH}:${start}: not an instruction this recipe uses: ${line}`);
    const args = m[2]!.trim();
    out.push({ line: start, op: m[1]!.toUpperCase(), args, exec: args.startsWith("[") ? (JSON.parse(args) as string[]) : null });
  }
  return out;
}

const INSTRUCTIONS = parseContainerfile(TEXT);
/** ARG name → default (null when it has none), before the first FROM. */
const args = (list: Instruction[]) =>
  Object.fromEntries(
    list
      .filter((i) => i.op === "ARG")
      .map((i) => {
        const [name, ...value] = i.args.split("=");
        return [name!, i.args.includes("=") ? value.join("=") : null];
      }),
  ) as Record<string, string | null>;
const firstFrom = INSTRUCTIONS.findIndex((i) => i.op === "FROM");
const GLOBAL = args(INSTRUCTIONS.slice(0, firstFrom));
/** The stages, each its FROM and what follows it. */
const STAGES = INSTRUCTIONS.flatMap((ins, n) => (ins.op === "FROM" ? [n] : [])).map((start, k, starts) => {
  const body = INSTRUCTIONS.slice(start, starts[k + 1]);
  const [image, as, name] = body[0]!.args.split(/\s+/);
  return { image: image!, name: as?.toUpperCase() === "AS" ? name! : null, body, args: args(body) };
});
const FINAL = STAGES.at(-1)!;
const BUILDER = STAGES.find((s) => s.name === "loop")!;
const AGENTS = STAGES.find((s) => s.name === "agents")!;
const sub = (s: string, vars: Record<string, string | null>) => s.replace(/\$\{(\w+)\}/g, (_, v: string) => vars[v] ?? `<unset ${v}>`);
const runs = (stage: typeof FINAL) => stage.body.filter((i) => i.op === "RUN").map((i) => i.args);

const STS = Bun.YAML.parse(readFileSync(join(REPO, "deploy/kubernetes/statefulset.yaml"), "utf8")) as any;
const POD = STS.spec.template.spec;
const LOOP_CONTAINER = POD.containers.find((c: { name: string }) => c.name === "loop");

describe("the Containerfile", () => {
  test("parses: every line is an instruction, exec forms are JSON; the binary's stage and the image on Debian slim, the npm CLIs' on Node's own", () => {
    expect(INSTRUCTIONS.length).toBeGreaterThan(10);
    expect(STAGES.map((s) => s.name)).toEqual(["loop", "agents", null]);
    for (const s of [BUILDER, FINAL]) expect(sub(s.image, GLOBAL)).toMatch(/^debian:[a-z]+-slim(@sha256:[0-9a-f]{64})?$/);
    expect(sub(AGENTS.image, GLOBAL)).toMatch(/^node:\d+-[a-z]+-slim(@sha256:[0-9a-f]{64})?$/);
  });

  test("Node meets Claude Code's engine (>= 22: Debian trixie's 20 does not), and the image keeps Claude Code's native binary, not Node or npm", () => {
    // @anthropic-ai/claude-code's package.json: "engines": { "node": ">=22.0.0" }; it installs a native binary.
    expect(Number(/^node:(\d+)-/.exec(sub(AGENTS.image, GLOBAL))![1])).toBeGreaterThanOrEqual(22);
    const install = runs(AGENTS).join("\n");
    expect(install).toContain('head -c 4 "$claude" | grep -q ELF');
    expect(install).toContain('install -m 755 "$claude" /opt/agents/bin/claude');
    // Debian's node and npm are not installed in the image (npm alone brings hundreds of packages).
    expect(runs(FINAL).join("\n")).not.toMatch(/install[^&]*\b(nodejs|npm)\b/);
    const copies = FINAL.body.filter((i) => i.op === "COPY").map((i) => i.args);
    expect(copies).toEqual(expect.arrayContaining(["--from=agents /opt/agents /opt/agents"]));
    const path = FINAL.body.find((i) => i.op === "ENV")!.args;
    expect(path).toMatch(/^PATH=\/opt\/agents\/bin:/);
  });

  test("a TLS-intercepting proxy's CA (EXTRA_CA_CERT, empty by default) is trusted by every stage that downloads, before it downloads, and by the image", () => {
    expect(GLOBAL.EXTRA_CA_CERT).toBe("");
    for (const stage of [AGENTS, FINAL]) {
      expect(stage.args).toHaveProperty("EXTRA_CA_CERT");
      const run = runs(stage).join("\n");
      const trust = run.indexOf('if [ -n "${EXTRA_CA_CERT}" ]');
      expect(trust).toBeGreaterThan(-1);
      for (const download of ["npm install", "pip install"]) {
        const at = run.indexOf(download);
        if (at >= 0) expect({ download, after: at > trust }).toEqual({ download, after: true });
      }
    }
    // apt fetches over plain HTTP (signed): ca-certificates comes first, then the extra CA joins its store.
    const apt = runs(FINAL).find((r) => r.includes("apt-get install"))!;
    expect(apt.indexOf("update-ca-certificates")).toBeGreaterThan(apt.indexOf("ca-certificates git"));
    const env = FINAL.body.find((i) => i.op === "ENV")!.args;
    for (const v of ["NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"]) expect(env).toContain(`${v}=/etc/ssl/certs/ca-certificates.crt`);
    // The PEM travels whole: the shell writes the variable, never a line of the Containerfile.
    const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
    const dir = mkdtempSync(join(tmpdir(), "loop-ca-"));
    try {
      const line = /printf '%s\\n' "\$\{EXTRA_CA_CERT\}" > \/usr\/local\/share\/ca-certificates\/extra-ca\.crt/
        .exec(runs(FINAL).join("\n"))![0]!
        .replace("/usr/local/share/ca-certificates", dir);
      const r = Bun.spawnSync(["sh", "-c", line], { env: testEnv({ EXTRA_CA_CERT: pem }) });
      expect(r.exitCode).toBe(0);
      expect(readFileSync(join(dir, "extra-ca.crt"), "utf8")).toBe(pem + "\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("every RUN is shell that sh parses (sh -n)", () => {
    for (const r of INSTRUCTIONS.filter((i) => i.op === "RUN")) {
      const p = Bun.spawnSync(["sh", "-n", "-c", r.args], { env: testEnv(), stderr: "pipe" });
      expect({ line: r.line, code: p.exitCode, err: p.stderr.toString() }).toEqual({ line: r.line, code: 0, err: "" });
    }
  });

  test("the binary comes from a release archive, checked against LOOP_SHA256 (required) before it is unpacked", () => {
    expect(BUILDER.args).toEqual({ LOOP_VERSION: null, LOOP_TARGET: expect.any(String), LOOP_SHA256: null });
    const target = BUILDER.args.LOOP_TARGET!;
    expect(TARGETS.map((t) => t.name)).toContain(target);
    const vars = { ...BUILDER.args, LOOP_VERSION: VERSION };
    const copy = BUILDER.body.find((i) => i.op === "COPY")!.args.split(/\s+/);
    expect(sub(copy[0]!, vars)).toBe(artifactName(VERSION, target));
    const [run] = runs(BUILDER);
    expect(runs(BUILDER)).toHaveLength(1);
    expect(run).toMatch(/if \[ -z "\$\{LOOP_SHA256\}" \]; then .* exit 1; fi/);
    const check = run!.indexOf("sha256sum --check --strict");
    expect(check).toBeGreaterThan(-1);
    expect(check).toBeLessThan(run!.indexOf("tar -xzf"));
    // The archive's layout: loop-<version>-<target>/loop (scripts/release.ts).
    expect(sub(run!, vars)).toContain(`install -m 755 "/tmp/${artifactStem(VERSION, target)}/loop" /usr/local/bin/loop`);
  });

  test("the image: git, tmux, bubblewrap and tini from Debian, loop and its links on the PATH", () => {
    const apt = runs(FINAL).find((r) => r.includes("apt-get install"))!;
    const first = /apt-get install -y --no-install-recommends ([^&]+)/.exec(apt)![1]!.trim().split(/\s+/);
    expect(first).toEqual(expect.arrayContaining(["git", "tmux", "bubblewrap", "tini", "ca-certificates"]));
    expect(apt).toContain("rm -rf /var/lib/apt/lists/*"); // in the same layer as the install
    expect(FINAL.body.filter((i) => i.op === "COPY").map((i) => i.args)).toContain("--from=loop /usr/local/bin/loop /usr/local/bin/loop");
    // The links (their tool list is held to the contract with the README's: tests/scripts/release.test.ts).
    expect(runs(FINAL).some((r) => /ln -sf loop \/usr\/local\/bin\/loop-\$t; done\s+&& loop --version$/.test(r))).toBe(true);
  });

  test("one build argument per agent CLI loop has a runner for, empty by default, each installing its CLI", () => {
    const ARG_OF: Record<keyof typeof PRESETS, string> = {
      claude: "CLAUDE_CODE_VERSION",
      codex: "CODEX_VERSION",
      aider: "AIDER_VERSION",
      gemini: "GEMINI_CLI_VERSION",
      opencode: "OPENCODE_VERSION",
    };
    expect(Object.keys(ARG_OF).sort()).toEqual(Object.keys(PRESETS).sort());
    const install = [...runs(AGENTS), ...runs(FINAL)].join("\n");
    const PACKAGE: Record<string, string> = {
      claude: "@anthropic-ai/claude-code@",
      codex: "@openai/codex@",
      aider: "aider-chat==",
      gemini: "@google/gemini-cli@",
      opencode: "opencode-ai@",
    };
    for (const [runner, arg] of Object.entries(ARG_OF)) {
      expect({ arg, value: { ...AGENTS.args, ...FINAL.args }[arg] }).toEqual({ arg, value: "" });
      expect(install).toContain(`if [ -n "\${${arg}}" ]; then`);
      expect(install).toContain(`${PACKAGE[runner]}\${${arg}}`);
    }
  });

  test("it runs as the ordinary user the StatefulSet runs as, never root", () => {
    const user = FINAL.body.filter((i) => i.op === "USER").map((i) => i.args);
    expect(user).toHaveLength(1);
    const [uid, gid] = user[0]!.split(":").map(Number);
    expect(uid).not.toBe(0);
    expect({ uid, gid }).toEqual({ uid: POD.securityContext.runAsUser, gid: POD.securityContext.runAsGroup });
    expect(runs(FINAL).some((r) => r.includes(`useradd --uid ${uid} --user-group`))).toBe(true);
    // USER comes after every RUN that needs root.
    const userAt = FINAL.body.findIndex((i) => i.op === "USER");
    expect(FINAL.body.slice(userAt).filter((i) => i.op === "RUN")).toEqual([]);
  });

  test("tini is the entrypoint; the default command is the StatefulSet's, flags as loop run parses them", () => {
    expect(FINAL.body.find((i) => i.op === "ENTRYPOINT")!.exec).toEqual(["tini", "--"]);
    const cmd = FINAL.body.find((i) => i.op === "CMD")!.exec!;
    expect(cmd.slice(0, 2)).toEqual(["loop", "run"]);
    expect(parseArgv(cmd.slice(2), allArgs(runTool as never))).toMatchObject({ watch: true, forever: true, json: true, interval: "30s" });
    expect(cmd).toEqual(LOOP_CONTAINER.args);
  });

  test("the StatefulSet and the operations guide point at it", () => {
    expect(readFileSync(join(REPO, "deploy/kubernetes/statefulset.yaml"), "utf8")).toContain(PATH);
    expect(readFileSync(join(REPO, "docs/operations.md"), "utf8")).toContain(`(../${PATH})`);
  });
});
