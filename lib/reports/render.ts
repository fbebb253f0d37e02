// Text renderings of the JSON reports, for people at a terminal. Plain columns, no ANSI unless
// the caller says color is wanted.
import { dollarsText } from "../shared/money.ts";
import { shownCounts, shownStatus, type StatusReport } from "./status.ts";
import type { ReplayReport } from "./replay.ts";
import { printable } from "../shared/printable.ts";
import { autoMergeSentence } from "../forge/auto-merge.ts";
import { drainsAs, isInFlight, ITEM_STATUSES, type ItemStatus } from "../log/vocabulary.ts";

/** Width on screen: the tool's own colour codes take none (data never carries any: printable). */
const visible = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "").length;

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(visible(h), ...rows.map((r) => visible(r[i] ?? ""))));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + " ".repeat(widths[i]! - visible(c))))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

const paint = (color: boolean, code: number, s: string) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);

function statusColor(s: string): number {
  if (!(ITEM_STATUSES as readonly string[]).includes(s)) return 0; // a tampered state.json may hold anything
  const status = s as ItemStatus;
  if (status === "needs_input") return 33;
  if (isInFlight(status)) return 36;
  const drain = drainsAs(status);
  if (drain === "Failed" || drain === "Stopped") return 31;
  return status === "passed" ? 32 : 0;
}

/** `allAttempts` (`--times`): every attempt of each item's epoch; else each item's latest. */
export function renderStatus(r: StatusReport, color: boolean, o: { allAttempts?: boolean } = {}): string {
  // Every value comes from the store or state.json (which anyone with access can edit): each is
  // printed escaped, so only the tool's own colours and line breaks reach the terminal.
  const p = (v: unknown) => printable(String(v)); // numbers too: a tampered file may hold anything
  const L = r.loop;
  const out: string[] = [];
  out.push(
    `loop ${L.name === null ? "(no definition imported yet)" : p(L.name)} · ${p(L.state)}${L.outcome ? ` (${p(L.outcome)})` : ""} · revision ${p(L.revision)} · seq ${L.seq}${L.logSeq !== L.seq ? `/${L.logSeq}` : ""}`,
  );
  if (L.reason) out.push(`reason: ${p(L.reason)}`);
  if (L.current) out.push(`current: ${p(L.current)}`);
  const counts = Object.entries(shownCounts(L.counts, r.items))
    .map(([k, v]) => `${p(v)} ${p(k)}`)
    .join(", ");
  if (counts) out.push(`items: ${counts}`);
  if (r.autoMerge) out.push(p(autoMergeSentence(r.autoMerge)));
  // A notification channel that fails: said until it answers again (docs/operations.md#notification-channels).
  for (const c of L.channels ?? [])
    if (c.failures > 0)
      out.push(
        `notify channel ${p(c.id)}: ${c.failures} failed send${c.failures === 1 ? "" : "s"} in a row (${p(c.lastError ?? "?")}); tried again after ${p(c.retryAt ?? "?")}`,
      );
  // The default verify on the base tree (docs/cli/loop-run.md#the-verify-on-the-base): said once it ran.
  const bv = L.baseVerify;
  if (bv)
    out.push(
      `verify on the base: ${p(bv.status)}${bv.status === "accepted" ? ` by ${p(bv.acceptedBy)}` : ""}${bv.quote ? ` (${p(bv.quote)})` : ""}${bv.status === "failed" || bv.status === "accepted" ? ` · ${p(bv.log)}` : ""}`,
    );
  // Checkouts moved aside, deleted a bounded piece per step (docs/state.md#the-trash).
  const t = L.trash;
  if (t?.entries)
    out.push(
      `to delete: ${p(t.entries)} folder(s), ${t.bytes >= 2 ** 20 ? `${(t.bytes / 2 ** 20).toFixed(0)} MiB` : `${Math.ceil(t.bytes / 1024)} KiB`}${t.unknown ? ` (${p(t.unknown)} of unknown size)` : ""}, by the next steps`,
    );
  if (r.items.length) {
    out.push("");
    out.push(
      table(
        ["ITEM", "STATUS", "ATTEMPTS", "FAILED", "SPEND", "SESSION", "BRANCH", "LAST VERIFY"],
        r.items.map((it) => [
          p(it.id),
          // An ended attempt whose verify runs reads `verifying` (docs/cli/loop-status.md#text).
          paint(color, statusColor(it.status), p(shownStatus(it))),
          // Attempts the agent ran; the failures counted against maxAttempts, and where the item gives up.
          p(it.ran),
          `${p(it.failures)} (gives up at ${p(it.maxAttempts)})`,
          // Tokens and dollars over its attempts; "unknown" when its agent reported none.
          spendCell(it.usage, p),
          // A closed session's pid names nothing any more, nor an ended agent's: the runner only.
          it.session
            ? it.session.closed || (it.status === "ended" && !it.session.alive)
              ? p(it.session.runner)
              : `${p(it.session.runner)} ${it.session.tmux ? `tmux ${p(it.session.tmux)}` : it.session.pid !== null ? `pid ${p(it.session.pid)}` : "-"}${it.session.alive ? " alive" : ""}`
            : "-",
          it.branch === null ? "-" : p(it.branch),
          it.lastVerify ? `${it.lastVerify.passed ? "passed" : "failed"} (${p(it.lastVerify.reason)})` : "-",
        ]),
      ),
    );
    const reasons = r.items.filter((it) => it.reason || it.reset);
    if (reasons.length) {
      out.push("");
      for (const it of reasons) {
        if (it.reason) out.push(`${p(it.id)}: ${p(it.reason)}`);
        if (it.reset) out.push(`${p(it.id)}: reset by ${p(it.reset.actor)} at ${p(it.reset.at)} (epoch ${p(it.epoch)})`);
      }
    }
    // Hosts a session's gateway refused: the operator may widen the list (docs/loop-json.md#network).
    for (const it of r.items.filter((it) => it.network?.refused)) {
      const last = it.network!.lastHost!;
      out.push(
        `${p(it.id)}: its gateway refused ${p(it.network!.refused)} connection(s), the last to ${p(last.host)}:${p(last.port)} at ${p(last.at)} (loop logs ${p(it.id)} --network)`,
      );
    }
    // Model requests it refused besides a budget's: an endpoint it does not forward (a CLI that sends a new one), or after cut-offs.
    for (const it of r.items.filter((it) => it.network?.modelRefused))
      out.push(
        `${p(it.id)}: its gateway refused ${p(it.network!.modelRefused)} model request(s) it does not forward or after answers were cut off (loop logs ${p(it.id)} --network)`,
      );
    // What a running attempt's figure leaves out (codex inside a turn): the SPEND cell is not the whole story.
    for (const it of r.items.filter((it) => it.status === "running" && it.usage?.attempt?.note && !it.usage.attempt.final))
      out.push(`${p(it.id)}: spend so far: ${p(it.usage!.attempt!.note)}`);
    // Attempts a stopped watcher took with it (a pod's end, a node drain): given back, not counted.
    const drained = r.items.filter((it) => it.drained.length);
    if (drained.length) {
      out.push("", "drained (not counted):");
      for (const it of drained)
        for (const d of it.drained)
          out.push(
            `  ${p(it.id)}: attempt ${p(d.attempt)} died with the watcher (${p(d.signal)} at ${p(d.signalledAt)}, its ${p(d.running)} running) and ran again`,
          );
    }
    const forged = r.items.filter((it) => it.pr || it.forge?.landing);
    if (forged.length) {
      out.push("", "pull requests:");
      for (const it of forged) out.push(`  ${p(it.id)}: ${forgeLine(it, p)}`);
    }
    const flying = r.items.find((it) => it.id === L.current);
    if (flying) out.push("", ...inFlight(flying, p));
    out.push(...timesLines(r.items, o.allAttempts === true, p));
    const waiting = r.items.filter((it) => it.waiting);
    if (waiting.length) {
      out.push("", "waiting:");
      for (const it of waiting) out.push(`  ${p(it.id)}: ${p(it.waiting!.detail)}`);
    }
  }
  out.push("", ...spendLines(r, p));
  const def = L.definition;
  if (def?.state === "changed") out.push("", `loop.json: changed since its last import (${p(def.changes.join("; "))}); the next \`loop run\` imports it`);
  if (r.attention.length) {
    out.push("", "needs a person:");
    for (const a of r.attention) out.push(`  ${p(a.kind)}${a.item ? ` ${p(a.item)}` : ""}: ${p(a.reason)}`, ...a.fix.map((f) => `    to fix: ${p(f)}`));
  }
  out.push("");
  const step = L.step ? `a step is running (pid ${p(L.step.pid)} on ${p(L.step.host)} since ${p(L.step.since)}): state.json is judged once it ends` : null;
  out.push(r.findings.length ? "not healthy:" : step ? `healthy: projection matches the log; ${step}` : "healthy: projection matches the log and state.json");
  for (const f of r.findings) out.push(`  ${p(f.code)}${f.seq !== undefined ? ` (seq ${f.seq})` : ""}: ${p(f.message)}`);
  return out.join("\n");
}

/** A duration as people read it: 0.42 s, 1 min 5 s, 2 h 3 min. */
function durationText(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${s.toFixed(2)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The phases' names in text: the page's (docs/cli/loop-serve.md#the-timeline), shortened. */
const PHASE_TEXT: Record<string, string> = { step: "waiting for a step", checks: "waiting on checks" };

/** Where the time went (docs/cli/loop-status.md#where-the-time-went): one row per attempt, oldest first. */
function timesLines(items: StatusReport["items"], all: boolean, p: (v: unknown) => string): string[] {
  const rows = items
    .flatMap((it) => (it.times ? (all ? it.times.attempts : it.times.attempts.slice(-1)).map((a) => ({ id: it.id, a })) : []))
    .sort((x, y) => (x.a.from < y.a.from ? -1 : x.a.from > y.a.from ? 1 : 0));
  if (!rows.length) return [];
  return [
    "",
    `where the time went (own: loop's, the wall-clock less the agent, setup and verify${all ? "" : "; --times: every item, every attempt"}):`,
    table(
      ["  ITEM", "ATTEMPT", "FATE", "WALL", "OWN", "PHASES"],
      rows.map(({ id, a }) => [
        `  ${p(id)}`,
        p(a.attempt),
        a.fate === null ? "in flight" : p(a.fate),
        durationText(a.wallMs),
        durationText(a.ownMs),
        [
          ...a.phases.map((ph) => `${p(PHASE_TEXT[ph.phase] ?? ph.phase)} ${durationText(ph.ms)}${ph.to === null ? "…" : ""}`),
          ...(a.unaccountedMs > 0 ? [`unaccounted ${durationText(a.unaccountedMs)}`] : []),
        ].join(" · "),
      ]),
    ),
    // Loop's own time per item (issue 48's figure), its attempts of this epoch together; the one in flight so far.
    `own per item, its attempts together: ${[...new Set(rows.map((r) => r.id))]
      .map((id) => {
        const it = items.find((x) => x.id === id)!;
        return `${p(id)} ${durationText(it.times!.ownMs)}${it.times!.attempts.at(-1)!.fate === null ? " so far" : ""}`;
      })
      .join(" · ")}`,
  ];
}

type Usage = { tokens: number | null; usd: number | null; attempts?: number; unknown?: { tokens: number; usd: number } } | null | undefined;

/** Tokens as people read them: 12,345 (anything but a number, from a tampered state.json: "?"). */
function tokensText(n: unknown): string {
  return typeof n === "number" && Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "?";
}

/** Dollars: two decimals, two significant digits under a cent. */
function usdText(n: unknown): string {
  return typeof n === "number" && Number.isFinite(n) ? dollarsText(n) : "$?";
}

/** An item's SPEND cell: "12,345 tok $0.42", "12,345 tok" (dollars unknown), "?" (unknown: said once below the table), "-" (never ran). */
function spendCell(u: Usage, _p: (v: unknown) => string): string {
  if (!u) return "-";
  if (u.tokens === null && u.usd === null) return "?";
  const parts = [u.tokens === null ? "? tok" : `${tokensText(u.tokens)} tok`];
  if (u.usd !== null) parts.push(usdText(u.usd));
  return parts.join(" ");
}

/** The total line (and the budget's), for the whole loop: every attempt ever made, and the last 24 hours. */
function spendLines(r: StatusReport, p: (v: unknown) => string): string[] {
  const u = r.loop.usage as (Usage & { daily?: { tokens: number | null; usd: number | null } }) | undefined;
  if (!u) return [];
  const figure = (x: { tokens: number | null; usd: number | null }) =>
    x.tokens === null && x.usd === null
      ? "unknown"
      : `${x.tokens === null ? "tokens unknown" : `${tokensText(x.tokens)} tokens`}, ${x.usd === null ? "dollars unknown" : usdText(x.usd)}`;
  const out = [
    !u.attempts
      ? "spend: nothing yet (no attempt has run)"
      : `spend: ${figure(u)} over ${p(u.attempts)} attempt(s)${u.daily ? `; last 24 hours: ${figure(u.daily)}` : ""}`,
  ];
  const unknown = unknownLine(r, u, p);
  if (unknown) out.push(unknown);
  const b = r.loop.budget;
  if (b) {
    const limit = (x: { tokens: number | null; usd: number | null }) =>
      [x.tokens === null ? null : `${tokensText(x.tokens)} tokens`, x.usd === null ? null : usdText(x.usd)].filter(Boolean).join(", ");
    const parts = [limit(b), b.daily ? `daily ${limit(b.daily)}` : ""].filter(Boolean);
    out.push(`budget: ${parts.join("; ")}${b.stopped ? ` (reached: ${p(b.stopped.reason)})` : ""}`);
  }
  return out;
}

/** Runners whose usage loop reads itself (their output, or gemini's and opencode's gateway): they report nothing through LOOP_USAGE_FILE. */
const READ_FROM_OUTPUT = ["claude", "codex", "aider", "gemini", "opencode"];

/**
 * The one line on usage nobody reported (instead of a word on every row): how many attempts, which
 * items and runners, and how a command runner reports it (docs/runners.md#reporting-usage).
 */
function unknownLine(r: StatusReport, u: NonNullable<Usage>, p: (v: unknown) => string): string | null {
  if (!u.unknown || (u.unknown.tokens === 0 && u.unknown.usd === 0)) return null;
  const silent = r.items.filter((it) => it.usage && it.usage.tokens === null && it.usage.usd === null);
  const runners = [...new Set(silent.map((it) => it.session?.runner).filter((x): x is string => typeof x === "string"))];
  const items = silent.length
    ? `; shown as ? for ${silent.map((it) => p(it.id)).join(", ")}${runners.length ? ` (runner ${runners.map(p).join(", ")})` : ""}`
    : "";
  const hint =
    runners.some((x) => !READ_FROM_OUTPUT.includes(x)) || runners.length === 0
      ? "; a command runner reports its usage by appending JSON lines to $LOOP_USAGE_FILE (docs/runners.md#reporting-usage)"
      : "";
  return `usage unknown: ${p(u.unknown.tokens)} of ${p(u.attempts)} attempt(s) reported no tokens, ${p(u.unknown.usd)} no dollars${items}${hint}`;
}

/** An item's PR and where its landing stands: "#12 https://… · landing: waiting (checks_pending: waiting for …)". */
function forgeLine(it: StatusReport["items"][number], p: (v: unknown) => string): string {
  const pr = it.pr ? `${p(it.pr.label)} ${p(it.pr.url)}` : "no pull request";
  const l = it.forge?.landing;
  // Reactions (docs/forge.md#reactions): the checks as last seen, the last reaction, the reworks left.
  const f = it.forge;
  const r = f?.lastReaction;
  const more =
    it.pr && f
      ? ` · checks: ${p(f.checks)}${r ? ` · last reaction: ${r.decision === "retry" ? `retry after ${p(r.reason)}` : `block: ${p(r.reason)}`} (attempt ${p(r.attempt)})` : ""} · reworks left: ${p(f.reworksLeft)}`
      : "";
  // A settled landing (landing_finished) is the item's own: merged, opened, blocked with a reason.
  if (it.landing) return `${pr} · landing: ${p(it.landing.outcome)}${it.landing.reason ? ` (${p(it.landing.reason)})` : ""}${more}`;
  return l ? `${pr} · landing: waiting (${p(l.code)}: ${p(l.reason)})${more}` : `${pr}${more}`;
}

/** Where to look at the item in flight: its log, its worktree, and how to attach to its tmux session. */
function inFlight(it: StatusReport["items"][number], p: (v: unknown) => string): string[] {
  const s = it.session;
  // A session record of an earlier attempt (the next one is still launching) says nothing of this one.
  const current = s !== null && s.attempt === it.attempts ? s : null;
  // Numbered as the handoff numbers it: the attempts the agent ran, this one included once it started.
  const n = it.status === "launching" ? it.ran + 1 : it.ran;
  const out = [`in flight: ${p(it.id)} (${p(shownStatus(it))}, attempt ${p(n)}${current?.alive ? ", alive" : ""})`];
  if (current?.log) out.push(`  log:      ${p(current.log)}  (\`loop logs ${p(it.id)} --follow\`)`);
  if (it.worktree) out.push(`  worktree: ${p(it.worktree)}`);
  if (it.builtOn) out.push(`  built on: ${p(it.builtOn.ref)} (${p(it.builtOn.commit.slice(0, 12))})`);
  if (it.setup)
    out.push(`  setup:    ${it.setup.reusedFrom === null ? "ran" : `reused from ${p(it.setup.reusedFrom)}`} (${p((it.setup.ms / 1000).toFixed(1))} s)`);
  if (current?.attach) out.push(`  attach:   ${p(current.attach)}`);
  return out;
}

export function renderReplay(r: ReplayReport): string {
  const out = [`replayed ${r.events} events (head seq ${r.head.seq})`, `head ${r.head.seq}:${printable(r.head.hash)}`];
  if (r.expectedHead) out.push(`expected head ${r.expectedHead.seq}:${r.expectedHead.hash} ${r.expectedHead.ok ? "ok" : "failed"}`);
  for (const [k, v] of Object.entries(r.checks)) out.push(`  ${k.padEnd(12)} ${v}`);
  if (r.findings.length) {
    out.push("findings:");
    // Per message, line breaks included: a tampered event must not print a line of its own.
    for (const f of r.findings) out.push(`  ${f.code}${f.seq !== undefined ? ` (seq ${f.seq})` : ""}: ${printable(f.message)}`);
  } else out.push("ok: the log, the projection and the files agree");
  return out.join("\n");
}
