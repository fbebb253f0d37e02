// Who did it: recorded on every event. $LOOP_ACTOR wins, else the login user and host.
import { hostname, userInfo } from "node:os";

export function actorName(env: Record<string, string | undefined>): string {
  if (env.LOOP_ACTOR) return env.LOOP_ACTOR;
  let user = env.USER ?? env.LOGNAME;
  if (!user) {
    try {
      user = userInfo().username;
    } catch {
      user = `uid${process.getuid?.() ?? "?"}`;
    }
  }
  return `${user}@${hostname()}`;
}
