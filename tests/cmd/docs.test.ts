// The documentation is checked against the code it describes, by reading what exists: a tool added
// to cmd/tools.ts, a flag added to a tool, an event type added to lib/log/events.ts or a finding code
// added to lib/reports/replay.ts, lib/log/integrity.ts or lib/reports/status.ts makes this test demand its documentation.
// So do a key accepted by loop.json (docs/loop-json.md), a common flag or an exit code
// (docs/cli/README.md); an attack added to tests/attacks/corpus.ts (docs/threat-model.md's table); and
// every link and every docs/ path a comment cites must resolve in this repo.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { TOOLS } from "../../cmd/tools.ts";
import { CONTRACT_TOOLS } from "../../cmd/loop.ts";
import { commonArgs, renderHelp } from "../../lib/shared/cli.ts";
import { DefinitionError, EXIT, RefError } from "../../lib/shared/errors.ts";
import { EVENT_TYPES } from "../../lib/log/events.ts";
import { LANDING_CODES, SETTLE_CODES, VERIFY_CODES } from "../../lib/log/vocabulary.ts";
import { FINDING_CODES } from "../../lib/reports/replay.ts";
import { STATUS_FINDING_CODES } from "../../lib/log/integrity.ts";
import type { ResetReport } from "../../lib/control/reset.ts";
import { ACCEPTED_KEYS } from "../../lib/definition/schema.ts";
import { guardsOf } from "../../lib/definition/normalized.ts";
import { normalizeDefinition } from "../../lib/definition/normalize.ts";
import { parseDefinitionText } from "../../lib/definition/loop-json.ts";
import { itemIdFromRef, parseRef } from "../../lib/definition/refs.ts";
import { parseDuration } from "../../lib/definition/duration.ts";
import { type Attack, MODES } from "../attacks/attack.ts";
import { CORPUS } from "../attacks/corpus.ts";

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
    const cells = rows[i]!.split("|")
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells.every((c) => /^:?-+:?$/.test(c))) continue; // separator
    if (rows[i + 1] && /^\s*\|(\s*:?-+:?\s*\|)+\s*$/.test(rows[i + 1]!)) continue; // header
    out.push(cells[0] ?? "");
  }
  return out;
}

/** Every row of every table in a markdown text, as trimmed cells (header and separator rows left out). */
function tableRows(md: string): string[][] {
  const rows = md.split("\n").filter((l) => /^\s*\|/.test(l));
  const out: string[][] = [];
  for (let i = 0; i < rows.length; i++) {
    const cells = rows[i]!.split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells.every((c) => /^:?-+:?$/.test(c))) continue; // separator
    if (rows[i + 1] && /^\s*\|(\s*:?-+:?\s*\|)+\s*$/.test(rows[i + 1]!)) continue; // header
    out.push(cells);
  }
  return out;
}

/** The text under a heading up to the next heading of any level (so a subsection's table is not its parent's). */
function ownSection(md: string, heading: RegExp): string | null {
  const lines = md.split("\n");
  const start = lines.findIndex((l) => heading.test(l));
  if (start < 0) return null;
  const end = lines.findIndex((l, i) => i > start && /^#+\s/.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

/** Fenced code blocks: language and body. */
function codeBlocks(md: string): { lang: string; body: string }[] {
  return [...md.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

/** `x` -> x; the text of a cell that is one code span. */
const unquote = (cell: string) => cell.replace(/^`(.*)`$/, "$1");

describe("one page per tool, flags in step with --help", () => {
  for (const [name, tool] of Object.entries(TOOLS)) {
    const page = `docs/cli/loop-${name}.md`;

    test(`${page} exists`, () => {
      expect(existsSync(join(REPO, page))).toBe(true);
    });

    test(`\`loop ${name} --help\` leads with two or three examples of its own flags, and no line ends in blanks`, async () => {
      const help = await renderHelp(tool, false);
      expect(help.indexOf("EXAMPLES")).toBeGreaterThan(0);
      expect(help.indexOf("\nEXAMPLES\n")).toBeLessThan(help.indexOf("\nOPTIONS\n"));
      expect(tool.examples.length).toBeGreaterThanOrEqual(2);
      expect(tool.examples.length).toBeLessThanOrEqual(3);
      // Each example runs this tool, with flags it has: an example never teaches a flag that is gone.
      const known = new Set(
        Object.entries({ ...commonArgs, ...tool.args }).flatMap(([k, a]) => [
          `--${k}`,
          ...((a as { short?: string }).short ? [`-${(a as { short: string }).short}`] : []),
        ]),
      );
      for (const [command] of tool.examples) {
        const own = command.split(/\s*(?:\|\||\||&&)\s*/).find((part) => part.includes(`loop ${name}`));
        expect({ command, runs: own !== undefined }).toEqual({ command, runs: true });
        const flags = (own!.match(/(?<=\s)--?[a-z][a-z-]*/g) ?? []).filter((f) => !known.has(f));
        expect({ command, unknown: flags }).toEqual({ command, unknown: [] });
      }
      expect(help.split("\n").filter((l) => /[ \t]$/.test(l))).toEqual([]);
    });

    test(`${page}: every flag in \`loop ${name} --help\` is in the page's flags table, and vice versa`, async () => {
      const help = await renderHelp(tool, false);
      // The options' table and what follows it: the examples are checked on their own (above).
      const inHelp = flagsIn(help.slice(help.indexOf("\nOPTIONS\n")));
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
      for (const field of Object.keys(schema.entries ?? {})) if (!body.includes(`\`${field}\``)) missing.push(`${t}.${field}`);
    }
    expect(missing).toEqual([]);
  });
});

// A verdict's code is a contract (status, the page and scripts read it): each event's section lists
// its codes, one table row each, exactly as lib/log/vocabulary.ts does (the forge's refusals may share a row).
describe("docs/events.md lists exactly the codes of each verdict", () => {
  const md = read("docs/events.md");
  const lists: [string, readonly string[]][] = [
    ["verify_finished", VERIFY_CODES],
    ["landing_finished", LANDING_CODES],
    ["item_settled", SETTLE_CODES],
  ];
  for (const [type, codes] of lists)
    test(`${type}: its table of codes`, () => {
      const body = section(md, new RegExp(`^###\\s+\`?${type}\`?\\s*$`)) ?? "";
      // The tables whose first column is headed `code`.
      const tables = [...body.matchAll(/^\|\s*code\s*\|.*(?:\n\|.*)*/gm)].map((m) => m[0]);
      const listed = tables.flatMap((t) => firstCells(t).flatMap((cell) => [...cell.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!)));
      expect(listed.sort()).toEqual([...codes].sort());
    });
});

describe("finding codes are documented", () => {
  test("every replay finding code (FINDING_CODES) is in docs/cli/loop-replay.md", () => {
    const md = read("docs/cli/loop-replay.md");
    expect(FINDING_CODES.filter((c) => !md.includes(`\`${c}\``))).toEqual([]);
  });

  // The codes each verb emits are held to its list by the compiler (lib/log/integrity.ts types a
  // finding by its verb's codes); these hold the lists to the pages.
  test("every status finding code (STATUS_FINDING_CODES) is in docs/cli/loop-status.md", () => {
    const md = read("docs/cli/loop-status.md");
    expect(STATUS_FINDING_CODES.filter((c) => !md.includes(`\`${c}\``))).toEqual([]);
  });
});

describe("docs/loop-json.md documents loop.json as the code reads it", () => {
  const md = existsSync(join(REPO, "docs/loop-json.md")) ? read("docs/loop-json.md") : "";
  // The page's table for each object of loop.json, by the name ACCEPTED_KEYS gives it.
  const TABLES: Record<string, RegExp> = {
    definition: /^##\s+Top level\s*$/,
    defaults: /^##\s+defaults\s*$/,
    timeouts: /^###\s+timeouts\s*$/,
    runner: /^##\s+runners\s*$/,
    control: /^##\s+control\s*$/,
    sessions: /^##\s+sessions\s*$/,
    workspace: /^##\s+workspace\s*$/,
    notify: /^##\s+notify\s*$/,
    channel: /^###\s+channels\s*$/,
    item: /^##\s+items\s*$/,
    forge: /^##\s+forge\s*$/,
    tracker: /^##\s+tracker\s*$/,
    moveTo: /^###\s+moveTo\s*$/,
    environment: /^##\s+environment\s*$/,
    reactions: /^##\s+reactions\s*$/,
    budget: /^###\s+budget\s*$/,
    loopBudget: /^##\s+budget\s*$/,
    daily: /^###\s+daily\s*$/,
    price: /^##\s+prices\s*$/,
    guards: /^##\s+guards\s*$/,
  };
  const rowsOf = (name: string) => tableRows(ownSection(md, TABLES[name]!) ?? "");

  test("every object of loop.json has its table", () => {
    expect(Object.keys(TABLES).sort()).toEqual(Object.keys(ACCEPTED_KEYS).sort());
    expect(Object.keys(TABLES).filter((name) => rowsOf(name).length === 0)).toEqual([]);
  });

  for (const name of Object.keys(TABLES))
    test(`the ${name} table lists exactly the keys loop.json accepts there`, () => {
      const documented = rowsOf(name).map((r) => unquote(r[0]!));
      expect([...documented].sort()).toEqual([...ACCEPTED_KEYS[name]!].sort());
    });

  test("the documented defaults are the ones the code fills in", () => {
    const def = normalizeDefinition({ name: "n", items: [{ id: "a", prompt: "p", verify: false }] });
    const item = def.items[0]!;
    const withForge = normalizeDefinition({ name: "n", forge: { provider: "github", repo: "o/r" }, items: [{ id: "a", prompt: "p", verify: false }] });
    const withGitLab = normalizeDefinition({ name: "n", forge: { provider: "gitlab", repo: "g/s/p" }, items: [{ id: "a", prompt: "p", verify: false }] });
    // A default that differs per forge is written `"github's"; GitLab: "gitlab's"`.
    const github = (cell: string) => cell.split("; GitLab:")[0]!.trim();
    const gitlab = (cell: string) => (cell.split("; GitLab:")[1] ?? "").trim();
    // Durations compare by value: "60m" is the default that "1h" would also spell.
    const ms = (cell: unknown) => parseDuration(cell as string);
    const expected: [string, string, unknown, ((cell: unknown) => unknown)?, ((cell: string) => string)?][] = [
      ["defaults", "runner", item.runner],
      ["defaults", "model", item.model],
      ["defaults", "maxAttempts", item.maxAttempts],
      ["defaults", "landing", def.landing],
      ["timeouts", "launch", item.timeouts.launch, ms],
      ["timeouts", "stall", item.timeouts.stall, ms],
      ["timeouts", "verify", item.timeouts.verify, ms],
      ["control", "requireStartCommand", def.requireStartCommand],
      ["sessions", "tmux", def.tmux],
      ["workspace", "base", def.base],
      ["workspace", "target", def.target.replace(/^loop\/n\//, "loop/<name>/")],
      ["workspace", "keepCheckoutOnClose", def.keepCheckoutOnClose],
      ["timeouts", "landing", withForge.items[0]!.timeouts.landing, ms],
      ["forge", "apiUrl", withForge.forge!.apiUrl, undefined, github],
      ["forge", "apiUrl", withGitLab.forge!.apiUrl, undefined, gitlab],
      ["forge", "remote", withForge.forge!.remote],
      ["forge", "tokenEnv", withForge.forge!.tokenEnv, undefined, github],
      ["forge", "tokenEnv", withGitLab.forge!.tokenEnv, undefined, gitlab],
      ["forge", "authorizeWriters", withForge.forge!.authorizeWriters],
      ["forge", "pollInterval", withForge.forge!.pollInterval, ms],
      ["notify", "timeout", normalizeDefinition({ name: "n", notify: { command: ["x"] }, items: [] }).notify!.timeout, ms],
      ["guards", "noProgress", guardsOf(def).noProgress],
      ["guards", "identicalFailure", guardsOf(def).identicalFailure],
    ];
    const wrong = expected.flatMap(([table, key, value, read = (x: unknown) => x, part = (c: string) => c]) => {
      const cell = part(rowsOf(table).find((r) => unquote(r[0]!) === key)?.[2] ?? "");
      let documented: unknown;
      try {
        documented = read(JSON.parse(unquote(cell)));
      } catch {
        documented = undefined;
      }
      return documented === value ? [] : [`${table}.${key}: documented ${cell}, code ${JSON.stringify(value)}`];
    });
    expect(wrong).toEqual([]);
  });

  test("the id rule is the one of the JSON Schema", () => {
    const schema = JSON.parse(read("schema/loop.schema.json"));
    expect(md).toContain(`\`${schema.$defs.id.pattern}\``);
  });

  test("every json example is a valid loop.json", () => {
    const examples = codeBlocks(md).filter((b) => b.lang === "json");
    expect(examples.length).toBeGreaterThan(0);
    for (const { body } of examples) expect(() => parseDefinitionText(body)).not.toThrow();
  });

  test("the invalid example reports exactly the problems shown", () => {
    const blocks = codeBlocks(ownSection(md, /^##\s+Problems\s*$/) ?? "");
    const file = blocks.find((b) => b.lang === "jsonc");
    const shown = blocks.find((b) => b.lang === "text");
    expect(file && shown).toBeTruthy();
    let lines: string[] = [];
    try {
      parseDefinitionText(file!.body);
    } catch (e) {
      if (!(e instanceof DefinitionError)) throw e;
      lines = e.lines();
    }
    expect(
      shown!.body
        .trimEnd()
        .replace(/^loop-run: /, "")
        .split("\n"),
    ).toEqual(lines);
  });

  test("the ref table: canonical forms and derived ids are the code's; refused refs are refused", () => {
    const rows = tableRows(ownSection(md, /^###\s+Ids derived from refs\s*$/) ?? "");
    expect(rows.length).toBeGreaterThan(3);
    for (const [ref, canonical, id] of rows) {
      if (canonical!.startsWith("*refused")) {
        expect(() => parseRef(unquote(ref!))).toThrow(RefError);
        continue;
      }
      const parsed = parseRef(unquote(ref!));
      expect([parsed.canonical, itemIdFromRef(parsed)]).toEqual([unquote(canonical!), unquote(id!)]);
    }
  });

  test("every ref the grammar section calls refused is refused", () => {
    const rows = tableRows(ownSection(md, /^##\s+Work-item refs\s*$/) ?? "");
    expect(rows.length).toBeGreaterThan(3);
    const accepted = rows.map((r) => unquote(r[0]!)).filter((ref) => !(parseRefOrError(ref) instanceof RefError));
    expect(accepted).toEqual([]);
  });
});

function parseRefOrError(ref: string): unknown {
  try {
    return parseRef(ref);
  } catch (e) {
    return e;
  }
}

describe("docs/cli/README.md is the contract the code keeps", () => {
  const md = existsSync(join(REPO, "docs/cli/README.md")) ? read("docs/cli/README.md") : "";

  test("the common flags table lists exactly the common flags, with their short forms", () => {
    const rows = tableRows(section(md, /^##\s+Common flags\b/) ?? "").map((r) => r[0]!);
    const documented = rows.flatMap((c) => [...flagsIn(c)]).sort();
    expect(documented).toEqual(
      Object.keys(commonArgs)
        .map((k) => `--${k}`)
        .sort(),
    );
    const shortMissing = Object.entries(commonArgs)
      .filter(([, a]) => "short" in a)
      .filter(([k, a]) => !rows.some((c) => flagsIn(c).has(`--${k}`) && c.includes(`\`-${(a as { short: string }).short}\``)))
      .map(([k]) => k);
    expect(shortMissing).toEqual([]);
  });

  test("the exit codes table lists exactly the exit codes", () => {
    const rows = tableRows(section(md, /^##\s+Exit codes\b/) ?? "").map((r) => Number(r[0]));
    expect(rows.sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
  });

  test("the tools table names every tool of the contract", () => {
    const rows = tableRows(section(md, /^##\s+Tools\b/) ?? "").map((r) => unquote(r[0]!));
    expect(rows.map((c) => c.split(" ")[1]).sort()).toEqual([...CONTRACT_TOOLS].sort());
  });

  test("every tool's page links the contract from its introduction", () => {
    const missing = Object.keys(TOOLS).filter((name) => {
      const page = `docs/cli/loop-${name}.md`;
      const intro = existsSync(join(REPO, page)) ? read(page).split(/^##\s/m)[0]! : "";
      return !intro.includes("](README.md)");
    });
    expect(missing).toEqual([]);
  });

  test("README.md's Documentation list links the contract and the loop.json reference", () => {
    const docs = section(read("README.md"), /^##\s+Documentation\b/) ?? "";
    expect(docs).toContain("](docs/cli/README.md)");
    expect(docs).toContain("](docs/loop-json.md)");
  });
});

/** Every file of the repository outside node_modules, .git and build output. */
function repoFiles(dir = REPO): string[] {
  return readdirSync(dir).flatMap((f) => {
    // node_modules at any depth: tests/agents/ has its own (the agent CLIs, npm run agents:install).
    if (f === "node_modules" || (dir === REPO && [".git", "dist", ".loop"].includes(f))) return [];
    const p = join(dir, f);
    const st = statSync(p);
    return st.isDirectory() ? repoFiles(p) : st.isFile() ? [p] : [];
  });
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to '-'. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a markdown file's headings (outside code blocks), with GitHub's -1, -2 for repeats. */
function anchorsOf(file: string): Set<string> {
  const out = new Set<string>();
  const md = readFileSync(file, "utf8").replace(/^```[\s\S]*?^```/gm, "");
  for (const m of md.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    let a = base;
    for (let n = 1; out.has(a); n++) a = `${base}-${n}`;
    out.add(a);
  }
  return out;
}

/** Why `target` (a path relative to `from`'s folder, maybe with #anchor) does not resolve, or null. */
function brokenLink(from: string, target: string): string | null {
  const [path, anchor] = target.split("#") as [string, string | undefined];
  const file = path ? resolve(dirname(from), path) : from;
  if (!existsSync(file)) return "no such file";
  if (anchor && file.endsWith(".md") && !anchorsOf(file).has(anchor)) return `no heading #${anchor}`;
  return null;
}

describe("links", () => {
  function markdownFiles(dir: string): string[] {
    return readdirSync(dir).flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? markdownFiles(p) : p.endsWith(".md") ? [p] : [];
    });
  }

  test("every relative link in README.md and docs/ points at a file and a heading that exist", () => {
    const files = [join(REPO, "README.md"), ...markdownFiles(join(REPO, "docs"))].filter(existsSync);
    const broken: string[] = [];
    for (const file of files) {
      const md = readFileSync(file, "utf8").replace(/```[\s\S]*?```/g, "");
      for (const m of md.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(m[1]!)) continue; // URLs
        const why = brokenLink(file, m[1]!);
        if (why) broken.push(`${relative(REPO, file)} -> ${m[1]}: ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  // docs/ pages of other projects that comments cite by their own path.
  const ELSEWHERE = ["docs/exec.md"]; // openai/codex, in lib/definition/runners.ts

  test("every docs/ page a source, test, script or bench file names exists (with its heading)", () => {
    const broken: string[] = [];
    for (const file of repoFiles().filter((f) => f.endsWith(".ts"))) {
      for (const m of readFileSync(file, "utf8").matchAll(/(?<![\w./-])docs\/[\w./-]*\.md(?:#[\w-]+)?/g)) {
        if (ELSEWHERE.includes(m[0])) continue;
        const why = brokenLink(join(REPO, "x"), m[0]);
        if (why) broken.push(`${relative(REPO, file)}: ${m[0]}: ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test("nothing cites the design document that is not in this repository", () => {
    // It was kept outside the repository; what the code relies on now lives under docs/.
    const cite = new RegExp(["DESIGN", "(?:\\.md|'s|\\s*\u00a7|\\s+\\d)"].join(""));
    const citing = repoFiles()
      .filter((f) => /\.(ts|md|json|sh|txt|yml|yaml)$/.test(f) || !/\.\w+$/.test(f))
      .filter((f) => cite.test(readFileSync(f, "utf8")))
      .map((f) => relative(REPO, f));
    expect(citing).toEqual([]);
  });
});

describe("environment variables", () => {
  test("every LOOP_* variable the code names is documented under docs/ (or the README)", () => {
    const names = new Set<string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith(".ts"))
          // A constant of the code's own (`export const LOOP_MARKER`) is not a variable.
          for (const m of readFileSync(p, "utf8").matchAll(/\bLOOP_[A-Z][A-Z_]*\b/g))
            if (!new RegExp(`const ${m[0]}\\b`).test(readFileSync(p, "utf8"))) names.add(m[0]);
      }
    };
    walk(join(REPO, "lib"));
    walk(join(REPO, "cmd"));
    expect(names.has("LOOP_SESSION_SCOPE")).toBe(true);
    const docs = [
      read("README.md"),
      ...readdirSync(join(REPO, "docs"), { recursive: true })
        .map(String)
        .filter((f) => f.endsWith(".md"))
        .map((f) => read(join("docs", f))),
    ].join("\n");
    expect([...names].filter((n) => !docs.includes(n)).sort()).toEqual([]);
  });
});

describe("docs/cli/loop-reset.md matches the tool", () => {
  const md = existsSync(join(REPO, "docs/cli/loop-reset.md")) ? read("docs/cli/loop-reset.md") : "";

  test("the pieces table names exactly the pieces reset reports", async () => {
    const { RESET_PIECES } = await import("../../lib/log/events.ts");
    const table = section(md, /^##\s+The pieces\b/i) ?? "";
    const listed = firstCells(table)
      .map((c) => /^`([a-z]+)`$/.exec(c)?.[1])
      .filter(Boolean);
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
      items: [
        {
          item: "a",
          ref: null,
          found: true,
          removed: [],
          was_live: false,
          archived_branch: null,
          checkout: { outcome: "absent", path: null, why: null },
          aside: [],
          errors: [],
          effects: [],
          stays: [],
        },
      ],
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

describe("docs/threat-model.md lists the attack corpus", () => {
  const md = read("docs/threat-model.md");
  const rows = tableRows(ownSection(md, /^##\s+The attack corpus\s*$/) ?? "");
  test("one row per attack of tests/attacks/corpus.ts, in its order, with its modes and where it came from", () => {
    const modes = (a: Attack) => ((a.modes ?? MODES).length === MODES.length ? "both" : (a.modes ?? MODES).join(", "));
    expect(rows.map((r) => [unquote(r[0]!), r[2], r[3]])).toEqual(CORPUS.map((a) => [a.id, modes(a), a.origin]));
  });
  test("ids are kebab-case and unique; every attack says what it expects", () => {
    expect(CORPUS.filter((a) => !/^[a-z0-9]+(-[a-z0-9]+)*$/.test(a.id)).map((a) => a.id)).toEqual([]);
    expect(new Set(CORPUS.map((a) => a.id)).size).toBe(CORPUS.length);
    expect(CORPUS.filter((a) => a.expect.length === 0 || !a.title || !a.origin).map((a) => a.id)).toEqual([]);
  });
});
