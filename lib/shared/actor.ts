// Who did it: recorded on every event. $LOOP_ACTOR wins, else the login user and host.
import { hostname } from "node:os";
import { readTextOrNull } from "./fsutil.ts";

export function actorName(env: Record<string, string | undefined>): string {
  if (env.LOOP_ACTOR) return env.LOOP_ACTOR;
  return `${env.USER || env.LOGNAME || uidName()}@${hostname()}`;
}

/**
 * The name of this process's uid, for an environment without $USER and $LOGNAME (`env -i`, some
 * cron daemons). Not os.userInfo(): Bun's answers from $USER, and says "unknown" without it. The
 * passwd file answers without a process; `id -un` for names it does not hold (LDAP, NSS).
 */
function uidName(uid: number | undefined = process.getuid?.(), passwd = "/etc/passwd"): string {
  if (uid === undefined) return "unknown";
  for (const line of (readTextOrNull(passwd) ?? "").split("\n")) {
    const f = line.split(":");
    if (f.length >= 3 && f[0] && Number(f[2]) === uid && f[2] !== "") return f[0];
  }
  try {
    const r = Bun.spawnSync(["id", "-un", String(uid)], { stdout: "pipe", stderr: "ignore" });
    const name = r.stdout.toString().trim();
    if (r.exitCode === 0 && name) return name;
  } catch {
    // No `id` on PATH: the uid is all there is.
  }
  return `uid${uid}`;
}
