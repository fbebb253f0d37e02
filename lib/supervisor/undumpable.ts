// Make this process undumpable (prctl PR_SET_DUMPABLE 0): another process of the same user can
// then no longer read its memory (/proc/<pid>/mem, ptrace), its environment or its descriptors.
// The verify's wrapper holds its proof secrets in memory while the command it started (code the
// agent wrote) runs as the same user (verify-command.ts). Root is not held back, nor is anything on
// a system where libc cannot be loaded: false then, and the secrets are as safe as yama's
// ptrace_scope makes them (docs/forge.md#what-the-agent-can-reach-and-what-it-cannot).
const PR_SET_DUMPABLE = 4;

export async function makeUndumpable(): Promise<boolean> {
  try {
    const { dlopen, FFIType } = await import("bun:ffi");
    for (const name of ["libc.so.6", "libc.so"]) {
      try {
        const lib = dlopen(name, { prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 } });
        const ok = lib.symbols.prctl(PR_SET_DUMPABLE, 0n, 0n, 0n, 0n) === 0;
        lib.close();
        return ok;
      } catch {
        // not this name: try the next
      }
    }
  } catch {
    // no FFI here
  }
  return false;
}
