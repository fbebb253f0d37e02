// What a release binary is, read from its ELF header: the architecture, the program interpreter
// (which names the libc: /lib/ld-musl-… or glibc's ld-linux-…) and the shared libraries it needs.
// It checks the builds this machine cannot run (the musl ones; arm64 without qemu) and holds the
// docs' "Alpine needs libstdc++" to the binary. Only 64-bit little-endian ELF, as every target is.

export interface ElfInfo {
  machine: string;
  /** PT_INTERP, or null for a static binary. */
  interpreter: string | null;
  /** DT_NEEDED entries, in order. */
  needed: string[];
}

const MACHINES: Record<number, string> = { 0x3e: "x86-64", 0xb7: "aarch64" };
const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const PT_INTERP = 3;
const DT_NULL = 0n;
const DT_NEEDED = 1n;
const DT_STRTAB = 5n;

/** Reads the header of a 64-bit little-endian ELF file; throws, saying why, on anything else. */
export function readElf(bytes: Uint8Array): ElfInfo {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 64 || bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46) throw new Error("not an ELF file");
  if (bytes[4] !== 2 || bytes[5] !== 1) throw new Error(`not a 64-bit little-endian ELF file (class ${bytes[4]}, data ${bytes[5]})`);
  const e = view.getUint16(0x12, true);
  const machine = MACHINES[e] ?? `machine 0x${e.toString(16)}`;
  const phoff = Number(view.getBigUint64(0x20, true));
  const phentsize = view.getUint16(0x36, true);
  const phnum = view.getUint16(0x38, true);
  if (phoff + phnum * phentsize > bytes.length) throw new Error("program headers run past the end of the file");

  const cstring = (at: number, end = bytes.length) => {
    let stop = at;
    while (stop < end && bytes[stop] !== 0) stop++;
    if (stop >= end) throw new Error(`unterminated string at offset ${at}`);
    return new TextDecoder().decode(bytes.subarray(at, stop));
  };
  const headers = Array.from({ length: phnum }, (_, i) => {
    const at = phoff + i * phentsize;
    return {
      type: view.getUint32(at, true),
      offset: Number(view.getBigUint64(at + 8, true)),
      vaddr: view.getBigUint64(at + 16, true),
      filesz: Number(view.getBigUint64(at + 32, true)),
    };
  });
  const interp = headers.find((h) => h.type === PT_INTERP);
  const interpreter = interp ? cstring(interp.offset, interp.offset + interp.filesz) : null;

  const needed: string[] = [];
  const dyn = headers.find((h) => h.type === PT_DYNAMIC);
  if (dyn) {
    const entries: [bigint, bigint][] = [];
    for (let at = dyn.offset; at + 16 <= dyn.offset + dyn.filesz; at += 16) {
      const tag = view.getBigInt64(at, true);
      if (tag === DT_NULL) break;
      entries.push([tag, view.getBigUint64(at + 8, true)]);
    }
    const strtab = entries.find(([t]) => t === DT_STRTAB)?.[1];
    if (strtab === undefined) throw new Error("dynamic section without a string table");
    // DT_STRTAB is an address: the loadable segment that maps it says where it is in the file.
    const seg = headers.find((h) => h.type === PT_LOAD && strtab >= h.vaddr && strtab < h.vaddr + BigInt(h.filesz));
    if (!seg) throw new Error("the dynamic string table is in no loadable segment");
    const base = seg.offset + Number(strtab - seg.vaddr);
    for (const [t, v] of entries) if (t === DT_NEEDED) needed.push(cstring(base + Number(v)));
  }
  return { machine, interpreter, needed };
}
