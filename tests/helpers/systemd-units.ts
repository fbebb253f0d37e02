// systemd's unit files as the deploy tests read them: a small INI reader (sections, repeated keys,
// comments, continuations), and a stand-in for the manager's handling of one Exec*= line: its
// specifiers (%i, %S, %%) and its own `$$` and C escapes undone, its words split as systemd splits
// them, and the command run with the environment systemd would give it. Enough for these units;
// `systemd-analyze verify` (tests/deploy/manifests.test.ts) checks them against the real parser.
export type Ini = Record<string, Record<string, string[]>>;

/** systemd's unit syntax, as far as these files use it. */
export function parseUnit(text: string, where: string): Ini {
  const out: Ini = {};
  let section: string | null = null;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!.trim();
    while (line.endsWith("\\") && i + 1 < lines.length) line = line.slice(0, -1) + " " + lines[++i]!.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const sec = /^\[([A-Za-z]+)\]$/.exec(line);
    if (sec) {
      section = sec[1]!;
      if (out[section]) throw new Error(`${where}:${i + 1}: section [${section}] twice`);
      out[section] = {};
      continue;
    }
    const kv = /^([A-Za-z][A-Za-z0-9]*)=(.*)$/.exec(line);
    if (!kv) throw new Error(`${where}:${i + 1}: not a key=value line: ${line}`);
    if (!section) throw new Error(`${where}:${i + 1}: ${kv[1]} outside a section`);
    (out[section]![kv[1]!] ??= []).push(kv[2]!);
  }
  return out;
}

/**
 * An Exec*= value as argv: the prefixes (`-` and the like) dropped, words split on blanks outside
 * quotes, `'…'` and `"…"` taken whole, `\n` and `\\` inside them undone, `$$` a literal `$`,
 * `%%` a literal `%` and the other specifiers from `spec`.
 */
export function execArgv(value: string, spec: Record<string, string>): { argv: string[]; ignoreFailure: boolean } {
  const ignoreFailure = value.startsWith("-");
  const v = value.replace(/^[-@:+!]+/, "");
  const words: string[] = [];
  let cur = "";
  let inWord = false;
  for (let i = 0; i < v.length; i++) {
    const c = v[i]!;
    if (c === "'" || c === '"') {
      const end = v.indexOf(c, i + 1);
      if (end < 0) throw new Error(`unterminated quote in ${value}`);
      cur += v
        .slice(i + 1, end)
        .replace(/\\n/g, "\n")
        .replace(/\\\\/g, "\\");
      i = end;
      inWord = true;
    } else if (c === " " || c === "\t") {
      if (inWord) words.push(cur);
      cur = "";
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  const unescape = (w: string) => w.replace(/%(.)/g, (m, k: string) => (k === "%" ? "%" : (spec[k] ?? m))).replace(/\$\$/g, "$");
  return { argv: words.map(unescape), ignoreFailure };
}
