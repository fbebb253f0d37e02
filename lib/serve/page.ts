// The pages of `loop serve`, rendered on the server from plain data: the list of loops, a loop's page
// (header, attention banner, counts, spend, the timeline, the items) and an item's page (every
// attempt, its verdict, verify, output, handoff, pull request and checks). Pure: the server gathers
// the status document, the history and the file slices, and these functions turn them into HTML.
// Every word from the log or a file goes through `html` (html.ts), which escapes it.
import { html, line, type Markup, safeHref, seg, trusted } from "./html.ts";
import { shownCounts, shownStatus, type StatusReport } from "../reports/status.ts";
import { type AttemptHistory, type History, type ItemHistory, phasesOf } from "../reports/history.ts";
import { legend, reworksOf, timelineOf, timelineSvg, usageText } from "./timeline.ts";
import type { FileSlice } from "./files.ts";

export const ASSET_CSS = "/assets/serve.css";
export const ASSET_JS = "/assets/serve.js";
export const ASSET_WORKER = "/assets/stream.js";

export function loopHref(name: string): string {
  return `/loops/${seg(name)}/`;
}
export function itemHref(name: string, id: string): string {
  return `/loops/${seg(name)}/items/${seg(id)}`;
}

interface Shell {
  title: string;
  /** Breadcrumbs: [text, href | null]. */
  crumbs: [string, string | null][];
  /** The SSE stream and the fragment the page's script refreshes `main` from; none: a static page. */
  live: { stream: string; fragment: string; seq: number } | null;
  main: Markup;
  /** Content after `main` that the refresh leaves alone (the live tail). */
  after?: Markup;
  footer: Markup;
  /** The CSRF token of the page's actions (lib/serve/csrf.ts); absent on a read-only server. */
  csrf?: string | null;
}

/** The whole document around a page's `main`. */
export function shell(s: Shell): string {
  const crumbs = s.crumbs.map(([text, href], i) => html`${i ? " › " : ""}${href ? html`<a href="${href}">${text}</a>` : html`<span>${text}</span>`}`);
  const live = s.live ? html` data-stream="${s.live.stream}" data-fragment="${s.live.fragment}" data-seq="${s.live.seq}" data-worker="${ASSET_WORKER}"` : "";
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${s.title}</title><link rel="stylesheet" href="${ASSET_CSS}"><script src="${ASSET_JS}" defer></script>
${s.csrf ? html`<meta name="loop-csrf" content="${s.csrf}">` : ""}<noscript><meta http-equiv="refresh" content="15"></noscript></head>
<body${live}><nav class="crumbs">${crumbs}<span id="conn" class="conn" aria-live="polite"></span></nav>
${s.csrf ? html`<p id="act-result" class="act-result" role="status" aria-live="polite"></p>` : ""}<main id="live">${s.main}</main>${s.after ?? ""}
<footer>${s.footer}</footer></body></html>
`.text;
}

// ---------------------------------------------------------------------------------------------
// The list of loops

interface LoopSummary {
  name: string;
  root: string;
  status: StatusReport | null;
  error: { code: string; message: string } | null;
}

export function indexMain(loops: LoopSummary[]): Markup {
  const rows = loops.map((l) => {
    const s = l.status;
    return html`<tr><td><a href="${loopHref(l.name)}">${l.name}</a></td><td>${s ? html`<span class="state state-${s.loop.state}">${s.loop.state}</span>${s.loop.reason ? html` <span class="reason">${line(s.loop.reason)}</span>` : ""}` : html`<span class="state state-error">${l.error?.code ?? "error"}</span>`}</td><td>${s ? countsText(s.loop.counts) : line(l.error?.message)}</td><td class="path">${l.root}</td></tr>`;
  });
  return html`<h1>Loops</h1><table class="items"><thead><tr><th>loop</th><th>state</th><th>items</th><th>root</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/**
 * An item's attempts in words: made, and failed out of the budget (`3/2` read as "three of two"). A reset
 * starts the count again; its number is said, so a count below an earlier one is not a mystery.
 */
function attemptsText(it: StatusReport["items"][number]): string {
  return `${it.attempts} made, ${it.failures} of ${it.maxAttempts} failed${it.epoch ? ` (since reset ${it.epoch})` : ""}`;
}

function countsText(counts: Record<string, number>): string {
  return (
    Object.entries(counts)
      .map(([k, n]) => `${n} ${k}`)
      .join(", ") || "no items"
  );
}

// ---------------------------------------------------------------------------------------------
// A loop's page

function loopHeader(name: string, s: StatusReport, h: History): Markup {
  const usage = usageText((s.loop as { usage?: unknown }).usage);
  const reworks = reworksOf(h);
  const attention = s.attention.map(
    (a) =>
      html`<div class="attention" role="alert" data-kind="${a.kind}"><strong>Needs a person (${a.kind})</strong>: ${line(a.reason)}<div class="fix">To fix: ${a.fix.map((c, i) => html`${i ? " then " : ""}<code>${line(c)}</code>`)}</div></div>`,
  );
  const counts = Object.entries(shownCounts(s.loop.counts, s.items)).map(([st, n]) => html`<li class="count st-${st}"><b>${n}</b> ${st}</li>`);
  return html`<header class="loop" data-state="${s.loop.state}">
<h1>${s.loop.name ?? name} <span class="state state-${s.loop.state}">${s.loop.state}</span>${s.loop.outcome ? html` <span class="outcome-${s.loop.outcome}">${s.loop.outcome}</span>` : ""}</h1>
${s.loop.reason ? html`<p class="reason">${line(s.loop.reason)}</p>` : ""}
${attention}
<ul class="counts">${counts}</ul>
<p class="meta">revision ${s.loop.revision} · seq ${s.loop.logSeq}${s.loop.current ? html` · in flight: <a href="${itemHref(name, s.loop.current)}">${s.loop.current}</a>` : ""}${usage ? html` · <span class="spend">spend: ${usage}</span>` : ""}${reworks ? html` · <span class="reworks">${reworks} rework${reworks === 1 ? "" : "s"}</span>` : ""}${s.healthy ? "" : html` · <span class="unhealthy">divergence: ${s.findings.map((f) => line(f.message)).map((m, i) => html`${i ? "; " : ""}${m}`)}</span>`}</p>
</header>`;
}

/** The `main` of a loop's page: header, timeline with its legend, and the items as a table. */
export function loopMain(name: string, s: StatusReport, h: History, now: number, width = 1200): Markup {
  const t = timelineOf(h, s, now, (id) => itemHref(name, id));
  const legendItems = legend().map(
    (l) =>
      html`<li><svg width="14" height="10" aria-hidden="true"><rect class="${l.cls}" width="14" height="10"${l.cls.startsWith("wait") ? trusted(` fill="url(#hatch)"`) : ""}/></svg> ${l.name}</li>`,
  );
  const rows = s.items.map(
    (it) =>
      html`<tr data-item="${it.id}"><td><a href="${itemHref(name, it.id)}">${it.id}</a></td><td><span class="st st-${it.status}">${shownStatus(it)}</span></td><td class="attempts">${attemptsText(it)}</td><td class="spend">${usageText((it as { usage?: unknown }).usage) ?? "—"}</td><td>${it.waiting ? line(it.waiting.detail) : html`${codeOf(it.code)}${line(it.reason)}`}</td></tr>`,
  );
  return html`${loopHeader(name, s, h)}
<section class="timeline-box" aria-label="timeline"><h2>Timeline <small>(UTC)</small></h2>
<div class="scroll">${trusted(timelineSvg(t, { width }))}</div>
${t.omitted ? html`<p class="note">${t.omitted} more items are not drawn; <a href="/api/loops/${seg(name)}/status">the status document</a> has them all.</p>` : ""}
${unknownNote(h)}
<ul class="legend">${legendItems}<li><span class="end-passed legend-end"></span> passed</li><li><span class="end-failed legend-end"></span> failed</li></ul></section>
<section aria-label="items"><h2>Items</h2><table class="items"><thead><tr><th>item</th><th>status</th><th>attempts</th><th>spend</th><th>reason</th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

/** Events of types this version does not know (a newer `loop run` wrote them): not drawn, and said. */
export function unknownNote(h: History): Markup | "" {
  const types = Object.entries(h.unknown);
  if (types.length === 0) return "";
  const said = types.map(([type, n]) => `${type} ×${n}`).join(", ");
  return html`<p class="note" data-unknown-events>The log holds events this version of loop does not know, not drawn: ${line(said)}. A newer <code>loop serve</code> draws them.</p>`;
}

// ---------------------------------------------------------------------------------------------
// An item's page

/** What the server read of an attempt's files (each a bounded slice, or null when not asked). */
export interface AttemptFiles {
  handoff: FileSlice | null;
  output: FileSlice | null;
  verify: FileSlice | null;
}

interface ItemPageData {
  loop: string;
  item: StatusReport["items"][number];
  history: ItemHistory | null;
  /** By attempt, keyed `e<epoch>-<n>`. */
  files: Map<string, AttemptFiles>;
}

export function attemptKey(a: Pick<AttemptHistory, "epoch" | "n">): string {
  return `e${a.epoch}-${a.n}`;
}

function fileBlock(title: string, f: FileSlice | null, open = false): Markup {
  if (!f) return html``;
  if (f.kind === "absent") return html`<p class="file-missing">${title}: none</p>`;
  if (f.kind === "error") return html`<p class="file-missing">${title}: cannot be read (${line(f.message)})</p>`;
  const cut =
    f.from > 0
      ? html` <small>(the last ${f.total - f.from} of ${f.total} bytes)</small>`
      : f.size < f.total
        ? html` <small>(the first ${f.size} of ${f.total} bytes)</small>`
        : "";
  return html`<details${open ? trusted(" open") : ""}><summary>${title}${cut}</summary><pre class="log">${f.text}</pre></details>`;
}

/** A duration as people read it: tenths of a second below a minute. */
function spanText(from: number, to: number): string {
  const s = Math.max(0, (to - from) / 1000);
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

/** A time (ms since the epoch, or the log's ISO text) as UTC, to the second. */
function when(t: number | string | null | undefined): Markup {
  if (t === null || t === undefined) return html`–`;
  const ms = typeof t === "number" ? t : Date.parse(t);
  if (!Number.isFinite(ms)) return html`${String(t)}`;
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.replace("T", " ").replace(/\.\d+Z$/, "Z")}</time>`;
}

function attemptSection(a: AttemptHistory, files: AttemptFiles | undefined): Markup {
  const phases = phasesOf(a).map(
    (p) =>
      html`<li class="ph-line"><span class="swatch ph-${p.kind}"></span>${p.kind} ${p.to !== null ? spanText(p.from, p.to) : html`<em>still going</em>`} <small>(${when(p.from)} → ${p.to !== null ? when(p.to) : "now"})</small></li>`,
  );
  const v = a.verify;
  const verify = v
    ? html`<dl class="kv"><dt>verify</dt><dd>${v.command ? html`<code>${line(v.command)}</code> ` : ""}${v.passed === null ? html`<em>running</em>${v.deadline ? html` (deadline ${when(v.deadline)})` : ""}` : html`<span class="${v.passed ? "st st-passed" : "st st-failed"}">${v.passed ? "passed" : "failed"}</span>${v.timedOut ? " (timed out)" : ""}: ${codeOf(v.code)}${line(v.reason)}`}</dd></dl>${v.tail && !(files?.verify?.kind === "ok") ? html`<details><summary>verify output (recorded tail)</summary><pre class="log">${v.tail}</pre></details>` : ""}`
    : "";
  const pr = a.pr
    ? html`<dl class="kv"><dt>pull request</dt><dd>${prLink(a.pr.label, a.pr.url)}${a.pr.draft ? " (draft)" : ""}${a.pr.reused ? " (reused)" : ""}, head <code>${a.pr.head.slice(0, 12)}</code></dd></dl>`
    : "";
  const checks = a.landingWaits.length
    ? html`<details><summary>checks and landing waits (${a.landingWaits.length})</summary><ul>${a.landingWaits.map((w) => html`<li>${when(w.at)} <code>${w.code}</code> ${line(w.reason)}</li>`)}</ul></details>`
    : "";
  const landing = a.landing
    ? html`<dl class="kv"><dt>landing</dt><dd><span class="landing-${a.landing.outcome}">${a.landing.outcome}</span>${a.landing.target ? html` into <code>${line(a.landing.target)}</code>` : ""}${a.landing.commit ? html` at <code>${a.landing.commit.slice(0, 12)}</code>` : ""}: ${codeOf(a.landing.code)}${line(a.landing.reason)}</dd></dl>`
    : "";
  const end = a.end
    ? html`<dl class="kv"><dt>agent</dt><dd>${a.end.verdict}${a.end.exitCode !== null ? `, exit ${a.end.exitCode}` : ""}${a.end.signal ? html`, ${a.end.signal}` : ""}: ${line(a.end.reason)}</dd></dl>`
    : "";
  const question = a.question ? html`<dl class="kv"><dt>question</dt><dd class="question">${line(a.question)}</dd></dl>` : "";
  const outcome = a.outcome
    ? html`<span class="st st-${a.outcome.kind}">${a.outcome.kind}</span> ${codeOf(a.outcome.code)}${line(a.outcome.reason)}`
    : a.abandonedAt
      ? html`<span class="st st-reset">reset</span>`
      : html`<em>in flight</em>`;
  return html`<section class="attempt" id="attempt-${attemptKey(a)}" data-attempt="${attemptKey(a)}">
<h3>${a.epoch ? `epoch ${a.epoch}, ` : ""}attempt ${a.n} <small>${a.runner ?? ""}${a.model ? ` (${a.model})` : ""}</small> — ${outcome}</h3>
<ul class="phases">${phases}</ul>${end}${question}${verify}${pr}${checks}${landing}
${a.closed ? html`<p class="closed">session closed ${when(a.closed.at)} (${a.closed.how}): ${line(a.closed.reason)}</p>` : ""}
${fileBlock("agent output (tail)", files?.output ?? null)}${fileBlock("verify output (tail)", files?.verify ?? null)}${fileBlock("handoff", files?.handoff ?? null)}
</section>`;
}

/** A verdict's code (verify, landing, settle) before its reason, or nothing without one. */
function codeOf(code: string | null | undefined): Markup {
  return code ? html`<code class="code">${code}</code> ` : html``;
}

function prLink(label: string, url: string): Markup {
  const href = safeHref(url);
  return href ? html`<a href="${href}" rel="noreferrer noopener">${label}</a>` : html`${label} <code>${line(url)}</code>`;
}

/** What people did to the item: commands (`loop ctl`), replies, resets, oldest first. */
function operatorLog(h: ItemHistory | null): Markup {
  if (!h) return html``;
  const entries = [
    ...h.controls.map((c) => ({ at: c.at, text: `loop ctl ${c.verb}`, actor: c.actor })),
    ...h.replies.map((r) => ({ at: r.at, text: "reply", actor: r.actor })),
    ...h.resets.map((r) => ({ at: r.at, text: "loop reset", actor: r.actor })),
  ].sort((a, b) => a.at - b.at);
  if (!entries.length) return html``;
  return html`<details class="operators"><summary>operator commands (${entries.length})</summary><ul>${entries.map((e) => html`<li>${when(e.at)} <code>${e.text}</code> by ${line(e.actor)}</li>`)}</ul></details>`;
}

export function itemMain(d: ItemPageData): Markup {
  const it = d.item;
  const h = d.history;
  const usage = usageText((it as { usage?: unknown }).usage);
  const reworks = h?.reworks ?? 0;
  const attempts = [...(h?.attempts ?? [])].reverse().map((a) => attemptSection(a, d.files.get(attemptKey(a))));
  const forgeWait = it.forge?.landing;
  return html`<header class="item" data-status="${it.status}">
<h1>${it.id} <span class="st st-${it.status}">${shownStatus(it)}</span></h1>
${it.reason ? html`<p class="reason">${codeOf(it.code)}${line(it.reason)}</p>` : ""}
${it.question ? html`<div class="attention" role="alert" data-kind="question"><strong>Question</strong>: ${line(it.question)}<div class="fix">To fix: <code>loop ctl reply --work-item ${line(it.id)} "&lt;answer&gt;"</code> then <code>loop ctl resume</code></div></div>` : ""}
<dl class="kv">
${it.ref ? html`<dt>ref</dt><dd><code>${it.ref}</code></dd>` : ""}
<dt>attempts</dt><dd>${it.attempts} made, ${it.failures} of ${it.maxAttempts} failed${it.epoch ? html`, epoch ${it.epoch}` : ""}${it.reset ? html` (reset by ${line(it.reset.actor)} at ${when(it.reset.at)})` : ""}</dd>
${it.dependsOn.length ? html`<dt>depends on</dt><dd>${it.dependsOn.map((dep, i) => html`${i ? ", " : ""}<a href="${itemHref(d.loop, dep)}">${dep}</a>`)}</dd>` : ""}
${it.waiting ? html`<dt>waiting</dt><dd>${line(it.waiting.detail)}</dd>` : ""}
${it.branch ? html`<dt>branch</dt><dd><code>${line(it.branch)}</code></dd>` : ""}
${it.worktree ? html`<dt>worktree</dt><dd><code>${line(it.worktree)}</code></dd>` : ""}
${it.pr ? html`<dt>pull request</dt><dd>${prLink(it.pr.label, it.pr.url)}${forgeWait ? html` — waiting: <code>${forgeWait.code}</code> ${line(forgeWait.reason)} (since ${when(forgeWait.since)})` : ""}</dd>` : ""}
${usage ? html`<dt>spend</dt><dd class="spend">${usage}</dd>` : ""}
${reworks ? html`<dt>reworks</dt><dd class="reworks">${reworks}</dd>` : ""}
</dl></header>
${h?.prompt != null ? html`<details class="prompt"><summary>prompt</summary><pre class="log">${h.prompt}</pre></details>` : ""}
${operatorLog(h)}
<section aria-label="attempts"><h2>Attempts</h2>${attempts.length ? attempts : html`<p>No attempt yet.</p>`}</section>`;
}

/** The live tail of the attempt in flight, outside `main`: the page's script appends to it. */
export function liveTail(running: { key: string; slice: FileSlice } | null, cap: number): Markup {
  if (!running)
    return html`<section class="live-tail" aria-label="live output"><h2>Live output</h2><pre id="live-tail" class="log" data-attempt="" data-offset="0" data-cap="${cap}"></pre><p class="note" id="live-note">No attempt is running.</p></section>`;
  const s = running.slice;
  const text = s.kind === "ok" ? s.text : "";
  const offset = s.kind === "ok" ? s.size : 0;
  return html`<section class="live-tail" aria-label="live output"><h2>Live output <small>(attempt ${running.key}, the last ${cap} bytes at most)</small></h2><pre id="live-tail" class="log" data-attempt="${running.key}" data-offset="${offset}" data-cap="${cap}">${text}</pre><p class="note" id="live-note">${s.kind === "error" ? line(`cannot be read: ${s.message}`) : s.kind === "absent" ? "No output yet." : ""}</p></section>`;
}

export function errorMain(title: string, message: string): Markup {
  return html`<h1>${title}</h1><p class="error">${line(message)}</p>`;
}
