// The direction of imports (.dependency-cruiser.cjs), checked from `npm test`: the real tree has no
// violation, and the guard does fail, naming the imports, on a copy of the tree with an upward import,
// a cycle, a sibling import and an import of cmd/ planted in it. One cruise answers both (of the
// copy: what the plants do not explain is the real tree's). It runs exactly as `npm run
// lint:imports` does (its command line is read from package.json).
import { describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { doubledImports, readSources, unusedExports } from "./helpers/surfaces.ts";
import { ITEM_TABLES } from "../lib/log/rows.ts";
import { LANDING_CODES, SETTLE_CODES, VERIFY_CODES } from "../lib/log/vocabulary.ts";

const REPO = resolve(import.meta.dir, "..");
const DEPCRUISE = join(REPO, "node_modules", ".bin", "depcruise");

/** Every folder of sources: `npm run lint:imports` cruises them all. */
const ROOTS = ["lib", "cmd", "tests", "scripts", "bench"];

/** `npm run lint:imports`'s options (its command line is `depcruise <ROOTS> <options>`). */
function lintOptions(): string[] {
  const script: string = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).scripts["lint:imports"];
  const prefix = `depcruise ${ROOTS.join(" ")} `;
  expect(script.startsWith(prefix)).toBe(true);
  return script.slice(prefix.length).split(/\s+/);
}

/** Run depcruise (under bun, which starts it faster than node) in `cwd` over `roots`. */
function cruise(cwd: string, roots: string[]): { exit: number; output: string } {
  const r = Bun.spawnSync([process.execPath, DEPCRUISE, ...roots, ...lintOptions()], {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { exit: r.exitCode ?? -1, output: r.stdout.toString() + r.stderr.toString() };
}

/** Each violation of the `err` report as `rule: a → b` (a cycle: `rule: a → b → … → a`), whitespace folded. */
function violations(output: string): string[] {
  return [...output.replace(/\s+/g, " ").matchAll(/\berror ([\w-]+): (.+?)(?= error [\w-]+:| x \d+ dependency violations|$)/g)].map(
    (m) => `${m[1]}: ${m[2]!.trim()}`,
  );
}

/** A cycle as the sorted set of its modules, so it does not matter where depcruise starts it. */
function cycleKey(v: string): string {
  return [...new Set(v.replace(/^no-cycles: /, "").split(" → "))].sort().join(" ");
}

/** Imports planted in the copy, by file: each breaks one rule (the comment says which). */
const PLANTS: [string, string][] = [
  ["lib/log/store.ts", `import { git } from "../repo/git.ts";`], // upward (git.ts imports nothing of the log: no cycle)
  ["lib/repo/git.ts", `import { landMerge } from "./workspace.ts";`], // a cycle inside one folder (workspace.ts imports git.ts)
  ["lib/definition/duration.ts", `import type { ACCEPTED_KEYS } from "./schema.ts";`], // a type-only cycle
  ["lib/reports/diff.ts", `import { confirmOrRefuse } from "../control/confirm.ts";`], // a sibling
  ["lib/forge/merge-gate.ts", `import { git } from "../repo/git.ts";`], // upward from the forge
  ["lib/supervisor/tmux.ts", `import { REPLY_FILE } from "../step/handoff.ts";`], // the supervisor importing the tick (handoff.ts imports no supervisor module: no cycle)
  ["lib/supervisor/liveness.ts", `import { git } from "../repo/git.ts";`], // the supervisor importing its sibling, the repository
  ["lib/decisions/attempt.ts", `import { git } from "../repo/git.ts";`], // a decision importing an effect room
  ["lib/decisions/guards.ts", `import { readFileSync } from "node:fs";`], // a decision reading a file
  ["lib/decisions/next-work.ts", `import { writeFileAtomic } from "../shared/fsutil.ts";`], // a decision reaching a file helper below it
  ["lib/repo/object-store.ts", `import { REPLY_FILE } from "../step/handoff.ts";`], // the repository importing the tick
  ["lib/supervisor/self.ts", `import { openForge } from "../forge/open.ts";`], // the supervisor importing its sibling, the forge
  ["lib/serve/html.ts", `import { confirmOrRefuse } from "../control/confirm.ts";`], // the web page importing control
  ["lib/serve/files.ts", `import { runStep } from "../step/step.ts";`], // the web page reaching the writer through the tick
  ["lib/reports/render.ts", `import { escapeText } from "../serve/html.ts";`], // a read verb importing the web page
  ["lib/serve/serve.ts", `import { actionsWith } from "./actions.ts";`], // the server loading its actions itself (so --read-only would hold the writer)
  ["lib/writer/run-pid.ts", `import { REPLY_FILE } from "../step/handoff.ts";`], // the verbs' services importing the tick above them (handoff.ts imports nothing of lib/writer: no cycle)
  ["lib/writer/disk-fault.ts", `import { openForge } from "../forge/open.ts";`], // the verbs' services importing their sibling, the forge
];
/** Files created in the copy: a folder not placed in the rules, importing upward (nothing else would stop it), and lib/ importing cmd/. */
const NEW_FILES: [string, string][] = [
  ["lib/unplaced/draft.ts", `import { applyCtl } from "../control/ctl.ts";\nexport const apply = applyCtl;\n`],
  ["lib/step/planted.ts", `import { loadTool } from "../../cmd/registry.ts";\nexport const load = loadTool;\n`],
];
const PLANTED_CYCLES = ["lib/definition/duration.ts lib/definition/schema.ts", "lib/repo/git.ts lib/repo/workspace.ts"];

/**
 * The one cruise of this file (a cruise takes seconds): the whole tree, as `npm run lint:imports`
 * cruises it, copied with the imports above planted. What the plants explain is the guard failing;
 * anything else is a violation of the real tree.
 */
const cruised = (() => {
  let r: { exit: number; output: string; found: string[] } | null = null;
  return () => {
    if (r) return r;
    const dir = mkdtempSync(join(tmpdir(), "loop-arch-"));
    try {
      // Never a node_modules (the agent CLIs under tests/agents bring 1.8 GB): the cruise does not follow them.
      for (const f of [...ROOTS, "tsconfig.json", ".dependency-cruiser.cjs", "package.json"])
        cpSync(join(REPO, f), join(dir, f), { recursive: true, filter: (src) => basename(src) !== "node_modules" });
      symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
      for (const [file, line] of PLANTS) writeFileSync(join(dir, file), `${line}\n${readFileSync(join(dir, file), "utf8")}`);
      for (const [file, text] of NEW_FILES) {
        mkdirSync(dirname(join(dir, file)), { recursive: true });
        writeFileSync(join(dir, file), text);
      }
      const c = cruise(dir, ROOTS);
      r = { ...c, found: violations(c.output) };
      return r;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
})();

const plantedFiles = new Set([...PLANTS, ...NEW_FILES].map(([f]) => f));
/** Whether a plant explains a violation: a planted file imports on its way (the planted test holds those to the list). */
const explained = (v: string) => [...plantedFiles].some((f) => v.includes(`${f} → `));

describe("the direction of imports", () => {
  test("the tree has no violation (npm run lint:imports)", () => {
    const r = cruised();
    // On failure the message is depcruise's own: the rule, and the import that breaks it.
    const real = r.found.filter((v) => !explained(v));
    if (real.length) console.error(r.output);
    expect(real).toEqual([]);
    // It did cruise the tree (a resolution problem would find no imports, and so no violation).
    const m = /(\d+) modules, (\d+) dependencies cruised/.exec(r.output);
    if (!m) console.error(r.output);
    expect(m).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(80);
    expect(Number(m![2])).toBeGreaterThan(300);
  });

  test("fails on planted violations, naming each import", () => {
    const r = cruised();
    const found = r.found;
    try {
      expect(r.exit).not.toBe(0);
      // The writer reached from lib/serve: named once per serve module that reaches it, each with the way.
      const reach = found.filter((v) => v.startsWith("serve-never-reaches-the-writer:"));
      expect(reach).toContain("serve-never-reaches-the-writer: lib/serve/files.ts → lib/log/store.ts lib/step/step.ts → lib/log/store.ts");
      // And from the server's start-up, through the actions it must never import itself (--read-only would then hold the writer).
      expect(reach).toContain(
        "serve-never-reaches-the-writer: lib/serve/serve.ts → lib/log/store.ts lib/serve/actions.ts → lib/control/ctl-request.ts → lib/control/ctl.ts → lib/log/writer.ts → lib/log/store.ts",
      );
      expect(
        reach
          .filter((v) => !v.startsWith("serve-never-reaches-the-writer: lib/serve/serve.ts "))
          .every((v) => v.includes("lib/step/step.ts → lib/log/store.ts")),
      ).toBe(true);
      expect(found.filter((v) => !v.startsWith("no-cycles:") && !reach.includes(v)).sort()).toEqual([
        "cmd-imported-only-by-cmd-tests-scripts-bench: lib/step/planted.ts → cmd/registry.ts",
        "decisions-import-nothing-effectful: lib/decisions/guards.ts → fs",
        "decisions-import-nothing-effectful: lib/decisions/next-work.ts → lib/shared/fsutil.ts",
        "decisions-import-only-definition-log-shared: lib/decisions/attempt.ts → lib/repo/git.ts",
        "forge-imports-only-below: lib/forge/merge-gate.ts → lib/repo/git.ts",
        "lib-module-in-a-known-folder: lib/unplaced/draft.ts → lib/control/ctl.ts",
        "log-imports-only-shared: lib/log/store.ts → lib/repo/git.ts",
        "repo-imports-only-below: lib/repo/object-store.ts → lib/step/handoff.ts",
        "reports-and-control-import-only-below: lib/reports/diff.ts → lib/control/confirm.ts",
        "reports-and-control-import-only-below: lib/reports/render.ts → lib/serve/html.ts",
        "serve-imports-only-reports-and-below: lib/serve/html.ts → lib/control/confirm.ts",
        "serve-never-imports-its-actions: lib/serve/serve.ts → lib/serve/actions.ts",
        "step-imports-only-below: lib/step/planted.ts → cmd/registry.ts",
        "supervisor-imports-only-below: lib/supervisor/liveness.ts → lib/repo/git.ts",
        "supervisor-imports-only-below: lib/supervisor/self.ts → lib/forge/open.ts",
        "supervisor-imports-only-below: lib/supervisor/tmux.ts → lib/step/handoff.ts",
        "writer-imports-only-below: lib/writer/disk-fault.ts → lib/forge/open.ts",
        "writer-imports-only-below: lib/writer/run-pid.ts → lib/step/handoff.ts",
      ]);
      const cycles = found
        .filter((v) => v.startsWith("no-cycles:"))
        .map(cycleKey)
        .sort();
      expect(cycles).toEqual(PLANTED_CYCLES);
    } catch (err) {
      console.error(r.output);
      throw err;
    }
  });
});

// docs/architecture.md is the map a newcomer reads first: it must name what is there.
describe("docs/architecture.md agrees with the code", () => {
  const md = readFileSync(join(REPO, "docs/architecture.md"), "utf8");
  /** From `heading` to the next heading of its level or above. */
  const section = (heading: string) => {
    const at = md.indexOf(heading);
    expect(at, heading).toBeGreaterThanOrEqual(0);
    const level = heading.indexOf(" ");
    const next = new RegExp(`\\n#{1,${level}} `, "g");
    next.lastIndex = at + heading.length;
    const end = next.exec(md)?.index;
    return md.slice(at, end);
  };

  /** Every module under `dir` (a path relative to the repository, ending in /), folders included. */
  function modules(dir: string): string[] {
    return readdirSync(join(REPO, dir)).flatMap((n) =>
      statSync(join(REPO, dir, n)).isDirectory() ? modules(`${dir}${n}/`) : n.endsWith(".ts") ? [`${dir}${n}`] : [],
    );
  }

  test("the code map names every module of lib/, in its folder's section (lib/step/forge/ in its own paragraph)", () => {
    const map = section("## Code map");
    const folders = new Map(
      [...map.split(/^### /m)].flatMap((part) => {
        const m = /^`(lib\/[a-z-]+\/)`/.exec(part);
        return m ? [[m[1]!, part] as const] : [];
      }),
    );
    const missing = modules("lib/").filter((path) => {
      const parts = path.split("/");
      let text = folders.get(`lib/${parts[1]}/`) ?? "";
      // A nested folder (lib/step/forge/) is named in its parent's section, its modules after it.
      if (parts.length > 3) text = text.slice(Math.max(0, text.indexOf(`\`${parts.slice(0, -1).join("/")}/\``)));
      return !text.includes(`\`${parts.at(-1)}\``);
    });
    expect(missing).toEqual([]);
  });

  test("principle 1 names exactly the projection tables", () => {
    const principle = /^1\. \*\*The event log is the truth\.\*\*[\s\S]*?(?=^2\. )/m.exec(md)?.[0] ?? "";
    const named = [...principle.matchAll(/`(proj_[a-z_]+)`/g)].map((m) => m[1]!);
    expect(named.sort()).toEqual(["proj_loop", ...ITEM_TABLES].sort());
  });

  test("`loop serve --read-only` never loads the writer: only the actions, imported when it takes them, reach it", () => {
    // The static imports of a file, followed through lib/ (a dynamic import() loads only when it runs).
    const transpiler = new Bun.Transpiler({ loader: "ts" });
    const source = (file: string) => readFileSync(join(REPO, file), "utf8").replace(/^#!.*/, "");
    const scan = (file: string) => transpiler.scanImports(source(file));
    const closure = (entry: string): Set<string> => {
      const seen = new Set<string>();
      const todo = [entry];
      while (todo.length) {
        const file = todo.pop()!;
        if (seen.has(file)) continue;
        seen.add(file);
        for (const imp of scan(file))
          if (imp.kind === "import-statement" && imp.path.startsWith(".") && imp.path.endsWith(".ts")) todo.push(join(dirname(file), imp.path));
      }
      return seen;
    };
    const served = closure("cmd/loop-serve.ts");
    expect(served.has("lib/log/store.ts")).toBe(false);
    expect([...served].filter((f) => f.startsWith("lib/control/"))).toEqual([]);
    // The actions are the dynamic import, under the --read-only test, and they do reach the writer.
    expect(
      scan("cmd/loop-serve.ts")
        .filter((i) => i.kind === "dynamic-import")
        .map((i) => i.path),
    ).toEqual(["../lib/serve/actions.ts"]);
    // Read through `source`: a path to the entry joined here would count as spawning it (tests/test-tiers.test.ts).
    expect(source("cmd/loop-serve.ts")).toContain(`const act = args["read-only"] ? undefined : (await import("../lib/serve/actions.ts"))`);
    expect(closure("lib/serve/actions.ts").has("lib/log/store.ts")).toBe(true);
  });

  test("what a tool loads before it knows whether the loop has a forge is the list the forge's invariant gives", () => {
    // The static imports of each tool, followed through lib/ (a dynamic import() is not followed: it
    // loads only when it runs). Of lib/forge/ and lib/step/forge/ only these may be among them.
    const transpiler = new Bun.Transpiler({ loader: "ts" });
    const closure = (entry: string): Set<string> => {
      const seen = new Set<string>();
      const todo = [entry];
      while (todo.length) {
        const file = todo.pop()!;
        if (seen.has(file)) continue;
        seen.add(file);
        const text = readFileSync(join(REPO, file), "utf8").replace(/^#!.*/, "");
        for (const imp of transpiler.scanImports(text))
          if (imp.kind === "import-statement" && imp.path.startsWith(".") && imp.path.endsWith(".ts")) todo.push(join(dirname(file), imp.path));
      }
      return seen;
    };
    const forgeModules = (entry: string) => [...closure(entry)].filter((f) => /^lib\/(step\/)?forge\//.test(f)).sort();
    const tools = readdirSync(join(REPO, "cmd")).filter((f) => f.startsWith("loop-") && f.endsWith(".ts"));
    const loaded: Record<string, string[]> = Object.fromEntries(tools.map((t) => [t, forgeModules(`cmd/${t}`)] as const).filter(([, m]) => m.length));
    expect(loaded).toEqual({
      "loop-add.ts": ["lib/forge/provider.ts", "lib/forge/timeout.ts", "lib/forge/untrusted.ts"],
      // loop logs --feedback prints a rework's digest as the handoff fences it.
      "loop-logs.ts": ["lib/forge/untrusted.ts"],
      "loop-plan.ts": ["lib/forge/provider.ts", "lib/forge/timeout.ts", "lib/forge/untrusted.ts"],
      // auto-merge.ts words its sentence as the forge does (pullTerms: PRs, GitLab's MRs), and status
      // and the page write a PR's number so too ("#12", GitLab's "!12").
      "loop-replay.ts": ["lib/forge/auto-merge.ts", "lib/forge/provider.ts"],
      "loop-run.ts": ["lib/forge/auto-merge.ts", "lib/forge/provider.ts", "lib/forge/untrusted.ts", "lib/step/forge/remote.ts"],
      "loop-serve.ts": ["lib/forge/auto-merge.ts", "lib/forge/provider.ts"],
      "loop-status.ts": ["lib/forge/auto-merge.ts", "lib/forge/provider.ts"],
    });
    // The forge's invariant says the same, module by module.
    const invariant = section("### `lib/forge/`");
    for (const m of new Set(Object.values(loaded).flat()))
      expect(invariant, m).toContain(m.startsWith("lib/step/") ? `\`${m}\`` : `\`${m.split("/").at(-1)}\``);
  });
});

// Reasons are sentences for people (docs/architecture.md#cross-cutting): decisions read typed records
// (the loop's `cause`, an item's records, a verdict's `code`), so changing a message never changes
// behaviour. lib/log/legacy-codes.ts is the one exception: it gives the events of logs written before
// verdicts had codes their code, from the words those reasons began with.
describe("no module of lib/ decides by a reason's words", () => {
  const files = (dir: string): string[] =>
    readdirSync(join(REPO, dir)).flatMap((n) => (statSync(join(REPO, dir, n)).isDirectory() ? files(`${dir}/${n}`) : n.endsWith(".ts") ? [`${dir}/${n}`] : []));
  const LEGACY = "lib/log/legacy-codes.ts";
  const grep = (pattern: RegExp) =>
    files("lib")
      .filter((f) => f !== LEGACY)
      .flatMap((f) =>
        readFileSync(join(REPO, f), "utf8")
          .split("\n")
          .flatMap((line, i) => (pattern.test(line) && !/^\s*(\/\/|\*)/.test(line) ? [`${f}:${i + 1}: ${line.trim().slice(0, 120)}`] : [])),
      );
  test("no string test on a reason", () => {
    expect(
      grep(/\breason\)?\??\.(?:startsWith|endsWith|includes|indexOf|lastIndexOf|match|search|split|slice)\(|\breason \?\? ""\)\.|\.test\([\w.?]*reason\b/),
    ).toEqual([]);
  });
  // A verdict's kind is its `code`: no text is tested for the words a reason or an error's message
  // begins with (`protected_path_changed: …`, `worktree_replaced: …`), whatever variable holds it.
  const KINDS = [...new Set([...VERIFY_CODES, ...LANDING_CODES, ...SETTLE_CODES, "no_progress", "branch_replaced"])].join("|");
  const prefixTest = new RegExp(
    `\\.(?:startsWith|endsWith|includes|indexOf|lastIndexOf|match|search|split)\\(\\s*["'\`/]\\^?(?:${KINDS})\\b|/(?:\\^(?:${KINDS})\\b|(?:${KINDS}):)[^/]*/[a-z]*\\.test\\(`,
  );
  test("the test finds a test of a verdict's words", () => {
    const planted = [
      'if (err.message.startsWith("worktree_replaced: ")) return;',
      "const moved = /^target_moved: /.test(landing.reason);",
      "if (/owned_ref_changed: /.test(v.reason)) return;",
      'if (why.includes("protected_path_changed")) x();',
    ];
    expect(planted.filter((l) => !prefixTest.test(l))).toEqual([]);
  });
  test("no test of a verdict's words (its kind is its code)", () => {
    expect(grep(prefixTest)).toEqual([]);
  });
});

// A module is reached by one path, and what it exports is what others use (docs/architecture.md):
// an export nobody imports is a surface to keep for nothing, a re-export a second path to the same thing.
describe("the surfaces of lib/", () => {
  const files = (dir: string): string[] =>
    readdirSync(join(REPO, dir)).flatMap((n) =>
      n === "node_modules" ? [] : statSync(join(REPO, dir, n)).isDirectory() ? files(`${dir}/${n}`) : n.endsWith(".ts") ? [`${dir}/${n}`] : [],
    );
  const sources = ROOTS.flatMap(files).map((f) => ({ f, text: readFileSync(join(REPO, f), "utf8") }));
  // Read from the syntax: a name is used when another file imports it (tests/helpers/surfaces.ts),
  // not when the word appears in it (a comment, a string, a local of the same name).
  const reads = readSources(sources.map(({ f, text }) => ({ file: f, text })));
  const ofLib = (f: string) => f.startsWith("lib/");
  test("every export of lib/ is imported by another file (of lib/, cmd/, tests/, scripts/ or bench/)", () => {
    expect(unusedExports(reads, ofLib)).toEqual([]);
  });
  test("the guard fails on a planted export nothing imports, though its name is in another file's comment and string", () => {
    const host = "lib/shared/fsutil.ts";
    const planted = sources.map(({ f, text }) => ({
      file: f,
      text:
        f === host
          ? `${text}\nexport function plantedSurface(): number {\n  return 1;\n}\n`
          : f === "lib/shared/errors.ts"
            ? `${text}\n// plantedSurface is named here, and used nowhere.\nconst said = "plantedSurface";\n`
            : text,
    }));
    expect(unusedExports(readSources(planted), ofLib)).toEqual([`${host}: plantedSurface`]);
  });
  test("each import form counts as a use: named, default, type, namespace, import(), import type, export from", () => {
    const mod = {
      file: "lib/x/m.ts",
      text: ["a", "b", "c", "d", "e", "f", "g", "h", "i"].map((n) => `export const ${n} = 1;`).join("\n") + "\nexport default 0;\nexport type T = 1;",
    };
    const user = {
      file: "lib/y/u.ts",
      text: [
        `import def, { a as z, type T } from "../x/m.ts";`,
        `import * as ns from "../x/m.ts";`,
        `const { b, c: cc } = await import("../x/m.ts");`,
        `const d = (await import("../x/m.ts")).d;`,
        `let e: typeof import("../x/m.ts").e;`,
        `export { f } from "../x/m.ts";`,
        `ns.g; let h: typeof ns.h;`,
      ].join("\n"),
    };
    expect(unusedExports(readSources([mod, user]), (f) => f === mod.file)).toEqual(["lib/x/m.ts: i"]);
    // A namespace passed on whole, or an import() kept whole, takes every name.
    expect(unusedExports(readSources([mod, { file: "lib/y/v.ts", text: `import * as ns from "../x/m.ts";\nuse(ns);` }]), (f) => f === mod.file)).toEqual([]);
    expect(unusedExports(readSources([mod, { file: "lib/y/v.ts", text: `const m = () => import("../x/m.ts");` }]), (f) => f === mod.file)).toEqual([]);
  });
  test("no file imports one module in two statements", () => {
    expect(doubledImports(reads)).toEqual([]);
  });
  test("the guard fails on a planted doubled import, a type-only one too", () => {
    const planted = [
      {
        file: "lib/x/a.ts",
        text: `import { a } from "../shared/fsutil.ts";\nimport { b } from "node:fs";\nimport type { C } from "./../shared/fsutil.ts";\nimport { d } from "node:fs";\n`,
      },
    ];
    expect(doubledImports(readSources(planted))).toEqual(["lib/x/a.ts: lib/shared/fsutil.ts", "lib/x/a.ts: node:fs"]);
  });
  test("no module of lib/ re-exports another's names", () => {
    const found = sources
      .filter(({ f }) => f.startsWith("lib/"))
      .flatMap(({ f, text }) => (/^export (?:type )?(?:\{[^}]*\}|\*)( from|;)/m.test(text) ? [f] : []));
    expect(found).toEqual([]);
  });
});

describe("the formatter and the linter (biome.jsonc, `npm run lint` in .ci/run)", () => {
  const BIOME = join(REPO, "node_modules/.bin/biome");
  /** `biome ci` with this repository's settings over a folder holding `files`. */
  function biomeCi(files: Record<string, string>): { code: number; out: string } {
    const dir = mkdtempSync(join(tmpdir(), "loop-biome-"));
    try {
      writeFileSync(join(dir, "biome.jsonc"), readFileSync(join(REPO, "biome.jsonc"), "utf8").replace(/"vcs": \{[^}]*\}/, `"vcs": { "enabled": false }`));
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
      const r = Bun.spawnSync([BIOME, "ci", "--colors=off", "--error-on-warnings", "."], { cwd: dir, stdout: "pipe", stderr: "pipe" });
      return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  test("a formatted, clean file passes; an unformatted one, and one the linter refuses, fail CI", () => {
    expect(biomeCi({ "a.ts": `export const a = { b: 1 };\n` }).code).toBe(0);
    const unformatted = biomeCi({ "a.ts": `export const a = {b:1}\n` });
    expect(unformatted.code).not.toBe(0);
    expect(unformatted.out).toContain("a.ts format");
    const linted = biomeCi({ "a.ts": `import { readFileSync } from "node:fs";\nexport const a = 1;\n` });
    expect(linted.code).not.toBe(0);
    expect(linted.out).toContain("noUnusedImports");
  });
});
