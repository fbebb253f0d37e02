// The timeline: one row per item in backlog order, time across, each attempt a bar split into its
// phases, waits marked, the outcome and its reason at the end of the row. Two pure functions:
// `timelineOf` (the history and the status document → rows of numbers and words) and `timelineSvg`
// (rows → SVG text). Every word on it came from outside and is escaped (html.ts); times are drawn in
// UTC so the same log draws the same picture anywhere.
import { dollarsText } from "../shared/money.ts";
import { clip, escapeLine, escapeText } from "./html.ts";
import { type AttemptHistory, type History, type LoopWaitKind, type PhaseKind, PHASE_KINDS, phasesOf } from "../reports/history.ts";
import type { StatusReport } from "../reports/status.ts";

interface Bar {
  kind: string;
  from: number;
  to: number;
}

interface Wait extends Bar {
  title: string;
}

interface TimelineAttempt {
  label: string;
  phases: Bar[];
  /** The attempt's fate (`passed`, `failed`, `requeued`, …), or null while it goes on. */
  outcome: string | null;
  /** Why: the fate's reason, else how the agent's session ended. */
  reason: string | null;
  /** Where it starts and where its fate is marked (the end of its last phase). */
  start: number;
  end: number;
  /** A phase is still going (it runs to now). */
  open: boolean;
}

interface TimelineRow {
  id: string;
  href: string;
  status: string;
  reason: string | null;
  /** Spend and reworks, when the status document carries them. */
  note: string | null;
  attempts: TimelineAttempt[];
  waits: Wait[];
}

export interface TimelineInput {
  start: number;
  end: number;
  rows: TimelineRow[];
  loopWaits: Wait[];
  /** Rows left out by the cap (the status API has them all). */
  omitted: number;
}

/** At most this many rows are drawn: a page stays a page. */
export const MAX_ROWS = 2000;

const PHASE_NAMES: Record<PhaseKind, string> = {
  launching: "launching",
  setup: "setup",
  agent: "agent running",
  step: "waiting for a step",
  airlock: "airlock (seal, import, proofs)",
  verify: "verify",
  landing: "landing",
  checks: "waiting on checks",
  closing: "closing",
  rework: "rework",
};
const LOOP_WAIT_NAMES: Record<LoopWaitKind, string> = { paused: "paused", stopped: "stopped", environment: "environment fault" };

type StatusItem = StatusReport["items"][number];

/** What an item cost (the status document's figure) and how often the forge sent it back (the log's). */
function itemNote(it: StatusItem, reworks: number): string | null {
  const parts = [usageText((it as StatusItem & { usage?: unknown }).usage), reworks ? `${reworks} rework${reworks === 1 ? "" : "s"}` : null].filter(
    (s): s is string => s !== null,
  );
  return parts.length ? parts.join(" · ") : null;
}

/** `{tokens, usd}` (either may be null) as words, or null when nothing is known. */
export function usageText(u: unknown): string | null {
  if (!u || typeof u !== "object") return null;
  const { tokens, usd } = u as { tokens?: unknown; usd?: unknown };
  const parts: string[] = [];
  if (typeof usd === "number" && Number.isFinite(usd)) parts.push(dollarsText(usd));
  if (typeof tokens === "number" && Number.isFinite(tokens)) parts.push(`${Math.round(tokens).toLocaleString("en-US")} tokens`);
  return parts.length ? parts.join(", ") : null;
}

/** The reworks of a loop's items (forge reactions that sent one back), from its log. */
export function reworksOf(h: History): number {
  let n = 0;
  for (const it of h.items.values()) n += it.reworks;
  return n;
}

function dur(a: number, b: number): string {
  const s = Math.max(0, Math.round((b - a) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(s / 3600);
  return h < 48 ? `${h}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m` : `${Math.floor(h / 24)}d${h % 24}h`;
}

function attemptLabel(a: AttemptHistory): string {
  return a.epoch > 0 ? `epoch ${a.epoch}, attempt ${a.n}` : `attempt ${a.n}`;
}

function attemptRow(a: AttemptHistory, now: number): TimelineAttempt {
  let open = false;
  const phases = phasesOf(a).map((p) => {
    if (p.to === null) open = true;
    return { kind: p.kind, from: p.from, to: p.to ?? now };
  });
  let end = a.reservedAt;
  for (const p of phases) if (p.to > end) end = p.to;
  return {
    label: attemptLabel(a),
    phases,
    outcome: a.outcome?.kind ?? (a.abandonedAt !== null ? "reset" : null),
    reason: a.outcome?.reason ?? a.end?.reason ?? null,
    start: a.reservedAt,
    end,
    open,
  };
}

/**
 * The rows of the timeline: the status document's items in its order (their status and reason, as
 * `loop status` says them), each with its attempts and waits from the history. `now` ends what is
 * still going; `href` names each item's page.
 */
export function timelineOf(history: History, status: Pick<StatusReport, "items">, now: number, href: (id: string) => string): TimelineInput {
  const rows: TimelineRow[] = [];
  const drawn = status.items.slice(0, MAX_ROWS);
  for (const it of drawn) {
    const h = history.items.get(it.id);
    rows.push({
      id: it.id,
      href: href(it.id),
      status: it.status,
      reason: it.reason,
      note: itemNote(it, h?.reworks ?? 0),
      attempts: (h?.attempts ?? []).map((a) => attemptRow(a, now)),
      waits: (h?.waits ?? []).map((w) => {
        const to = w.to ?? now;
        return { kind: w.kind, from: w.from, to, title: `${w.label} (${dur(w.from, to)})` };
      }),
    });
  }
  const loopWaits = history.waits.map((w) => {
    const to = w.to ?? now;
    return { kind: w.kind, from: w.from, to, title: `loop ${LOOP_WAIT_NAMES[w.kind]} ${dur(w.from, to)}: ${w.label}` };
  });
  // From the first thing drawn to the last (the first reservation, not the store's creation, which
  // may be days before anything ran).
  let start = Infinity;
  let end = -Infinity;
  for (const r of rows) {
    for (const a of r.attempts) (start = Math.min(start, a.start)), (end = Math.max(end, a.end));
    for (const w of r.waits) (start = Math.min(start, w.from)), (end = Math.max(end, w.to));
  }
  for (const w of loopWaits) (start = Math.min(start, w.from)), (end = Math.max(end, w.to));
  if (!Number.isFinite(start)) start = history.firstTs ?? now;
  if (!Number.isFinite(end)) end = now;
  if (end - start < 1000) end = start + 1000;
  return { start, end, rows, loopWaits, omitted: status.items.length - drawn.length };
}

// ---------------------------------------------------------------------------------------------
// Drawing

export const LAYOUT = { label: 190, outcome: 320, axis: 30, row: 22, bar: 12, pad: 8 } as const;

const TICK_STEPS = [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400, 30 * 86400].map((s) => s * 1000);

/** Tick times for the axis: a round step giving at most `max` ticks over [start, end]. */
export function ticks(start: number, end: number, max = 8): { step: number; at: number[] } {
  const span = end - start;
  const step = TICK_STEPS.find((s) => span / s <= max) ?? TICK_STEPS[TICK_STEPS.length - 1]!;
  const at: number[] = [];
  for (let t = Math.ceil(start / step) * step; t <= end; t += step) at.push(t);
  return { step, at };
}

/** A tick's label in UTC: the time of day; with the date once ticks are hours apart; the date alone once they are days apart. */
export function tickLabel(t: number, step: number): string {
  const iso = new Date(t).toISOString();
  if (step >= 86400_000) return iso.slice(5, 10);
  if (step >= 3 * 3600_000) return `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
  if (step >= 60_000) return iso.slice(11, 16);
  return iso.slice(11, 19);
}

const f = (n: number) => (Math.round(n * 10) / 10).toString();

/** The timeline as one SVG element. `width` in CSS pixels; the height follows from the rows. */
export function timelineSvg(t: TimelineInput, o: { width: number }): string {
  const L = LAYOUT;
  const chart = Math.max(100, o.width - L.label - L.outcome);
  const height = L.axis + t.rows.length * L.row + L.pad;
  const x = (v: number) => L.label + ((Math.min(Math.max(v, t.start), t.end) - t.start) / (t.end - t.start)) * chart;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" role="img" aria-labelledby="timeline-title" width="${o.width}" height="${height}" viewBox="0 0 ${o.width} ${height}">`,
    `<title id="timeline-title">Timeline of ${t.rows.length} item${t.rows.length === 1 ? "" : "s"}, ${escapeLine(new Date(t.start).toISOString())} to ${escapeLine(new Date(t.end).toISOString())} (UTC)</title>`,
    `<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect class="hatch-bg" width="6" height="6"/><line class="hatch-line" x1="0" y1="0" x2="0" y2="6"/></pattern></defs>`,
  );
  // Axis.
  const { step, at } = ticks(t.start, t.end);
  out.push(`<g class="axis">`);
  for (const tick of at) {
    const tx = f(x(tick));
    out.push(
      `<line x1="${tx}" y1="${L.axis - 6}" x2="${tx}" y2="${height - L.pad}"/><text x="${tx}" y="${L.axis - 10}" text-anchor="middle">${escapeLine(tickLabel(tick, step))}</text>`,
    );
  }
  out.push(`</g>`);
  // Row backgrounds, the loop's waits across every row, then each row's bars and words on top.
  out.push(`<g class="rows-bg">`);
  t.rows.forEach((_, i) => out.push(`<rect class="row-bg${i % 2 ? " odd" : ""}" x="0" y="${L.axis + i * L.row}" width="${o.width}" height="${L.row}"/>`));
  out.push(`</g>`);
  for (const w of t.loopWaits)
    out.push(
      `<rect class="lw lw-${escapeLine(w.kind)}" x="${f(x(w.from))}" y="${L.axis - 4}" width="${f(Math.max(2, x(w.to) - x(w.from)))}" height="${height - L.axis - L.pad + 4}"><title>${escapeLine(w.title)}</title></rect>`,
    );
  t.rows.forEach((r, i) => {
    const y = L.axis + i * L.row;
    const mid = y + L.row / 2;
    out.push(`<g class="row" data-item="${escapeLine(r.id)}" data-status="${escapeLine(r.status)}">`);
    out.push(
      `<a href="${escapeLine(r.href)}"><text class="label" x="6" y="${mid + 4}">${escapeLine(clip(r.id, 26))}<title>${escapeLine(r.id)}</title></text></a>`,
    );
    for (const w of r.waits)
      out.push(
        `<rect class="wait wait-${escapeLine(w.kind)}" x="${f(x(w.from))}" y="${y + 3}" width="${f(Math.max(2, x(w.to) - x(w.from)))}" height="${L.row - 6}" fill="url(#hatch)"><title>${escapeLine(w.title)}</title></rect>`,
      );
    drawAttempts(out, r.attempts, x, y);
    const ox = L.label + chart + 10;
    const reason = [r.reason, r.note].filter(Boolean).join(" · ");
    out.push(
      `<text class="outcome" x="${ox}" y="${mid + 4}"><tspan class="st st-${escapeLine(r.status)}">${escapeLine(r.status)}</tspan>${reason ? `<tspan class="why" dx="6">${escapeLine(clip(reason, 44))}</tspan>` : ""}<title>${escapeLine(`${r.id}: ${r.status}${reason ? ` — ${reason}` : ""}`)}</title></text>`,
    );
    out.push(`</g>`);
  });
  out.push(`</svg>`);
  return out.join("");
}

/** An attempt narrower than this (px) is drawn as one mark, not phase by phase. */
const DETAIL_PX = 4;

function attemptTitle(a: TimelineAttempt): string {
  const fate = a.outcome ?? (a.open ? "in flight" : "ended");
  const phases = a.phases.map((p) => `${PHASE_NAMES[p.kind as PhaseKind] ?? p.kind} ${dur(p.from, p.to)}`).join(" · ");
  return `${a.label}: ${fate}${a.reason ? ` — ${a.reason}` : ""}\n${phases}${a.open ? " (still going)" : ""}`;
}

/**
 * One row's attempts. A wide one is its phases side by side and a mark of its fate; a narrow one
 * (most of a long loop, seen whole) is one mark coloured by its fate, and narrow ones that touch are
 * one mark for all of them: a page of a 500-item loop stays small (bench/README.md, loop serve).
 * Every mark says what it is when hovered.
 */
function drawAttempts(out: string[], attempts: TimelineAttempt[], x: (v: number) => number, y: number): void {
  const L = LAYOUT;
  const barY = y + (L.row - L.bar) / 2;
  let group: { x0: number; x1: number; items: TimelineAttempt[] } | null = null;
  const flush = () => {
    if (!group) return;
    const g = group;
    group = null;
    const last = g.items[g.items.length - 1]!;
    const fate = last.outcome ?? (last.open ? "open" : "ended");
    // A short title: the phases of a mark this narrow are on the item's page.
    const title =
      g.items.length === 1
        ? `${last.label}: ${last.outcome ?? (last.open ? "in flight" : "ended")}`
        : `${g.items.length} attempts: ${g.items.map((a) => `${a.label} ${a.outcome ?? "in flight"}`).join(", ")}`;
    out.push(
      `<rect class="att att-${escapeLine(fate)}" x="${f(g.x0)}" y="${barY}" width="${f(Math.max(1.5, g.x1 - g.x0))}" height="${L.bar}"><title>${escapeText(title)}</title></rect>`,
    );
  };
  for (const a of attempts) {
    const x0 = x(a.start);
    const x1 = x(a.end);
    if (x1 - x0 < DETAIL_PX) {
      if (group && x0 - group.x1 <= 1) {
        group.x1 = Math.max(group.x1, x1);
        group.items.push(a);
      } else {
        flush();
        group = { x0, x1, items: [a] };
      }
      continue;
    }
    flush();
    out.push(`<g class="attempt"><title>${escapeText(attemptTitle(a))}</title>`);
    for (const p of a.phases)
      out.push(
        `<rect class="ph ph-${escapeLine(p.kind)}" x="${f(x(p.from))}" y="${barY}" width="${f(Math.max(1.5, x(p.to) - x(p.from)))}" height="${L.bar}"/>`,
      );
    if (a.outcome) out.push(`<rect class="end end-${escapeLine(a.outcome)}" x="${f(x1 - 1)}" y="${y + 3}" width="2.5" height="${L.row - 6}"/>`);
    out.push(`</g>`);
  }
  flush();
}

/** The legend's entries: every phase and wait the timeline may draw, with their classes. */
export function legend(): { cls: string; name: string }[] {
  return [
    ...PHASE_KINDS.map((k) => ({ cls: `ph-${k}`, name: PHASE_NAMES[k] })),
    { cls: "wait-needs_input", name: "needs input" },
    ...(Object.keys(LOOP_WAIT_NAMES) as LoopWaitKind[]).map((k) => ({ cls: `lw-${k}`, name: `loop ${LOOP_WAIT_NAMES[k]}` })),
  ];
}
