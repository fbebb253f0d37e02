// The release's plain data and decisions (scripts/release.ts carries them out): which targets are
// built, what each artifact is called, what each binary must look like (its ELF header), and the
// SHA256SUMS file. Nothing here touches the disk, so tests check it without cross-compiling.
import type { ElfInfo } from "./elf.ts";

/** Why there are no macOS or Windows builds: said once, by `npm run build` and `npm run release`. */
export const LINUX_ONLY =
  "loop runs on Linux only: it tells a live process from a reused pid, and finds what an agent left running outside its session's process group, by reading /proc, and confines sessions in systemd scopes (cgroups); elsewhere it could not end what an agent leaves behind.";

export interface ReleaseTarget {
  /** The artifact's target name: `loop-<version>-<name>.tar.gz`. */
  name: string;
  /** Bun's name of the runtime embedded in the binary. */
  bun: Bun.Build.CompileTarget;
  /** Who it is for, in a few words (the release's summary). */
  for: string;
  /** What the binary's ELF header must say: architecture, program interpreter, shared libraries. */
  elf: { machine: string; interpreter: string; needed: string[] };
}

const GLIBC_LIBS = (loader: string) => ["libc.so.6", "libdl.so.2", "libm.so.6", "libpthread.so.0", loader];

/**
 * Every target, in the order they are built and listed. The default x64 runtime needs AVX2
 * (x86-64 CPUs from 2013 on); `-baseline` runs on older ones and on virtual CPUs that hide AVX2.
 * The musl builds need a musl libstdc++ beside musl's libc (Alpine: `apk add libstdc++ libgcc`).
 */
export const TARGETS: readonly ReleaseTarget[] = [
  {
    name: "linux-x64",
    bun: "bun-linux-x64",
    for: "x86-64 with AVX2, glibc 2.17+",
    elf: { machine: "x86-64", interpreter: "/lib64/ld-linux-x86-64.so.2", needed: GLIBC_LIBS("ld-linux-x86-64.so.2") },
  },
  {
    name: "linux-x64-baseline",
    bun: "bun-linux-x64-baseline",
    for: "x86-64 without AVX2, glibc 2.17+",
    elf: { machine: "x86-64", interpreter: "/lib64/ld-linux-x86-64.so.2", needed: GLIBC_LIBS("ld-linux-x86-64.so.2") },
  },
  {
    name: "linux-arm64",
    bun: "bun-linux-arm64",
    for: "arm64 (aarch64), glibc 2.17+",
    elf: { machine: "aarch64", interpreter: "/lib/ld-linux-aarch64.so.1", needed: GLIBC_LIBS("ld-linux-aarch64.so.1") },
  },
  {
    name: "linux-x64-musl",
    bun: "bun-linux-x64-musl",
    for: "x86-64 with AVX2, musl (Alpine)",
    elf: { machine: "x86-64", interpreter: "/lib/ld-musl-x86_64.so.1", needed: ["libc.musl-x86_64.so.1", "libstdc++.so.6"] },
  },
  {
    name: "linux-arm64-musl",
    bun: "bun-linux-arm64-musl",
    for: "arm64 (aarch64), musl (Alpine)",
    elf: { machine: "aarch64", interpreter: "/lib/ld-musl-aarch64.so.1", needed: ["libc.musl-aarch64.so.1", "libstdc++.so.6"] },
  },
];

const VERSION_SHAPE = /^\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$/;

/** `loop-<version>-<target>`: the archive's name without `.tar.gz`, and the folder inside it. */
export function artifactStem(version: string, target: string): string {
  // It becomes a file name and a line of SHA256SUMS: nothing but a plain version may go into it.
  if (!VERSION_SHAPE.test(version)) throw new Error(`version ${JSON.stringify(version)} is not of the form 1.2.3 or 1.2.3-rc.1`);
  return `loop-${version}-${target}`;
}

/** The artifact of one target: a gzipped tar holding `loop-<version>-<target>/loop`. */
export function artifactName(version: string, target: string): string {
  return `${artifactStem(version, target)}.tar.gz`;
}

/**
 * The targets `--target` names (each may be given once, or as a comma-separated list), all of them
 * when none; a target that is not built is refused with the reason: another OS is not supported,
 * anything else is unknown.
 */
export function selectTargets(names: string[]): { ok: true; targets: ReleaseTarget[] } | { ok: false; error: string } {
  if (names.length === 0) return { ok: true, targets: [...TARGETS] };
  const wanted = names
    .flatMap((n) => n.split(","))
    .map((n) => n.trim())
    .filter((n) => n !== "");
  const known = TARGETS.map((t) => t.name).join(", ");
  for (const n of wanted) {
    if (/^(bun-)?(darwin|macos|windows|win32|freebsd)\b/.test(n)) return { ok: false, error: `target ${n} is not built: ${LINUX_ONLY}` };
    if (!TARGETS.some((t) => t.name === n)) return { ok: false, error: `unknown target ${JSON.stringify(n)} (targets: ${known})` };
  }
  return { ok: true, targets: TARGETS.filter((t) => wanted.includes(t.name)) };
}

/** How a built binary differs from what its target must be (empty: it is right). */
export function elfMismatches(target: ReleaseTarget, elf: ElfInfo): string[] {
  const out: string[] = [];
  if (elf.machine !== target.elf.machine) out.push(`architecture ${elf.machine}, expected ${target.elf.machine}`);
  if (elf.interpreter !== target.elf.interpreter) out.push(`interpreter ${elf.interpreter ?? "none (static)"}, expected ${target.elf.interpreter}`);
  const extra = elf.needed.filter((l) => !target.elf.needed.includes(l));
  if (extra.length) out.push(`needs ${extra.join(", ")} beyond ${target.elf.needed.join(", ")}`);
  return out;
}

/**
 * SHA256SUMS as `sha256sum` writes it and `sha256sum -c` reads it: `<64 hex>  <name>` (two spaces:
 * text mode, which is binary mode on Linux), one line per artifact, sorted by name.
 */
export function formatSha256Sums(sums: { name: string; sha256: string }[]): string {
  for (const s of sums) {
    if (!/^[0-9a-f]{64}$/.test(s.sha256)) throw new Error(`not a SHA-256 digest for ${s.name}: ${s.sha256}`);
    // A newline or backslash would make sha256sum escape the name; artifact names never hold them.
    if (/[\n\\]/.test(s.name) || s.name.includes("/")) throw new Error(`artifact name ${JSON.stringify(s.name)} cannot go into SHA256SUMS`);
  }
  return [...sums]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((s) => `${s.sha256}  ${s.name}\n`)
    .join("");
}
