// The release's pure parts (scripts/release/targets.ts, elf.ts) and the README's install section
// held to them: the archive names, the checksum file (checked by the real sha256sum), the ELF
// checks (on this machine's Bun and on synthetic headers), and the install commands, run for real
// against a stand-in archive. Nothing here cross-compiles: `npm run release` runs in .ci/run.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CONTRACT_TOOLS } from "../../cmd/loop.ts";
import { VERSION } from "../../lib/shared/version.ts";
import { readElf } from "../../scripts/release/elf.ts";
import { artifactName, artifactStem, elfMismatches, formatSha256Sums, LINUX_ONLY, selectTargets, TARGETS } from "../../scripts/release/targets.ts";
import { REPO } from "../helpers/cli.ts";
import { testEnv } from "../helpers/env.ts";
import { TempDirs } from "../helpers/fs.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

const read = (path: string) => readFileSync(join(REPO, path), "utf8");

/** The lines under a markdown heading, up to the next heading of the same or a higher level. */
function section(md: string, heading: RegExp): string {
  const lines = md.split("\n");
  const start = lines.findIndex((l) => heading.test(l));
  if (start < 0) throw new Error(`no heading ${heading}`);
  const level = /^(#+)/.exec(lines[start]!)![1]!.length;
  const end = lines.findIndex((l, i) => i > start && /^(#+)\s/.test(l) && /^(#+)/.exec(l)![1]!.length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

const INSTALL = section(read("README.md"), /^##\s+Install\b/);
/** The install section's shell block. */
const INSTALL_SH = /```sh\n([\s\S]*?)```/.exec(INSTALL)![1]!;

/** The tools a `for t in …; do … ln -sf loop …loop-$t; done` line links. */
function linkedTools(text: string): string[][] {
  return [...text.matchAll(/for t in ([a-z ]+); do [^\n]*ln -sf loop [^\n]*loop-\$t; done/g)].map((m) => m[1]!.trim().split(/\s+/));
}

describe("targets and names", () => {
  test("at least the four Linux targets the issue names, each a Bun target of the same name, no other OS", () => {
    const names = TARGETS.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["linux-x64", "linux-arm64", "linux-x64-musl", "linux-arm64-musl"]));
    expect(new Set(names).size).toBe(names.length);
    for (const t of TARGETS) {
      expect(t.name.startsWith("linux-")).toBe(true);
      expect(t.bun).toBe(`bun-${t.name}` as typeof t.bun);
      // musl targets load musl's loader and need its libc and libstdc++ (the README's apk line).
      const musl = t.name.includes("musl");
      expect({ t: t.name, musl: t.elf.interpreter.includes("ld-musl-") }).toEqual({ t: t.name, musl });
      if (musl) expect(t.elf.needed).toContain("libstdc++.so.6");
    }
  });

  test("artifact names: loop-<version>-<target>.tar.gz; a version that is not plain is refused", () => {
    expect(artifactName("0.1.0", "linux-arm64")).toBe("loop-0.1.0-linux-arm64.tar.gz");
    expect(artifactStem("1.2.3-rc.1", "linux-x64-musl")).toBe("loop-1.2.3-rc.1-linux-x64-musl");
    for (const bad of ["", "1.2", "v1.2.3", "1.2.3/../x", "1.2.3 x", "1.2.3-"]) expect(() => artifactName(bad, "linux-x64")).toThrow(/is not of the form/);
  });

  test("--target: all by default, a subset in the release's order, other systems refused with the reason, unknown names refused", () => {
    expect(selectTargets([])).toEqual({ ok: true, targets: [...TARGETS] });
    const some = selectTargets(["linux-arm64-musl,linux-x64", " linux-arm64 "]);
    expect(some.ok && some.targets.map((t) => t.name)).toEqual(["linux-x64", "linux-arm64", "linux-arm64-musl"]);
    for (const other of ["darwin-arm64", "bun-darwin-x64", "windows-x64", "macos-arm64"]) {
      const r = selectTargets([other]);
      expect(r).toEqual({ ok: false, error: `target ${other} is not built: ${LINUX_ONLY}` });
    }
    expect(selectTargets(["linux-riscv64"])).toEqual({ ok: false, error: expect.stringContaining('unknown target "linux-riscv64" (targets: linux-x64,') });
  });
});

describe("SHA256SUMS", () => {
  test("the format sha256sum writes, sorted by name; `sha256sum --check --strict` accepts it and catches a changed archive", () => {
    const dir = temp.make("loop-sums-");
    const sums = ["linux-x64", "linux-arm64", "linux-x64-musl"].map((t) => {
      const name = artifactName(VERSION, t);
      const bytes = `archive for ${t}\n`;
      writeFileSync(join(dir, name), bytes);
      return { name, sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex") };
    });
    const text = formatSha256Sums(sums);
    const lines = text.split("\n");
    expect(lines.at(-1)).toBe("");
    expect(lines.slice(0, -1).map((l) => l.split("  ")[1])).toEqual(sums.map((s) => s.name).sort());
    for (const l of lines.slice(0, -1)) expect(l).toMatch(/^[0-9a-f]{64} {2}loop-\S+\.tar\.gz$/);
    writeFileSync(join(dir, "SHA256SUMS"), text);
    const check = () => Bun.spawnSync(["sha256sum", "--check", "--strict", "SHA256SUMS"], { cwd: dir, env: testEnv(), stdout: "pipe", stderr: "pipe" });
    const ok = check();
    expect({ code: ok.exitCode, out: ok.stdout.toString() }).toEqual({
      code: 0,
      out: sums
        .map((s) => `${s.name}: OK\n`)
        .sort()
        .join(""),
    });
    writeFileSync(join(dir, sums[1]!.name), "tampered\n");
    const bad = check();
    expect(bad.exitCode).toBe(1);
    expect(bad.stdout.toString()).toContain(`${sums[1]!.name}: FAILED`);
  });

  test("what cannot be a line of it is refused", () => {
    expect(() => formatSha256Sums([{ name: "loop-0.1.0-linux-x64.tar.gz", sha256: "ABC" }])).toThrow(/not a SHA-256 digest/);
    expect(() => formatSha256Sums([{ name: "../loop.tar.gz", sha256: "0".repeat(64) }])).toThrow(/cannot go into SHA256SUMS/);
    expect(() => formatSha256Sums([{ name: "a\nb", sha256: "0".repeat(64) }])).toThrow(/cannot go into SHA256SUMS/);
  });
});

/** A minimal 64-bit little-endian ELF: a loadable segment holding a string table, PT_INTERP and PT_DYNAMIC. */
function makeElf(o: { machine: number; interpreter: string | null; needed: string[] }): Uint8Array {
  const enc = new TextEncoder();
  const strtab = [0, ...o.needed.flatMap((n) => [...enc.encode(n), 0])];
  const offsets: number[] = [];
  let at = 1;
  for (const n of o.needed) {
    offsets.push(at);
    at += enc.encode(n).length + 1;
  }
  const interp = o.interpreter === null ? [] : [...enc.encode(o.interpreter), 0];
  const phnum = 3;
  const phoff = 64;
  const interpOff = phoff + phnum * 56;
  const strOff = interpOff + interp.length;
  const dynOff = Math.ceil((strOff + strtab.length) / 8) * 8;
  const dynEntries: [number, number][] = [...offsets.map((v) => [1, v] as [number, number]), [5, 0x400000 + strOff], [0, 0]];
  const size = dynOff + dynEntries.length * 16;
  const buf = new Uint8Array(size);
  const v = new DataView(buf.buffer);
  buf.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]);
  v.setUint16(0x10, 2, true); // ET_EXEC
  v.setUint16(0x12, o.machine, true);
  v.setBigUint64(0x20, BigInt(phoff), true);
  v.setUint16(0x36, 56, true);
  v.setUint16(0x38, phnum, true);
  const ph = (i: number, type: number, offset: number, vaddr: number, filesz: number) => {
    const b = phoff + i * 56;
    v.setUint32(b, type, true);
    v.setBigUint64(b + 8, BigInt(offset), true);
    v.setBigUint64(b + 16, BigInt(vaddr), true);
    v.setBigUint64(b + 32, BigInt(filesz), true);
  };
  ph(0, o.interpreter === null ? 4 /* PT_NOTE: no interpreter */ : 3, interpOff, 0x400000 + interpOff, interp.length);
  ph(1, 1, 0, 0x400000, size);
  ph(2, 2, dynOff, 0x400000 + dynOff, dynEntries.length * 16);
  buf.set(interp, interpOff);
  buf.set(strtab, strOff);
  dynEntries.forEach(([tag, val], i) => {
    v.setBigInt64(dynOff + i * 16, BigInt(tag), true);
    v.setBigUint64(dynOff + i * 16 + 8, BigInt(val), true);
  });
  return buf;
}

describe("the ELF check", () => {
  const target = (name: string) => TARGETS.find((t) => t.name === name)!;

  test("this machine's Bun (the runtime embedded in a local build) is what its glibc target needs", () => {
    const name = process.arch === "arm64" ? "linux-arm64" : "linux-x64";
    const elf = readElf(readFileSync(process.execPath));
    expect(elfMismatches(target(name), elf)).toEqual([]);
    expect(elf.needed).toContain("libc.so.6");
  });

  test("a synthetic header reads back as written; every way it can differ from its target is named", () => {
    const musl = target("linux-arm64-musl");
    const good = readElf(makeElf({ machine: 0xb7, interpreter: musl.elf.interpreter, needed: musl.elf.needed }));
    expect(good).toEqual({ machine: "aarch64", interpreter: musl.elf.interpreter, needed: musl.elf.needed });
    expect(elfMismatches(musl, good)).toEqual([]);

    // A glibc x64 binary in the arm64 musl archive: all three differences.
    const x64 = target("linux-x64");
    const wrong = readElf(makeElf({ machine: 0x3e, interpreter: x64.elf.interpreter, needed: ["libc.so.6"] }));
    expect(elfMismatches(musl, wrong)).toEqual([
      "architecture x86-64, expected aarch64",
      `interpreter ${x64.elf.interpreter}, expected ${musl.elf.interpreter}`,
      `needs libc.so.6 beyond ${musl.elf.needed.join(", ")}`,
    ]);
    // A library the docs do not name (Alpine would need more than libstdc++).
    const extra = readElf(makeElf({ machine: 0xb7, interpreter: musl.elf.interpreter, needed: [...musl.elf.needed, "libgcc_s.so.1"] }));
    expect(elfMismatches(musl, extra)).toEqual([`needs libgcc_s.so.1 beyond ${musl.elf.needed.join(", ")}`]);
    const statik = readElf(makeElf({ machine: 0xb7, interpreter: null, needed: [] }));
    expect(elfMismatches(musl, statik)).toEqual([`interpreter none (static), expected ${musl.elf.interpreter}`]);
    expect(readElf(makeElf({ machine: 0xf3, interpreter: null, needed: [] })).machine).toBe("machine 0xf3");
  });

  test("what is not a 64-bit little-endian ELF file is refused, saying why", () => {
    expect(() => readElf(new TextEncoder().encode("#!/bin/sh\necho not a binary\n".padEnd(80)))).toThrow("not an ELF file");
    const elf32 = makeElf({ machine: 0x3e, interpreter: null, needed: [] });
    elf32[4] = 1;
    expect(() => readElf(elf32)).toThrow("not a 64-bit little-endian ELF file (class 1, data 1)");
    const cut = makeElf({ machine: 0x3e, interpreter: "/lib64/ld-linux-x86-64.so.2", needed: ["libc.so.6"] }).slice(0, 100);
    expect(() => readElf(cut)).toThrow("program headers run past the end of the file");
  });
});

describe("README.md's install section is held to the release", () => {
  test("its table names exactly one archive per target, by the name the release gives it", () => {
    const named = [...INSTALL.matchAll(/`(loop-<version>-[a-z0-9-]+\.tar\.gz)`/g)].map((m) => m[1]);
    expect(named).toEqual(TARGETS.map((t) => artifactName(VERSION, t.name).replace(VERSION, "<version>")));
    // The musl rows say what Alpine needs, and only they do.
    for (const row of INSTALL.split("\n").filter((l) => l.includes("loop-<version>-")))
      expect({ row, apk: row.includes("apk add libstdc++ libgcc") }).toEqual({ row, apk: row.includes("-musl.tar.gz") });
  });

  test("its commands name this version, and link every tool of the contract (as the Containerfile does)", () => {
    expect(/^VERSION=(\S+) /m.exec(INSTALL_SH)?.[1]).toBe(VERSION);
    expect(linkedTools(INSTALL_SH)).toEqual([[...CONTRACT_TOOLS]]);
    expect(linkedTools(read("deploy/container/Containerfile"))).toEqual([[...CONTRACT_TOOLS]]);
  });

  test("every archive named anywhere in the docs and deploy/ is this version's, for a target that is built", () => {
    const files = [
      "README.md",
      ...readdirSync(join(REPO, "docs"), { recursive: true })
        .map((f) => join("docs", String(f)))
        .filter((f) => f.endsWith(".md")),
    ];
    files.push(
      ...readdirSync(join(REPO, "deploy"), { recursive: true })
        .map((f) => join("deploy", String(f)))
        .filter((f) => statSync(join(REPO, f)).isFile()),
    );
    const names = TARGETS.map((t) => t.name);
    const found: string[] = [];
    for (const f of files)
      for (const m of read(f).matchAll(/\bloop-(\d+\.\d+\.\d+[0-9A-Za-z.-]*?)-(linux-[a-z0-9]+(?:-[a-z0-9]+)*?)\.tar\.gz/g)) {
        found.push(`${f}: ${m[0]}`);
        expect({ f, version: m[1], known: names.includes(m[2]!) }).toEqual({ f, version: VERSION, known: true });
      }
    expect(found.length).toBeGreaterThan(0);
  });

  test("its commands work: the checksum line accepts the archive and refuses a changed one; the binary and links land where it says", () => {
    const dir = temp.make("loop-install-");
    const downloads = join(dir, "downloads");
    const bin = join(dir, "bin");
    mkdirSync(join(downloads, `loop-${VERSION}-linux-x64`), { recursive: true });
    mkdirSync(bin);
    // A stand-in binary: the archive's layout and the commands are what is tested here.
    const fake = join(downloads, `loop-${VERSION}-linux-x64`, "loop");
    writeFileSync(fake, '#!/bin/sh\necho "stand-in $*"\n');
    chmodSync(fake, 0o755);
    const tar = Bun.spawnSync(["tar", "-czf", artifactName(VERSION, "linux-x64"), `loop-${VERSION}-linux-x64`], { cwd: downloads, env: testEnv() });
    expect(tar.exitCode).toBe(0);
    Bun.spawnSync(["rm", "-r", `loop-${VERSION}-linux-x64`], { cwd: downloads });
    const digest = (f: string) => new Bun.CryptoHasher("sha256").update(readFileSync(join(downloads, f))).digest("hex");
    const sums = (sha: string) =>
      formatSha256Sums(TARGETS.map((t) => ({ name: artifactName(VERSION, t.name), sha256: t.name === "linux-x64" ? sha : "0".repeat(64) })));
    // As written, but into a folder of the test's instead of /usr/local/bin, and without sudo.
    const script = INSTALL_SH.replaceAll("sudo ", "").replaceAll("/usr/local/bin", bin);
    const install = () =>
      Bun.spawnSync(["bash", "-e", "-c", script], { cwd: downloads, env: testEnv({ PATH: `${bin}:${process.env.PATH}` }), stdout: "pipe", stderr: "pipe" });

    writeFileSync(join(downloads, "SHA256SUMS"), sums("f".repeat(64))); // not this archive's digest
    const refused = install();
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stdout.toString()).toContain(`${artifactName(VERSION, "linux-x64")}: FAILED`);
    expect(readdirSync(bin)).toEqual([]);

    writeFileSync(join(downloads, "SHA256SUMS"), sums(digest(artifactName(VERSION, "linux-x64"))));
    const r = install();
    expect({ code: r.exitCode, stderr: r.stderr.toString() }).toEqual({ code: 0, stderr: "" });
    expect(r.stdout.toString()).toBe(`${artifactName(VERSION, "linux-x64")}: OK\nstand-in --version --json\n`);
    expect(statSync(join(bin, "loop")).mode & 0o777).toBe(0o755);
    for (const t of CONTRACT_TOOLS) {
      expect(lstatSync(join(bin, `loop-${t}`)).isSymbolicLink()).toBe(true);
      expect(readlinkSync(join(bin, `loop-${t}`))).toBe("loop");
    }
    expect(existsSync(join(bin, "loop-status"))).toBe(true);
  });
});
