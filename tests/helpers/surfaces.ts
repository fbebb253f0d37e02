// What each module exports and what each imports of the others, read from the syntax (TypeScript's
// parser), for the surface guard of tests/architecture.test.ts: an export is used when another
// file imports that name, never because the word appears somewhere (a comment, a string, a local
// of the same name). Every form of import counts: named and default imports, `import type`,
// `export … from`, `import("…")` (its destructured or accessed names; anything else takes the
// whole module), `typeof import("…").Name`, and a namespace import by the names read off it.
import { dirname, join, normalize } from "node:path";
import ts from "typescript";

interface Source {
  /** The path relative to the repository. */
  file: string;
  text: string;
}

/** "*": the whole module (a namespace passed around, an `import()` kept as it is, `export *`). */
type Names = Set<string>;

interface Read {
  exports: Names;
  /** Imported names by the module they come from (a repository path, or a package's name). */
  imports: Map<string, Names>;
  /** Modules named by more than one import statement of this file. */
  doubled: string[];
}

/** The module a specifier names: a repository path for a relative one, else the specifier. */
function target(file: string, spec: string): string {
  return spec.startsWith(".") ? normalize(join(dirname(file), spec)) : spec;
}

const isExported = (n: ts.Node) => ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
const isDefault = (n: ts.Node) => ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);

function bindingNames(b: ts.BindingName, into: Names): void {
  if (ts.isIdentifier(b)) into.add(b.text);
  else for (const e of b.elements) if (!ts.isOmittedExpression(e)) bindingNames(e.name, into);
}

/** The names taken from an `import("…")` by where it stands; "*" when it is kept whole. */
function dynamicNames(call: ts.Node): Names {
  let n: ts.Node = call;
  if (ts.isAwaitExpression(n.parent)) n = n.parent;
  while (ts.isParenthesizedExpression(n.parent)) n = n.parent;
  const p = n.parent;
  if (ts.isVariableDeclaration(p) && p.initializer === n && ts.isObjectBindingPattern(p.name))
    return new Set(
      p.name.elements.map((e) => (e.propertyName && ts.isIdentifier(e.propertyName) ? e.propertyName.text : ts.isIdentifier(e.name) ? e.name.text : "*")),
    );
  if (ts.isPropertyAccessExpression(p) && p.expression === n) return new Set([p.name.text]);
  return new Set(["*"]);
}

function read(src: Source): Read {
  const sf = ts.createSourceFile(src.file, src.text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const exports: Names = new Set();
  const imports = new Map<string, Names>();
  const take = (spec: string, names: Iterable<string>) => {
    const t = target(src.file, spec);
    const got = imports.get(t) ?? new Set<string>();
    for (const x of names) got.add(x);
    imports.set(t, got);
  };
  const statements = new Map<string, number>();
  /** Namespace imports: local name → module. */
  const namespaces = new Map<string, string>();

  for (const s of sf.statements) {
    if (ts.isImportDeclaration(s) && ts.isStringLiteral(s.moduleSpecifier)) {
      const spec = s.moduleSpecifier.text;
      const t = target(src.file, spec);
      statements.set(t, (statements.get(t) ?? 0) + 1);
      const c = s.importClause;
      const names: string[] = [];
      if (c?.name) names.push("default");
      const nb = c?.namedBindings;
      if (nb && ts.isNamespaceImport(nb)) namespaces.set(nb.name.text, spec);
      else if (nb) for (const e of nb.elements) names.push((e.propertyName ?? e.name).text);
      take(spec, names);
    } else if (ts.isExportDeclaration(s)) {
      const c = s.exportClause;
      if (s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier))
        take(s.moduleSpecifier.text, c && ts.isNamedExports(c) ? c.elements.map((e) => (e.propertyName ?? e.name).text) : ["*"]);
      if (c && ts.isNamedExports(c)) for (const e of c.elements) exports.add(e.name.text);
    } else if (ts.isExportAssignment(s)) exports.add("default");
    else if (isExported(s)) {
      if (isDefault(s)) exports.add("default");
      else if (ts.isVariableStatement(s)) for (const d of s.declarationList.declarations) bindingNames(d.name, exports);
      else if (
        (ts.isFunctionDeclaration(s) ||
          ts.isClassDeclaration(s) ||
          ts.isInterfaceDeclaration(s) ||
          ts.isTypeAliasDeclaration(s) ||
          ts.isEnumDeclaration(s) ||
          ts.isModuleDeclaration(s)) &&
        s.name &&
        ts.isIdentifier(s.name)
      )
        exports.add(s.name.text);
    }
  }

  const walk = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const a = n.arguments[0];
      // A module named by a computed string is none this guard can read: it takes nothing.
      if (a && ts.isStringLiteralLike(a)) take(a.text, dynamicNames(n));
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
      let q = n.qualifier;
      while (q && ts.isQualifiedName(q)) q = q.left;
      take(n.argument.literal.text, [q ? q.text : "*"]);
    } else if (ts.isIdentifier(n) && namespaces.has(n.text) && !ts.isNamespaceImport(n.parent)) {
      const p = n.parent;
      const spec = namespaces.get(n.text)!;
      if (ts.isPropertyAccessExpression(p) && p.expression === n) take(spec, [p.name.text]);
      else if (ts.isQualifiedName(p) && p.left === n) take(spec, [p.right.text]);
      else if (!(ts.isPropertyAccessExpression(p) && p.name === n) && !(ts.isQualifiedName(p) && p.right === n)) take(spec, ["*"]);
    }
    ts.forEachChild(n, walk);
  };
  walk(sf);
  for (const spec of namespaces.values()) take(spec, []);
  return { exports, imports, doubled: [...statements].filter(([, k]) => k > 1).map(([t]) => t) };
}

/** Each source read once (a parse of the whole tree takes a second or two). */
export function readSources(sources: Source[]): Map<string, Read> {
  return new Map(sources.map((s) => [s.file, read(s)] as const));
}

/**
 * The exports of the files `of` selects that no other file imports, as `file: name`. A name a
 * file exports and only uses itself is unused too: exported for nothing.
 */
export function unusedExports(reads: Map<string, Read>, of: (file: string) => boolean): string[] {
  const used = new Map<string, Names>();
  for (const [file, r] of reads)
    for (const [t, names] of r.imports) {
      if (t === file) continue;
      const u = used.get(t) ?? new Set<string>();
      for (const x of names) u.add(x);
      used.set(t, u);
    }
  return [...reads]
    .filter(([f]) => of(f))
    .flatMap(([f, r]) => {
      const u = used.get(f);
      return u?.has("*") ? [] : [...r.exports].filter((name) => !u?.has(name)).map((name) => `${f}: ${name}`);
    });
}

/** Each file that names one module in two import statements, as `file: module`. */
export function doubledImports(reads: Map<string, Read>): string[] {
  return [...reads].flatMap(([f, r]) => r.doubled.map((m) => `${f}: ${m}`));
}
