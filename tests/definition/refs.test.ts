import { describe, expect, test } from "bun:test";
import { isItemId, itemIdFromRef, parseRef, parseSelector, tryParseRef, type WorkItemRef } from "../../lib/definition/refs.ts";
import { RefError } from "../../lib/shared/errors.ts";

describe("parseRef accepts", () => {
  const accepted: [input: string, canonical: string][] = [
    ["github:acme/api#42", "github:acme/api#42"],
    ["github:a/b#1", "github:a/b#1"],
    ["github:a/b#007", "github:a/b#7"],
    ["github:github.com/a/b#01", "github:a/b#1"],
    ["github:GitHub.COM/a/b#1", "github:a/b#1"],
    ["github:github.com:443/a/b#1", "github:github.com:443/a/b#1"],
    ["github:ghe.corp.example/a/b#3", "github:ghe.corp.example/a/b#3"],
    ["gitlab:git.example.com:8443/a/b#7", "gitlab:git.example.com:8443/a/b#7"],
    ["gitlab:Git.Example.COM:08443/a/b#7", "gitlab:git.example.com:8443/a/b#7"],
    ["gitlab:gitlab.com/group/proj#5", "gitlab:group/proj#5"],
    // GitLab projects in nested groups; a group path holding a dot keeps its host (it would read as one).
    ["gitlab:group/sub/proj#5", "gitlab:group/sub/proj#5"],
    ["gitlab:gitlab.com/group/sub/deeper/proj#5", "gitlab:group/sub/deeper/proj#5"],
    ["gitlab:git.example.com/group/sub/proj#5", "gitlab:git.example.com/group/sub/proj#5"],
    ["gitlab:gitlab.com/my.group/sub/proj#5", "gitlab:gitlab.com/my.group/sub/proj#5"],
    ["gitlab:my.group/proj#5", "gitlab:my.group/proj#5"],
    ["gitea:h.x:1/a/b#1", "gitea:h.x:1/a/b#1"],
    ["gitea:h.x:65535/a/b#1", "gitea:h.x:65535/a/b#1"],
    ["my-forge2:a/b#1", "my-forge2:a/b#1"],
    ["github:Acme-Corp/My_Repo.js#12", "github:Acme-Corp/My_Repo.js#12"],
    ["github:a/b.git#1", "github:a/b.git#1"],
    ["github:0/9#9007199254740991", "github:0/9#9007199254740991"],
    ["github:1.2.3.4/a/b#1", "github:1.2.3.4/a/b#1"],
  ];
  test.each(accepted)("%p -> %p", (input, canonical) => {
    const ref = parseRef(input);
    expect(ref.canonical).toBe(canonical);
    // The canonical form is a fixed point.
    expect(parseRef(canonical)).toEqual(ref);
  });

  test("fields", () => {
    expect(parseRef("gitlab:Git.Example.com:0443/Own.er/Re-po#0012")).toEqual({
      provider: "gitlab",
      host: "git.example.com:443",
      owner: "Own.er",
      repo: "Re-po",
      number: 12,
      canonical: "gitlab:git.example.com:443/Own.er/Re-po#12",
    });
    expect(parseRef("github:github.com/a/b#1").host).toBeNull();
    expect(parseRef("github:a/b#1").host).toBeNull();
    // A nested GitLab path: the owner is the whole group path, the repo its project; item ids come from the project.
    const nested = parseRef("gitlab:acme/platform/api#3");
    expect([nested.host, nested.owner, nested.repo, itemIdFromRef(nested)]).toEqual([null, "acme/platform", "api", "api-3"]);
  });
});

describe("parseRef rejects", () => {
  const rejected: [name: string, input: string, fragment: string][] = [
    ["empty", "", "empty"],
    ["over 256 chars", `github:a/${"b".repeat(246)}#1`, "longer than 256 characters"],
    ["space", "github:a/b #1", "whitespace (U+0020) at offset 10"],
    ["leading space", " github:a/b#1", "whitespace"],
    ["trailing newline", "github:a/b#1\n", "whitespace (U+000A)"],
    ["tab", "github:a/\tb#1", "whitespace (U+0009)"],
    ["no-break space", "github:a/b\u00a0#1", "whitespace (U+00A0)"],
    ["NUL", "github:a/b\0#1", "control character (U+0000) at offset 10"],
    ["escape", "github:a/\x1b[31mb#1", "control character (U+001B)"],
    ["DEL", "github:a/b\x7f#1", "control character (U+007F)"],
    ["unicode", "github:a/bé#1", "non-ASCII character (U+00E9)"],
    ["bidi override", "github:a/b\u202e#1", "non-ASCII character (U+202E)"],
    ["fullwidth digit", "github:a/b#\uff11", "non-ASCII character (U+FF11)"],
    ["backslash", "github:a\\b#1", "backslash at offset 8"],
    ["leading -", "-github:a/b#1", "must not start with '-'"],
    ["leading - option", "--exec=x", "must not start with '-'"],
    ["leading /", "/etc/passwd", "must not start with '/'"],
    ["no provider", "acme/api#42", "missing provider"],
    ["empty provider", ":a/b#1", "missing provider before ':'"],
    ["uppercase provider", "GitHub:a/b#1", `provider "GitHub" must match`],
    ["provider starting with digit", "1hub:a/b#1", `provider "1hub" must match`],
    ["provider with dot", "git.hub:a/b#1", `provider "git.hub" must match`],
    ["missing #", "github:a/b", "missing '#<number>'"],
    ["missing number", "github:a/b#", "missing number after '#'"],
    ["#0", "github:a/b#0", "number must be at least 1"],
    ["#000", "github:a/b#000", "number must be at least 1"],
    ["#-1", "github:a/b#-1", `number "-1" must be decimal digits`],
    ["#+1", "github:a/b#+1", `number "+1" must be decimal digits`],
    ["#1.5", "github:a/b#1.5", `number "1.5" must be decimal digits`],
    ["#1e3", "github:a/b#1e3", `number "1e3" must be decimal digits`],
    ["#0x10", "github:a/b#0x10", `number "0x10" must be decimal digits`],
    ["#x", "github:a/b#x", `invalid work-item ref "github:a/b#x": number "x" must be decimal digits`],
    ["double #", "github:a/b#1#2", `number "1#2" must be decimal digits`],
    ["unsafe number", "github:a/b#9007199254740992", "number must be at most 9007199254740991"],
    ["missing path", "github:#1", "missing <owner>/<repo>"],
    ["missing repo", "github:a#1", "missing repo"],
    ["empty owner", "github:/b#1", "path must not start with '/'"],
    ["empty repo", "github:a/#1", "empty path segment"],
    ["double slash", "github:a//b#1", "empty path segment"],
    ["trailing slash", "github:a/b/#1", "empty path segment"],
    ["extra segment", "github:a/b/c#1", "too many path segments"],
    ["extra segments with host", "github:h.com/a/b/c#1", "too many path segments"],
    ["GitLab groups deeper than 20", `gitlab:${Array.from({ length: 21 }, (_, i) => `g${i}`).join("/")}/p#1`, "at most 20 levels of groups"],
    ["path traversal", "github:../b#1", `path segment ".." must not contain '..'`],
    ["path traversal repo", "github:a/..#1", "must not contain '..'"],
    ["traversal with host", "gitlab:h.com/../../b#1", "must not contain '..'"],
    [".. inside name", "github:a/b..c#1", `path segment "b..c" must not contain '..'`],
    ["dot owner", "github:./b#1", `owner "." must start with a letter or digit`],
    ["leading - owner", "github:-a/b#1", `owner "-a" must start with a letter or digit`],
    ["leading . repo", "github:a/.b#1", `repo ".b" must start with a letter or digit`],
    ["leading _ repo", "github:a/_b#1", `repo "_b" must start with a letter or digit`],
    ["bad char in repo", "github:a/b@c#1", `repo "b@c" may contain only`],
    ["colon in owner", "github:a:b/c#1", `owner "a:b" may contain only`],
    ["percent-encoding", "github:a/%2e%2e#1", `repo "%2e%2e" must start with a letter or digit`],
    ["undotted host with port", "gitlab:localhost:80/a/b#1", `host "localhost" must be a dotted hostname`],
    ["empty host label", "gitlab:a..com/x/y#1", "must not contain '..'"],
    ["trailing dot host", "gitlab:example.com./x/y#1", `host "example.com." has an empty label`],
    ["leading - label", "gitlab:-x.com/a/b#1", `host label "-x" must be letters, digits and inner '-'`],
    ["trailing - label", "gitlab:x-.com/a/b#1", `host label "x-" must be`],
    ["underscore in host", "gitlab:my_host.com/a/b#1", `host label "my_host" must be`],
    ["long label", `gitlab:${"h".repeat(64)}.com/a/b#1`, "longer than 63 characters"],
    ["empty port", "gitlab:h.com:/a/b#1", `port "" must be decimal digits`],
    ["port not digits", "gitlab:h.com:http/a/b#1", `port "http" must be decimal digits`],
    ["two ports", "gitlab:h.com:1:2/a/b#1", `port "1:2" must be decimal digits`],
    ["port 0", "gitlab:h.com:0/a/b#1", "port 0 is out of range 1..65535"],
    ["port out of range", "gitlab:git.example.com:65536/a/b#7", "port 65536 is out of range 1..65535"],
    ["huge port", `gitlab:h.com:${"9".repeat(40)}/a/b#1`, "is out of range 1..65535"],
  ];
  test.each(rejected)("%s", (_name, input, fragment) => {
    expect(() => parseRef(input)).toThrow(RefError);
    const err = tryParseRef(input);
    expect(err).toBeInstanceOf(RefError);
    const e = err as RefError;
    expect(e.input).toBe(input);
    expect(e.message).toStartWith("invalid work-item ref ");
    expect(e.message).toContain(fragment);
    // Messages never carry raw control or non-ASCII characters from the input.
    expect(e.message).toMatch(/^[\x20-\x7e]*$/);
  });

  test("257 characters is over the limit, 256 is not", () => {
    const at256 = `github:a/${"b".repeat(245)}#1`;
    expect(at256.length).toBe(256);
    expect(parseRef(at256).repo.length).toBe(245);
    expect(tryParseRef(`${at256.slice(0, 9)}b${at256.slice(9)}`)).toBeInstanceOf(RefError);
  });
});

describe("tryParseRef", () => {
  test("returns the ref on success", () => {
    expect(tryParseRef("github:a/b#2")).toMatchObject({ canonical: "github:a/b#2" });
  });
});

describe("isItemId", () => {
  const cases: [string, boolean][] = [
    ["fix-login", true],
    ["a", true],
    ["0", true],
    ["api-42", true],
    ["v1.2_x", true],
    ["a-", true],
    ["a".repeat(64), true],
    ["a".repeat(65), false],
    ["", false],
    ["-a", false],
    ["Fix", false],
    ["a..b", false],
    ["a._b", false],
    ["a.", false],
    ["a_", false],
    [".a", false],
    ["a/b", false],
    ["a b", false],
    ["a\0", false],
    ["é", false],
    ["github:a/b#1", false],
  ];
  test.each(cases)("%p -> %p", (s, ok) => {
    expect(isItemId(s)).toBe(ok);
  });
});

describe("itemIdFromRef", () => {
  const cases: [ref: string, id: string][] = [
    ["github:acme/api#42", "api-42"],
    ["github:acme/API#042", "api-42"],
    ["github:a/My_Repo.js#3", "my-repo-js-3"],
    ["github:a/b.-_.c#1", "b-c-1"],
    ["github:a/x--y#1", "x-y-1"],
    ["github:a/x-#1", "x-1"],
    ["github:a/0#1", "0-1"],
  ];
  test.each(cases)("%p -> %p", (input, id) => {
    expect(itemIdFromRef(parseRef(input))).toBe(id);
  });

  test("truncates to 64 characters keeping the number", () => {
    const id = itemIdFromRef(parseRef(`github:a/${"r".repeat(200)}#9007199254740991`));
    expect(id.length).toBe(64);
    expect(id).toEndWith("-9007199254740991");
    expect(isItemId(id)).toBe(true);
  });

  test("does not leave a dangling '-' where it truncates", () => {
    const repo = `${"r".repeat(61)}.xyz`; // cut falls right after the replaced '.'
    const id = itemIdFromRef(parseRef(`github:a/${repo}#1`));
    expect(id).toBe(`${"r".repeat(61)}-1`);
    expect(isItemId(id)).toBe(true);
  });

  test("always yields a valid item id", () => {
    const chars = "aZ09._-";
    let seed = 1;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let checked = 0;
    for (let i = 0; i < 2000; i++) {
      let repo = "aZ0"[rand(3)]!;
      const len = rand(120);
      for (let j = 0; j < len; j++) repo += chars[rand(chars.length)];
      const number = 1 + rand(2 ** 30) * (rand(2) ? 1 : 8388607);
      const parsed = tryParseRef(`github:o/${repo}#${number}`);
      if (parsed instanceof RefError) continue; // e.g. a '..' the generator produced
      const id = itemIdFromRef(parsed);
      expect(isItemId(id)).toBe(true);
      expect(id).toEndWith(`-${number}`);
      checked++;
    }
    expect(checked).toBeGreaterThan(900); // about half the generated refs are valid (the rest too long or with '..')
  });

  test("a hand-built ref with no usable repo characters still gives a valid id", () => {
    const ref: WorkItemRef = { provider: "x", host: null, owner: "o", repo: "...", number: 5, canonical: "" };
    expect(itemIdFromRef(ref)).toBe("item-5");
  });
});

describe("parseSelector", () => {
  test("an item id", () => {
    expect(parseSelector("fix-login")).toEqual({ kind: "id", id: "fix-login" });
    expect(parseSelector("v1.2")).toEqual({ kind: "id", id: "v1.2" });
  });

  test("a ref, canonicalized", () => {
    const sel = parseSelector("github:github.com/acme/api#042");
    expect(sel.kind).toBe("ref");
    if (sel.kind === "ref") expect(sel.ref.canonical).toBe("github:acme/api#42");
  });

  const rejected: [input: string, fragment: string][] = [
    ["", `invalid work-item "": empty`],
    ["Fix-Login", `invalid work-item "Fix-Login": not an item id`],
    ["-rf", `invalid work-item "-rf": not an item id`],
    ["../x", `invalid work-item "../x": a ref needs a provider`],
    ["acme/api#42", "a ref needs a provider"],
    ["a".repeat(65), "item id is longer than 64 characters"],
    ["a b", `invalid work-item "a b": not an item id`],
    ["a\0b", `invalid work-item "a\\u0000b": not an item id`],
    // Contains ':' so it is parsed, and rejected, as a ref.
    ["github:a/b#x", `invalid work-item ref "github:a/b#x": number "x" must be decimal digits`],
    ["fix:login", "missing '#<number>'"],
  ];
  test.each(rejected)("rejects %p", (input, fragment) => {
    let caught: unknown;
    try {
      parseSelector(input);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(RefError);
    expect((caught as RefError).input).toBe(input);
    expect((caught as RefError).message).toContain(fragment);
  });
});
