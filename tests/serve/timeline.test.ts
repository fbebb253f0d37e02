// The timeline's two pure functions: rows from the history and the status document (timelineOf),
// and SVG from rows (timelineSvg): geometry by table, one whole picture by snapshot, and every word
// from outside escaped.
import { describe, expect, test } from "bun:test";
import { foldEvents } from "../../lib/reports/history.ts";
import { LAYOUT, MAX_ROWS, tickLabel, ticks, type TimelineInput, timelineOf, timelineSvg, usageText } from "../../lib/serve/timeline.ts";
import { definition, failingAttempt, itemDef, launch, LogBuilder, loopStarted, passingAttempt, started } from "../helpers/events.ts";

const T0 = Date.parse("2025-01-01T00:00:00.000Z");

/** A status document's items, as much of it as the timeline reads. */
function statusItems(rows: [string, string, string | null][]) {
  return { items: rows.map(([id, status, reason]) => ({ id, status, reason }) as never) };
}

describe("timelineOf", () => {
  const b = new LogBuilder();
  b.push(definition(1, [itemDef("a"), itemDef("b"), itemDef("c")]), loopStarted); // 2, 3
  b.push(...failingAttempt({ item: "a", attempt: 1 }), ...passingAttempt({ item: "a", attempt: 2 })); // 4..10, 11..17
  b.push(launch({ item: "b", attempt: 1 }), started({ item: "b", attempt: 1 })); // 18, 19: still running
  const h = foldEvents(b.events);
  const now = T0 + 30_000;
  const t = timelineOf(
    h,
    statusItems([
      ["a", "passed", "verify passed"],
      ["b", "running", null],
      ["c", "pending", null],
    ]),
    now,
    (id) => `/i/${id}`,
  );

  test("one row per status item, in the status document's order, with its status and reason", () => {
    expect(t.rows.map((r) => [r.id, r.status, r.reason, r.href])).toEqual([
      ["a", "passed", "verify passed", "/i/a"],
      ["b", "running", null, "/i/b"],
      ["c", "pending", null, "/i/c"],
    ]);
  });

  test("each attempt a bar of phases, its fate marked; an attempt in flight runs to now", () => {
    expect(t.rows[0]!.attempts.map((a) => [a.label, a.outcome, a.phases.map((p) => p.kind).join(",")])).toEqual([
      // The failed attempt's session closed (its worktree removed) a step after its verdict: closing.
      ["attempt 1", "failed", "launching,agent,airlock,closing"],
      ["attempt 2", "passed", "launching,agent,airlock,landing,closing"],
    ]);
    const running = t.rows[1]!.attempts[0]!;
    expect(running.outcome).toBeNull();
    expect(running.phases.at(-1)).toMatchObject({ kind: "agent", to: now });
    expect([running.open, running.end]).toEqual([true, now]);
    expect(t.rows[0]!.attempts[0]!.reason).toBe("verify failed, next attempt");
    expect(t.rows[2]!.attempts).toEqual([]);
  });

  test("the axis spans the first reservation to now, not the store's creation", () => {
    expect([t.start - T0, t.end - T0]).toEqual([4000, 30_000]);
  });

  test(`at most ${MAX_ROWS} rows; the rest are counted`, () => {
    const many = Array.from({ length: MAX_ROWS + 3 }, (_, i): [string, string, null] => [`x${i}`, "pending", null]);
    const big = timelineOf(h, statusItems(many), now, (id) => id);
    expect([big.rows.length, big.omitted]).toEqual([MAX_ROWS, 3]);
  });

  test("spend (the status document's) and reworks (the log's) join the row's words", () => {
    const items = [
      { id: "a", status: "passed", reason: "ok", usage: { tokens: 12345, usd: 0.5 } },
      { id: "b", status: "pending", reason: null, usage: null },
    ];
    const reworked = { ...h, items: new Map([...h.items].map(([id, x]) => [id, id === "a" ? { ...x, reworks: 2 } : x])) };
    const rows = timelineOf(reworked, { items: items as never }, now, (id) => id).rows;
    expect(rows.map((r) => r.note)).toEqual(["$0.50, 12,345 tokens · 2 reworks", null]);
  });
});

describe("words for spend and reworks", () => {
  const cases: [unknown, string | null][] = [
    [null, null],
    [undefined, null],
    [{ tokens: null, usd: null }, null],
    [{ tokens: 1000, usd: null }, "1,000 tokens"],
    [{ tokens: null, usd: 1.234 }, "$1.23"],
    ["$5", null],
  ];
  for (const [u, want] of cases) test(`usage ${JSON.stringify(u)} → ${JSON.stringify(want)}`, () => expect(usageText(u)).toBe(want));
});

describe("the axis", () => {
  const cases: [number, number, string[]][] = [
    [0, 10_000, ["00:00:00", "00:00:05", "00:00:10"]],
    [0, 3_600_000, ["00:00", "00:15", "00:30", "00:45", "01:00"]],
    [
      0,
      2 * 86_400_000,
      ["01-01 00:00", "01-01 06:00", "01-01 12:00", "01-01 18:00", "01-02 00:00", "01-02 06:00", "01-02 12:00", "01-02 18:00", "01-03 00:00"],
    ],
    [0, 6 * 86_400_000, ["01-01", "01-02", "01-03", "01-04", "01-05", "01-06", "01-07"]],
  ];
  for (const [from, to, want] of cases)
    test(`${to / 1000} s → ${want.length} ticks`, () => {
      const { step, at } = ticks(T0 + from, T0 + to);
      expect(at.map((t) => tickLabel(t, step))).toEqual(want);
    });
});

describe("timelineSvg", () => {
  const input: TimelineInput = {
    start: T0,
    end: T0 + 100_000,
    omitted: 0,
    loopWaits: [{ kind: "paused", from: T0 + 80_000, to: T0 + 90_000, title: "loop paused 10s: by alice" }],
    rows: [
      {
        id: "fix-login",
        href: "/loops/api/items/fix-login",
        status: "passed",
        reason: "verify passed",
        note: null,
        waits: [],
        attempts: [
          {
            label: "attempt 1",
            outcome: "passed",
            reason: "verify passed",
            start: T0,
            end: T0 + 50_000,
            open: false,
            phases: [
              { kind: "launching", from: T0, to: T0 + 10_000 },
              { kind: "agent", from: T0 + 10_000, to: T0 + 40_000 },
              { kind: "verify", from: T0 + 40_000, to: T0 + 50_000 },
            ],
          },
        ],
      },
      {
        id: "docs",
        href: "/loops/api/items/docs",
        status: "needs_input",
        reason: "needs input: which port?",
        note: null,
        waits: [{ kind: "needs_input", from: T0 + 60_000, to: T0 + 100_000, title: "needs input" }],
        attempts: [
          {
            label: "attempt 1",
            outcome: null,
            reason: null,
            start: T0 + 50_000,
            end: T0 + 60_000,
            open: true,
            phases: [{ kind: "agent", from: T0 + 50_000, to: T0 + 60_000 }],
          },
        ],
      },
    ],
  };
  const width = LAYOUT.label + 1000 + LAYOUT.outcome; // 1000 px of chart: 10 px a second
  const svg = timelineSvg(input, { width });

  /** The `x`/`width` of each phase rect, in order. */
  const rects = (cls: string) =>
    [...svg.matchAll(new RegExp(`<rect class="${cls}" x="([\\d.]+)" y="[\\d.]+" width="([\\d.]+)"`, "g"))].map((m) => [
      Number(m[1]) - LAYOUT.label,
      Number(m[2]),
    ]);

  test("phases are placed by time: 10 px a second here", () => {
    expect(rects("ph ph-launching")).toEqual([[0, 100]]);
    expect(rects("ph ph-agent")).toEqual([
      [100, 300],
      [500, 100],
    ]);
    expect(rects("ph ph-verify")).toEqual([[400, 100]]);
  });

  test("waits: the item's under its row, the loop's across every row", () => {
    expect(rects("wait wait-needs_input")).toEqual([[600, 400]]);
    expect(rects("lw lw-paused")).toEqual([[800, 100]]);
  });

  test("each row names its item, links its page, and says its outcome", () => {
    expect(svg).toContain(`<g class="row" data-item="docs" data-status="needs_input">`);
    expect(svg).toContain(`<a href="/loops/api/items/fix-login">`);
    expect(svg).toContain(`<tspan class="st st-passed">passed</tspan>`);
    expect(svg).toContain(`<rect class="end end-passed"`);
  });

  test("an attempt too narrow for its phases is one mark of its fate; narrow ones that touch are one mark", () => {
    const narrow = (n: number, from: number, outcome: string | null) => ({
      label: `attempt ${n}`,
      outcome,
      reason: null,
      start: T0 + from,
      end: T0 + from + 200,
      open: outcome === null,
      phases: [{ kind: "agent", from: T0 + from, to: T0 + from + 200 }],
    });
    const dense: TimelineInput = {
      ...input,
      loopWaits: [],
      rows: [{ ...input.rows[0]!, attempts: [narrow(1, 0, "failed"), narrow(2, 250, "passed"), narrow(3, 60_000, null), input.rows[0]!.attempts[0]!] }],
    };
    const out = timelineSvg(dense, { width });
    const marks = [...out.matchAll(/<rect class="att att-(\w+)" x="([\d.]+)"[^>]*><title>([^<]*)<\/title>/g)].map((m) => [
      m[1],
      Number(m[2]) - LAYOUT.label,
      m[3],
    ]);
    expect(marks).toEqual([
      ["passed", 0, "2 attempts: attempt 1 failed, attempt 2 passed"],
      ["open", 600, "attempt 3: in flight"],
    ]);
    // The wide attempt is still drawn phase by phase.
    expect(out).toContain(`<rect class="ph ph-verify" x="${LAYOUT.label + 400}"`);
  });

  test("the whole picture (snapshot)", () => {
    // One element per line, so a change reads as a diff.
    expect(svg.replace(/></g, ">\n<")).toMatchSnapshot();
  });

  test("every word from outside is escaped for its context, and nothing outside becomes markup", () => {
    const evil = `"><script>alert(1)</script><img src=x onerror=alert(2)>&amp;\u202e`;
    const hostile: TimelineInput = {
      ...input,
      loopWaits: [{ kind: "paused", from: T0, to: T0 + 1000, title: evil }],
      rows: [
        {
          ...input.rows[0]!,
          id: evil,
          href: `/x?a=${evil}`,
          status: evil,
          reason: evil,
          note: evil,
          waits: [{ kind: evil, from: T0, to: T0 + 1, title: evil }],
          attempts: [
            { ...input.rows[0]!.attempts[0]!, label: evil, outcome: evil, reason: evil, phases: [{ kind: evil, from: T0, to: T0 + 50_000 }] },
            { ...input.rows[0]!.attempts[0]!, label: evil, outcome: evil, reason: evil, start: T0 + 60_000, end: T0 + 60_001 },
          ],
        },
      ],
    };
    const out = timelineSvg(hostile, { width });
    expect(out).not.toContain("<script");
    expect(out).not.toContain("<img");
    expect(out).not.toContain(`"><script`);
    expect(out).toContain("&lt;script&gt;");
    expect(out).toContain("&amp;amp;");
    expect(out).toContain("\\u202e"); // a bidi override is shown, not obeyed
    // Only our own elements: every tag name is one the renderer writes.
    const tags = new Set([...out.matchAll(/<([a-zA-Z]+)/g)].map((m) => m[1]));
    expect([...tags].sort()).toEqual(["a", "defs", "g", "line", "pattern", "rect", "svg", "text", "title", "tspan"]);
  });
});
