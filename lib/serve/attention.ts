// What the page says about the loop needing a person, and the command that fixes it: the conditions
// `loop run` exits 1 for (lib/decisions/attention.ts `attention`, docs/operations.md#hearing-about-trouble),
// read from the `loop/status@1` document the page is drawn from, so the banner and the API always
// agree. Pure.
import type { StatusReport } from "../reports/status.ts";
import type { AttentionKind } from "../decisions/attention.ts";

export interface AttentionView {
  kind: AttentionKind;
  item: string | null;
  /** What is wrong, in the log's words. */
  what: string;
  /** The commands that put it right, in order (placeholders in angle brackets). */
  fix: string[];
}

type StatusItem = StatusReport["items"][number];

/** Quote for a POSIX shell when needed: an item id or ref is pasted into a command line. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9._/:@#+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The conditions that need a person, in lib/decisions/attention.ts's order: question, environment, budgets, landings, a Failed drain. */
export function attentionOf(status: Pick<StatusReport, "loop" | "items">): AttentionView[] {
  const out: AttentionView[] = [];
  const loop = status.loop;
  const cur = loop.current ? status.items.find((it) => it.id === loop.current) : undefined;
  if (loop.state === "paused" && cur?.status === "needs_input")
    out.push({
      kind: "question",
      item: cur.id,
      what: loop.reason ?? `${cur.id} needs input${cur.question ? `: ${cur.question}` : ""}`,
      fix: [`loop ctl reply --work-item ${shellWord(cur.id)} "<answer>"`, "loop ctl resume"],
    });
  // The reducer writes a fault's pause as "environment fault…: <reason>. To fix: <fix>".
  if (loop.state === "paused" && typeof loop.reason === "string" && loop.reason.startsWith("environment fault")) {
    const cut = loop.reason.lastIndexOf(". To fix: ");
    out.push({
      kind: "environment",
      item: null,
      what: cut >= 0 ? loop.reason.slice(0, cut) : loop.reason,
      fix: cut >= 0 ? [loop.reason.slice(cut + ". To fix: ".length)] : ["fix what the reason names", "loop ctl resume"],
    });
  }
  // The reducer writes a budget's pause as "budget: <figures and how to raise it>" (docs/spend.md).
  if (loop.state === "paused" && typeof loop.reason === "string" && loop.reason.startsWith("budget: "))
    out.push({ kind: "budget", item: null, what: loop.reason, fix: ['raise "budget" in loop.json', "loop ctl resume"] });
  for (const it of status.items)
    if (it.status === "failed" && typeof it.reason === "string" && it.reason.startsWith("budget_exhausted: "))
      out.push({ kind: "budget", item: it.id, what: `${it.id}: ${it.reason}`, fix: [`raise the budget of ${it.id} (items[].budget or defaults.budget) in loop.json`, `loop ctl retry --work-item ${shellWord(it.id)}`] });
  for (const it of status.items)
    if (landingNeedsPerson(it))
      out.push({
        kind: "landing",
        item: it.id,
        what: `${it.id}: ${it.reason ?? it.landing?.reason ?? "landing failed"}`,
        fix: [it.status === "landing_blocked" && it.pr ? `resolve or merge ${it.pr.label} (${it.pr.url})` : "resolve the landing (a conflict, the target checked out elsewhere)", `loop ctl retry --work-item ${shellWord(it.id)}`],
      });
  if (loop.state === "drained" && loop.outcome === "Failed") {
    const bad = status.items.filter((it) => it.status === "failed" || it.status === "blocked" || it.status === "landing_blocked");
    const names = bad.slice(0, 5).map((it) => `${it.id} ${it.status}`).join(", ") + (bad.length > 5 ? `, … ${bad.length} items` : "");
    out.push({ kind: "failed", item: null, what: `the loop drained Failed: ${names}`, fix: ["loop ctl retry --all-failed", "or `loop reset --work-item <id>` to start an item over"] });
  }
  return out;
}

function landingNeedsPerson(it: StatusItem): boolean {
  const outcome = it.landing?.outcome;
  return (it.status === "failed" && (outcome === "conflict" || outcome === "failed")) || (it.status === "landing_blocked" && outcome === "blocked");
}
