// The documentation is checked against the code it describes, by reading what exists: a tool added
// to cmd/tools.ts, a flag added to a tool, an event type added to lib/log/events.ts or a finding code
// added to lib/reports/replay.ts, lib/log/integrity.ts or lib/reports/status.ts makes this test demand its documentation.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { TOOLS } from "../../cmd/tools.ts";
import { renderHelp } from "../../lib/shared/cli.ts";
import { EVENT_TYPES } from "../../lib/log/events.ts";
import { FINDING_CODES } from "../../lib/reports/replay.ts";
import type { ResetReport } from "../../lib/control/reset.ts";

const REPO = resolve(import.meta.dir, "..", "..");
const read = (rel: string) => readFileSync(join(REPO, rel), "utf8");

/** Every `--flag` token in a text (not `$LOOP_…`, not the middle of a word). */
function flagsIn(text: string): Set<string> {
  return new Set([...text.matchAll(/(?<![\w$-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)/g)].map((m) => `--${m[1]}`));
}

/** The body of a markdown section: from its heading to the next heading of the same or higher level. */
function section(md: string, heading: RegExp): string | null {
  const lines = md.split("\n");
  const start = lines.findIndex((l) => heading.test(l));
  if (start < 0) return null;
  const level = /^(#+)/.exec(lines[start]!)![1]!.length;
  const end = lines.findIndex((l, i) => i > start && /^(#+)\s/.test(l) && /^(#+)/.exec(l)![1]!.length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

/** The first cell of every table row (not the header or separator rows) in a markdown text. */
function firstCells(md: string): string[] {
  const rows = md.split("\n").filter((l) => /^\s*\|/.test(l));
  const out: string[] = [];
  for (let i = 0; i < rows.length; i++) {
    const cells = rows[i]!.split("|").slice(1, -1).map((c) => c.trim());
    if (cells.every((c) => /^:?-+:?$/.test(c))) continue; // separator
    if (rows[i + 1] && /^\s*\|(\s*:?-+:?\s*\|)+\s*$/.test(rows[i + 1]!)) continue; // header
    out.push(cells[0] ?? "");
  }
  return out;
}

describe("one page per tool, flags in step with --help", () => {
  for (const [name, tool] of Object.entries(TOOLS)) {
    const page = `docs/cli/loop-${name}.md`;

    test(`${page} exists`, () => {
      expect(existsSync(join(REPO, page))).toBe(true);
    });

    test(`${page}: every flag in \`loop ${name} --help\` is in the page's flags table, and vice versa`, async () => {
      const help = await renderHelp(tool, false);
      const inHelp = flagsIn(help);
      expect(inHelp.size).toBeGreaterThan(0);
      expect(inHelp.has("--help")).toBe(true);
      const md = existsSync(join(REPO, page)) ? read(page) : "";
      const flagsSection = section(md, /^##\s+Flags\b/i);
      expect(flagsSection, `${page} needs a "## Flags" section with a table`).not.toBeNull();
      const inTable = new Set(firstCells(flagsSection ?? "").flatMap((c) => [...flagsIn(c)]));
      const undocumented = [...inHelp].filter((f) => !inTable.has(f)).sort();
      const unknown = [...inTable].filter((f) => !inHelp.has(f)).sort();
      expect({ undocumented, unknown }).toEqual({ undocumented: [], unknown: [] });
    });

    test(`${page} has a synopsis and exit codes`, () => {
      const md = existsSync(join(REPO, page)) ? read(page) : "";
      expect(md).toMatch(/^##\s+Synopsis\b/im);
      expect(md).toMatch(/^##\s+Exit codes\b/im);
      expect(md).toContain(`loop ${name}`);
    });
  }
});

describe("docs/events.md documents exactly the event vocabulary", () => {
  const md = existsSync(join(REPO, "docs/events.md")) ? read("docs/events.md") : "";
  const documented = [...md.matchAll(/^###\s+`?([a-z_]+)`?\s*$/gm)].map((m) => m[1]!);

  test("every type in lib/log/events.ts has a `### <type>` section", () => {
    expect(EVENT_TYPES.filter((t) => !documented.includes(t))).toEqual([]);
  });

  test("every `### <type>` section names a type in lib/log/events.ts, once", () => {
    expect(documented.filter((t) => !(EVENT_TYPES as string[]).includes(t))).toEqual([]);
    expect(documented.filter((t, i) => documented.indexOf(t) !== i)).toEqual([]);
  });

  test("each type's section names every payload field", async () => {
    const { PAYLOADS } = await import("../../lib/log/events.ts");
    const missing: string[] = [];
    for (const t of EVENT_TYPES) {
      const body = section(md, new RegExp(`^###\\s+\`?${t}\`?\\s*$`)) ?? "";
      const schema = PAYLOADS[t] as unknown as { entries?: Record<string, unknown> };
      for (const field of Object.keys(schema.entries ?? {}))
        if (!body.includes(`\`${field}\``)) missing.push(`${t}.${field}`);
    }
    expect(missing).toEqual([]);
  });
});

describe("finding codes are documented", () => {
  test("every replay finding code (FINDING_CODES) is in docs/cli/loop-replay.md", () => {
    const md = read("docs/cli/loop-replay.md");
    expect(FINDING_CODES.filter((c) => !md.includes(`\`${c}\``))).toEqual([]);
  });

  test("every code lib/reports/replay.ts and lib/log/integrity.ts emit is one of FINDING_CODES", () => {
    const src = read("lib/reports/replay.ts") + read("lib/log/integrity.ts");
    const emitted = new Set([...src.matchAll(/code: "([a-z_]+)"/g)].map((m) => m[1]!));
    expect(emitted.size).toBeGreaterThan(8);
    expect([...emitted].filter((c) => !(FINDING_CODES as readonly string[]).includes(c))).toEqual([]);
  });

  test("every status finding code is in docs/cli/loop-status.md", () => {
    const md = read("docs/cli/loop-status.md");
    const required = [
      "projection_behind",
      "projection_ahead",
      "projection_hash_mismatch",
      "state_file_missing",
      "unreadable_state_file",
      "state_field_mismatch",
    ];
    const src = read("lib/reports/status.ts");
    const emitted = [...src.matchAll(/code: "([a-z_]+)"/g)].map((m) => m[1]!);
    expect(emitted.length).toBeGreaterThan(0);
    const all = [...new Set([...required, ...emitted])];
    expect(all.filter((c) => !md.includes(`\`${c}\``))).toEqual([]);
  });
});

describe("links", () => {
  function markdownFiles(dir: string): string[] {
    return readdirSync(dir).flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? markdownFiles(p) : p.endsWith(".md") ? [p] : [];
    });
  }

  test("every relative link in README.md and docs/ points at a file that exists", () => {
    const files = [join(REPO, "README.md"), ...markdownFiles(join(REPO, "docs"))].filter(existsSync);
    const broken: string[] = [];
    for (const file of files) {
      const md = readFileSync(file, "utf8").replace(/```[\s\S]*?```/g, "");
      for (const m of md.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.split("#")[0]!;
        if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // anchors, URLs
        if (!existsSync(resolve(dirname(file), target))) broken.push(`${file.slice(REPO.length + 1)} -> ${m[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("docs/cli/loop-reset.md matches the tool", () => {
  const md = existsSync(join(REPO, "docs/cli/loop-reset.md")) ? read("docs/cli/loop-reset.md") : "";

  test("the pieces table names exactly the pieces reset reports", async () => {
    const { RESET_PIECES } = await import("../../lib/log/events.ts");
    const table = section(md, /^##\s+The pieces\b/i) ?? "";
    const listed = firstCells(table).map((c) => /^`([a-z]+)`$/.exec(c)?.[1]).filter(Boolean);
    expect(listed).toEqual([...RESET_PIECES]);
  });

  test("every key of the JSON document is in the page's JSON table", async () => {
    // A complete document, typed: a key added to ResetReport fails the typecheck here until it is
    // added, and then this test until the page documents it.
    const sample: ResetReport = {
      schema: "loop/reset@1",
      dry_run: false,
      ok: true,
      warnings: [],
      items: [{ item: "a", ref: null, found: true, removed: [], was_live: false, archived_branch: null, checkout: { outcome: "absent", path: null, why: null }, aside: [], errors: [], effects: [] }],
      transitions: [],
    };
    const json = section(md, /^###\s+JSON\b/i) ?? "";
    const cells = firstCells(json).join(" ");
    const missing = [
      ...Object.keys(sample).filter((k) => !cells.includes(`\`${k}`)),
      ...Object.keys(sample.items[0]!).filter((k) => !cells.includes(`.${k}`) && !cells.includes(`items[].${k}`)),
    ];
    expect(missing).toEqual([]);
  });
});
