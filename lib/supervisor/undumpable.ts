// Make this process undumpable (prctl PR_SET_DUMPABLE 0): another process of the same user can
// then no longer read its memory (/proc/<pid>/mem, ptrace), its environment (/proc/<pid>/environ,
// whose files become root's) or its descriptors. Every long or key-holding process of loop's does it
// first: `loop run` (a step and the watcher) and `loop serve`, whose environment holds what the
// operator's shell or unit gave them, loop's keys included; the session wrapper, which holds what it is
// handed privately (a verify's proof secrets, the gateway's keys: the gateway runs in it). The agent
// runs as the same user (docs/threat-model.md#where-each-secret-lives). Root is not held back (with
// CAP_SYS_PTRACE it reads any process), nor is anything on a system where libc cannot be loaded: false
// then, and the secrets are as safe as yama's ptrace_scope makes them. It costs a process about 7 ms
// (bun:ffi's loading, most of it).
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
