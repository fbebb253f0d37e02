// Failure injection (DESIGN §8): with LOOP_FAILPOINT=<name> the process SIGKILLs itself at that
// point, exactly as a power cut or OOM kill would, so tests can prove the next step recovers.
// LOOP_FAILPOINT may list several names separated by commas; docs/failpoints.md lists them all.

const armed = new Set((process.env.LOOP_FAILPOINT ?? "").split(",").map((s) => s.trim()).filter(Boolean));

export function failpoint(name: string): void {
  if (armed.size === 0 || !armed.has(name)) return;
  process.stderr.write(`loop: failpoint ${name}: killing self\n`);
  process.kill(process.pid, "SIGKILL");
}
