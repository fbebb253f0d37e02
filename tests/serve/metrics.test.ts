// /metrics: the Prometheus text format, from the status document and the history.
import { describe, expect, test } from "bun:test";
import { labelValue, metricsText } from "../../lib/serve/metrics.ts";
import { foldEvents } from "../../lib/reports/history.ts";
import { definition, failingAttempt, itemDef, LogBuilder, loopStarted, passingAttempt } from "../helpers/events.ts";

const b = new LogBuilder();
b.push(definition(1, [itemDef("a")]), loopStarted, ...failingAttempt({ item: "a", attempt: 1 }), ...passingAttempt({ item: "a", attempt: 2 }));
const history = foldEvents(b.events);
const now = Date.parse(b.events.at(-1)!.ts) + 5_000;

function status(over: { loop?: object; items?: object[] } = {}) {
  return {
    schema: "loop/status@1",
    healthy: true,
    loop: { name: "api", state: "paused", reason: "a needs input: port?", current: "a", outcome: null, counts: { needs_input: 1, passed: 2 }, ...over.loop },
    items: over.items ?? [{ id: "a", status: "needs_input", reason: "needs input", question: "port?", landing: null, pr: null }],
    findings: [],
    // What the status document computes for a loop paused by a's question (lib/decisions/attention.ts).
    attention: [{ kind: "question", item: "a", reason: "a needs input: port?", fix: ["loop ctl reply a <answer>"], slot: "question", key: "question:a:1" }],
  } as never;
}

/** `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const l of text.split("\n")) {
    if (!l || l.startsWith("#")) continue;
    const i = l.lastIndexOf(" ");
    m.set(l.slice(0, i), Number(l.slice(i + 1)));
  }
  return m;
}

describe("metricsText", () => {
  const text = metricsText([{ name: "api", status: status(), history, lastWrite: now - 2_500 }], { now, sseClients: 3 });
  const s = samples(text);

  test("every line is a comment or a sample, each family with HELP and TYPE", () => {
    for (const l of text.trimEnd().split("\n")) expect(l).toMatch(/^(# (HELP|TYPE) loop_[a-z_]+ .+|loop_[a-z_]+(\{[^}]*\})? -?[\d.]+(e[-+]?\d+)?)$/);
    const families = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
    expect(families.length).toBe(new Set(families).size);
  });

  test("items by status (every status, 0 when none), state, attention, attempts, ages", () => {
    expect(s.get('loop_items{loop="api",status="passed"}')).toBe(2);
    expect(s.get('loop_items{loop="api",status="failed"}')).toBe(0);
    expect(s.get('loop_state{loop="api",state="paused"}')).toBe(1);
    expect(s.get('loop_state{loop="api",state="running"}')).toBe(0);
    expect(s.get('loop_attention{loop="api",kind="question"}')).toBe(1);
    expect(s.get('loop_attention{loop="api",kind="failed"}')).toBe(0);
    expect(s.get('loop_attempts_total{loop="api"}')).toBe(2);
    expect(s.get('loop_last_tick_age_seconds{loop="api"}')).toBe(2.5);
    expect(s.get('loop_last_event_age_seconds{loop="api"}')).toBe(5);
    expect(s.get('loop_log_seq{loop="api"}')).toBe(history.seq);
    expect(s.get("loop_serve_sse_clients")).toBe(3);
  });

  test("spend: absent until the status document carries it; reworks: counted from the log (forge reactions that sent an item back)", () => {
    expect(text).not.toContain("loop_spend");
    expect(samples(text).get('loop_reworks_total{loop="api"}')).toBe(0);
    const rb = new LogBuilder();
    rb.push(definition(1, [itemDef("a")]), loopStarted, ...failingAttempt({ item: "a", attempt: 1 }));
    const reaction = (attempt: number, decision: "retry" | "block") => ({
      type: "forge_reaction_recorded" as const,
      item: "a",
      payload: {
        attempt,
        head: "c".repeat(40),
        signals: [{ kind: "checksFailed", key: `checksFailed:${attempt}`, summary: "build failed" }],
        decision,
        reason: "build failed",
        feedback: "",
      },
    });
    rb.push(reaction(1, "retry") as never, reaction(1, "block") as never);
    const withThem = samples(
      metricsText([{ name: "api", status: status({ loop: { usage: { tokens: 1200, usd: 0.75 } } }), history: foldEvents(rb.events), lastWrite: null }], {
        now,
        sseClients: 0,
      }),
    );
    expect([withThem.get('loop_spend_usd{loop="api"}'), withThem.get('loop_spend_tokens{loop="api"}'), withThem.get('loop_reworks_total{loop="api"}')]).toEqual(
      [0.75, 1200, 1],
    );
  });

  test("a loop that cannot be read is down, and still counted by what the log said", () => {
    const down = samples(metricsText([{ name: "api", status: null, history, lastWrite: null }], { now, sseClients: 0 }));
    expect(down.get('loop_up{loop="api"}')).toBe(0);
    expect(down.has('loop_items{loop="api",status="passed"}')).toBe(false);
    expect(down.get('loop_attempts_total{loop="api"}')).toBe(2);
  });

  test("label values are escaped", () => {
    expect(labelValue('a"b\\c\nd')).toBe('a\\"b\\\\c\\nd');
  });
});
