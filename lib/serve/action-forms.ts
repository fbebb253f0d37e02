// The page's actions (docs/cli/loop-serve.md#actions): a form per verb a loop or an item can take now,
// drawn only when the server takes actions (never under --read-only). The forms never submit
// themselves (the CSP's form-action 'none'): /assets/serve.js posts each as JSON to the actions API,
// with the page's CSRF token, and says what was done. What a form offers follows the state it was
// drawn from; a stale one is refused by the same rules as `loop ctl`, and changes nothing.
import { html, type Markup, seg } from "./html.ts";
import { isSettled, type ItemStatus } from "../log/vocabulary.ts";
import type { StatusReport } from "../reports/status.ts";

function actionsHref(loop: string): string {
  return `/api/loops/${seg(loop)}/actions`;
}

/** One form: a verb, on the loop or an item, with the fields it needs (`text`: reply's; `confirm`: the word to type). */
function form(loop: string, verb: string, label: string, o: { item?: string; text?: boolean; confirm?: { word: string; what: string } } = {}): Markup {
  return html`<form class="act" data-verb="${verb}" data-action="${actionsHref(loop)}"${o.item !== undefined ? html` data-item="${o.item}"` : ""}>${
    o.text ? html`<input name="text" required placeholder="your answer" aria-label="answer" size="40"> ` : ""
  }${o.confirm ? html`<input name="confirm" required placeholder="type ${o.confirm.word}" aria-label="type ${o.confirm.what} to confirm" size="14"> ` : ""}<button type="submit">${label}</button></form>`;
}

/** The loop's actions: start after its review (or from new), pause, resume. */
export function loopActionForms(loop: string, s: StatusReport): Markup {
  const st = s.loop.state;
  const review = s.attention.some((a) => a.kind === "review");
  const forms = [
    ...(review || st === "new" ? [form(loop, "start", review ? "Start (after review)" : "Start")] : []),
    ...(st !== "paused" && st !== "drained" ? [form(loop, "pause", "Pause")] : []),
    ...(!review && (st === "paused" || st === "stopped") ? [form(loop, "resume", "Resume")] : []),
  ];
  return forms.length ? html`<div class="actions" aria-label="actions">${forms}</div>` : html``;
}

/** An item's actions: reply to its question, retry it once it settled (not passed), stop or skip it while it is open. */
export function itemActionForms(loop: string, it: StatusReport["items"][number]): Markup {
  const status = it.status as ItemStatus;
  const open = !isSettled(status) && status !== "withdrawn";
  const confirm = { word: it.id, what: "the item's id" };
  const forms = [
    ...(open ? [form(loop, "reply", "Reply", { item: it.id, text: true })] : []),
    ...(isSettled(status) && status !== "passed" ? [form(loop, "retry", "Retry", { item: it.id })] : []),
    ...(open ? [form(loop, "stop", "Stop", { item: it.id, confirm }), form(loop, "skip", "Skip", { item: it.id, confirm })] : []),
  ];
  return forms.length ? html`<div class="actions" aria-label="actions">${forms}</div>` : html``;
}
