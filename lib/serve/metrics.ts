// `GET /metrics`: the loops in the Prometheus text exposition format (version 0.0.4), one label
// `loop` per loop. Pure: the server passes what it read; docs/cli/loop-serve.md lists every metric.
import type { StatusReport } from "../reports/status.ts";
import { ITEM_STATUSES } from "../log/vocabulary.ts";
import type { AttentionKind } from "../decisions/attention.ts";
import type { History } from "../reports/history.ts";
import { reworksOf } from "./timeline.ts";

interface LoopMetrics {
  name: string;
  status: StatusReport | null;
  history: History;
  /** When the store was last written (ms since the epoch), or null. */
  lastWrite: number | null;
}

const ATTENTION_KINDS: AttentionKind[] = ["review", "question", "environment", "budget", "landing", "gave_up", "failed", "definition"];
const LOOP_STATES = ["new", "running", "paused", "stopped", "drained"];

/** A label value as the format wants it: backslash, double quote and line feed escaped. */
export function labelValue(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

export function metricsText(loops: LoopMetrics[], o: { now: number; sseClients: number }): string {
  const out: string[] = [];
  const family = (name: string, type: "gauge" | "counter", help: string, samples: [Record<string, string>, number][]) => {
    if (!samples.length) return;
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, v] of samples) {
      const l = Object.entries(labels)
        .map(([k, val]) => `${k}="${labelValue(val)}"`)
        .join(",");
      out.push(`${name}${l ? `{${l}}` : ""} ${Number.isFinite(v) ? v : "NaN"}`);
    }
  };
  const ok = loops.filter((l) => l.status !== null) as (LoopMetrics & { status: StatusReport })[];
  family(
    "loop_up",
    "gauge",
    "1 when the loop's store could be read.",
    loops.map((l) => [{ loop: l.name }, l.status ? 1 : 0]),
  );
  family(
    "loop_healthy",
    "gauge",
    "1 when loop status finds no divergence.",
    ok.map((l) => [{ loop: l.name }, l.status.healthy ? 1 : 0]),
  );
  family(
    "loop_state",
    "gauge",
    "1 for the loop's state, 0 for the others.",
    ok.flatMap((l) => LOOP_STATES.map((st): [Record<string, string>, number] => [{ loop: l.name, state: st }, l.status.loop.state === st ? 1 : 0])),
  );
  family(
    "loop_items",
    "gauge",
    "Work items by status.",
    ok.flatMap((l) => ITEM_STATUSES.map((st): [Record<string, string>, number] => [{ loop: l.name, status: st }, l.status.loop.counts[st] ?? 0])),
  );
  family(
    "loop_attempts_total",
    "counter",
    "Attempts reserved, in every epoch (from the event log).",
    loops.map((l) => [{ loop: l.name }, l.history.attempts]),
  );
  family(
    "loop_reworks_total",
    "counter",
    "Reworks: forge reactions that sent an item back to work (from the event log).",
    loops.map((l) => [{ loop: l.name }, reworksOf(l.history)]),
  );
  const usage = (l: LoopMetrics & { status: StatusReport }) => (l.status.loop as { usage?: { tokens?: unknown; usd?: unknown } | null }).usage ?? null;
  family(
    "loop_spend_usd",
    "counter",
    "What the loop's agents cost, in US dollars (only when known).",
    ok.flatMap((l) => (typeof usage(l)?.usd === "number" ? [[{ loop: l.name }, usage(l)!.usd as number] as [Record<string, string>, number]] : [])),
  );
  family(
    "loop_spend_tokens",
    "counter",
    "Tokens the loop's agents used (only when known).",
    ok.flatMap((l) => (typeof usage(l)?.tokens === "number" ? [[{ loop: l.name }, usage(l)!.tokens as number] as [Record<string, string>, number]] : [])),
  );
  family(
    "loop_attention",
    "gauge",
    "1 while the loop needs a person for this kind of condition (the conditions loop run exits 1 for).",
    ok.flatMap((l) => {
      const kinds = new Set(l.status.attention.map((a) => a.kind));
      return ATTENTION_KINDS.map((k): [Record<string, string>, number] => [{ loop: l.name, kind: k }, kinds.has(k) ? 1 : 0]);
    }),
  );
  family(
    "loop_last_tick_age_seconds",
    "gauge",
    "Seconds since the store was last written (each loop run step takes and releases its lease, so: since the last tick or operator command).",
    loops.filter((l) => l.lastWrite !== null).map((l) => [{ loop: l.name }, round((o.now - l.lastWrite!) / 1000)]),
  );
  family(
    "loop_last_event_age_seconds",
    "gauge",
    "Seconds since the last event was appended to the log.",
    loops.filter((l) => l.history.lastTs !== null).map((l) => [{ loop: l.name }, round((o.now - l.history.lastTs!) / 1000)]),
  );
  family(
    "loop_log_seq",
    "gauge",
    "The log head (the seq of the last event).",
    loops.map((l) => [{ loop: l.name }, l.history.seq]),
  );
  family("loop_serve_sse_clients", "gauge", "Pages connected for live updates.", [[{}, o.sseClients]]);
  return out.join("\n") + "\n";
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
