// Which test files spawn loop's entry point, read from the sources (tests/test-tiers.test.ts): a
// file of the fast tier must not, an end-to-end file (`*.e2e.test.ts`) may. A reading of the
// syntax (TypeScript's parser), not a run:
//   - a helper's top-level declaration spawns when it names the entry (`"…cmd/loop*.ts"`, or
//     `join(…, "cmd", "loop….ts")`) or uses, as a value, a declaration that spawns: its module's
//     own or one it imports (to a fixed point over the helpers);
//   - a test file spawns when it imports such a declaration, builds the entry's path with join, or
//     passes the entry to a call that starts a process (spawn, spawnSync, exec…, Bun.$).
// Type-only imports and types spawn nothing; a test's name that mentions the entry is no spawn.
import { dirname, join, normalize } from "node:path";
import ts from "typescript";

/** The entry point's path; built from parts so that this file names none. */
const ENTRY = new RegExp(["(^|/)", "cmd", "/loop[-\\w]*\\.ts$"].join(""));
const STARTS = new Set(["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "$"]);

export interface Finding {
  file: string;
  /** What in the file spawns: an imported name and its module, or the call that names the entry. */
  why: string;
}

interface Imported {
  /** The name in the importing module. */
  local: string;
  /** The name in the imported module. */
  imported: string;
  /** The imported module, a path relative to the repository. */
  from: string;
}

interface Module {
  file: string;
  imports: Imported[];
  /** `export { a as b } from "./m.ts"`. */
  reexports: Imported[];
  /** `export { a as b }` of a local or imported name: exported name → local name. */
  exportsOf: Map<string, string>;
  /** Top-level value declarations: name → whether it names the entry, and the value names it uses. */
  decls: Map<string, { entry: boolean; uses: Set<string> }>;
}

const parse = (file: string, text: string) => ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);

const stringOf = (n: ts.Node): string | null => (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) ? n.text : null);

/** Whether a node is a string naming the entry, or join(…) whose string arguments make its path. */
function namesEntry(n: ts.Node): boolean {
  const s = stringOf(n);
  if (s !== null) return ENTRY.test(s);
  if (ts.isCallExpression(n) && calleeName(n.expression) === "join") {
    const parts = n.arguments.map(stringOf).filter((p): p is string => p !== null);
    return ENTRY.test(parts.join("/"));
  }
  return false;
}

function calleeName(e: ts.Expression): string | null {
  if (ts.isIdentifier(e)) return e.text;
  if (ts.isPropertyAccessExpression(e)) return e.name.text;
  return null;
}

/** Walk the value code under a node (types skipped). */
function walk(n: ts.Node, visit: (n: ts.Node) => void): void {
  if (ts.isTypeNode(n) || ts.isInterfaceDeclaration(n) || ts.isTypeAliasDeclaration(n)) return;
  visit(n);
  n.forEachChild((c) => walk(c, visit));
}

function importsOf(file: string, sf: ts.SourceFile): Pick<Module, "imports" | "reexports" | "exportsOf"> {
  const imports: Imported[] = [];
  const reexports: Imported[] = [];
  const exportsOf = new Map<string, string>();
  const resolve = (spec: ts.Expression | undefined) => {
    const s = spec && stringOf(spec);
    return s?.startsWith(".") ? normalize(join(dirname(file), s)) : null;
  };
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st)) {
      const from = resolve(st.moduleSpecifier);
      const clause = st.importClause;
      if (!from || !clause || clause.isTypeOnly) continue;
      const named = clause.namedBindings;
      if (named && ts.isNamedImports(named))
        for (const el of named.elements) if (!el.isTypeOnly) imports.push({ local: el.name.text, imported: (el.propertyName ?? el.name).text, from });
    } else if (ts.isExportDeclaration(st) && !st.isTypeOnly && st.exportClause && ts.isNamedExports(st.exportClause)) {
      const from = resolve(st.moduleSpecifier);
      for (const el of st.exportClause.elements) {
        if (el.isTypeOnly) continue;
        const inner = (el.propertyName ?? el.name).text;
        if (from) reexports.push({ local: el.name.text, imported: inner, from });
        else exportsOf.set(el.name.text, inner);
      }
    }
  }
  return { imports, reexports, exportsOf };
}

function moduleOf(file: string, text: string): Module {
  const sf = parse(file, text);
  const decls = new Map<string, { entry: boolean; uses: Set<string> }>();
  const record = (name: string, node: ts.Node) => {
    const d = { entry: false, uses: new Set<string>() };
    walk(node, (n) => {
      if (namesEntry(n)) d.entry = true;
      if (ts.isIdentifier(n)) d.uses.add(n.text);
    });
    decls.set(name, d);
  };
  for (const st of sf.statements) {
    if ((ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st)) && st.name) record(st.name.text, st);
    else if (ts.isVariableStatement(st)) for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) record(d.name.text, d);
  }
  return { file, decls, ...importsOf(file, sf) };
}

/**
 * The names each helper module exports that spawn the entry point. `sources`: every .ts file
 * under tests/ that is no test file, by path relative to the repository.
 */
export function spawningExports(sources: Map<string, string>): Map<string, Set<string>> {
  const modules = [...sources].map(([f, t]) => moduleOf(f, t));
  const spawning = new Map<string, Set<string>>(modules.map((m) => [m.file, new Set<string>()]));
  for (let changed = true; changed; ) {
    changed = false;
    for (const m of modules) {
      const mine = spawning.get(m.file)!;
      const add = (name: string) => {
        if (!mine.has(name)) {
          mine.add(name);
          changed = true;
        }
      };
      // Spawning values by their local names: imported ones, and this module's own.
      const local = new Set(m.imports.filter((i) => spawning.get(i.from)?.has(i.imported)).map((i) => i.local));
      for (const name of mine) if (m.decls.has(name)) local.add(name);
      for (const [name, d] of m.decls) if (d.entry || [...d.uses].some((u) => u !== name && local.has(u))) add(name);
      for (const r of m.reexports) if (spawning.get(r.from)?.has(r.imported)) add(r.local);
      for (const [exported, inner] of m.exportsOf) if (local.has(inner)) add(exported);
    }
  }
  return spawning;
}

/** Why the test file `file` spawns the entry point; empty when it does not. */
export function spawnsOf(file: string, text: string, spawning: Map<string, Set<string>>): Finding[] {
  const sf = parse(file, text);
  const out: Finding[] = [];
  for (const i of importsOf(file, sf).imports)
    if (spawning.get(i.from)?.has(i.imported)) out.push({ file, why: `imports ${i.imported} from ${i.from}, which spawns the entry point` });
  const line = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  walk(sf, (n) => {
    if (ts.isCallExpression(n) && calleeName(n.expression) === "join" && namesEntry(n))
      out.push({ file, why: `line ${line(n)} builds the entry's path: ${n.getText(sf).slice(0, 120)}` });
    const started = ts.isCallExpression(n) ? calleeName(n.expression) : ts.isTaggedTemplateExpression(n) ? calleeName(n.tag) : null;
    if (started === null || !STARTS.has(started)) return;
    let named = false;
    walk(n, (c) => {
      named ||= c !== n && stringOf(c) !== null && namesEntry(c);
    });
    if (named) out.push({ file, why: `line ${line(n)} starts the entry point: ${n.getText(sf).slice(0, 120)}` });
  });
  return out;
}
