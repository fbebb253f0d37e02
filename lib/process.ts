// Process groups: sessions and verify commands each run in their own group, and ending one means
// ending the whole group: SIGTERM, a grace period, then SIGKILL.

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function signalGroup(pgid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  }
}

/** End a process group. Returns how: "not_running", "terminated" or "killed". */
export async function killGroup(pgid: number, graceMs: number): Promise<"not_running" | "terminated" | "killed"> {
  if (!groupAlive(pgid)) return "not_running";
  signalGroup(pgid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!groupAlive(pgid)) return "terminated";
    await Bun.sleep(25);
  }
  if (!groupAlive(pgid)) return "terminated";
  signalGroup(pgid, "SIGKILL");
  for (let i = 0; i < 40 && groupAlive(pgid); i++) await Bun.sleep(25);
  return "killed";
}
