// The loop the serve tests look at: five items run to the end by the demo agent.
import { demoDefinition } from "../helpers/project.ts";

/** Markup that would run if the page let it: every test checks it stays text. */
export const HOSTILE = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`;

/** Passes; passes on its retry; fails; blocked by the failure; and one whose prompt, output and verify are full of markup. */
export function servedDefinition(): Record<string, unknown> {
  return demoDefinition([
    { id: "ok", prompt: "Say ok.\n@demo write ok.txt ok", verify: "test -f ok.txt" },
    { id: "retry", prompt: "Retry.\n@demo attempt 1 write wrong.txt x\n@demo attempt 2 write retry.txt y", verify: "test -f retry.txt" },
    { id: "bad", prompt: "Fail.\n@demo write bad.txt x", verify: "false", maxAttempts: 1 },
    { id: "after-bad", prompt: "Never runs.", dependsOn: ["bad"] },
    { id: "xss", prompt: `Render me: ${HOSTILE}\n@demo print ${HOSTILE}\n@demo write xss.txt ${HOSTILE}`, verify: `echo '${HOSTILE}'` },
  ]);
}

/** How each item ends. */
export const EXPECTED: Record<string, string> = { ok: "passed", retry: "passed", bad: "failed", "after-bad": "blocked", xss: "passed" };

/** Read Server-Sent Events from a response: `next(type)` waits (bounded) for the next event of that type. */
export function sseReader(res: Response) {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = "";
  const queue: { event: string; data: string }[] = [];
  async function pull(boundMs: number): Promise<boolean> {
    const timeout = new Promise<null>((r) => setTimeout(() => r(null), boundMs));
    const got = await Promise.race([reader.read(), timeout]);
    if (got === null || got.done) return false;
    buf += dec.decode(got.value, { stream: true });
    for (let i; (i = buf.indexOf("\n\n")) >= 0; ) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data !== undefined) queue.push({ event, data });
    }
    return true;
  }
  return {
    /** The next event of `type` (earlier events of other types are dropped); null when none came within the bound. */
    async next(type: string, boundMs = 15_000): Promise<any | null> {
      const deadline = Date.now() + boundMs;
      for (;;) {
        const i = queue.findIndex((e) => e.event === type);
        if (i >= 0) return JSON.parse(queue.splice(0, i + 1).pop()!.data);
        const left = deadline - Date.now();
        if (left <= 0 || !(await pull(left))) return null;
      }
    },
    close: () => reader.cancel().catch(() => {}),
  };
}
