// Where setup's products name their checkout (lib/repo/product-place.ts), on real files in a temp
// folder: which files of a virtualenv are written again when it moves, what makes products bound to
// their place, and the move itself.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { placeBinding, relocateProducts } from "../../lib/repo/product-place.ts";
import { stampProducts } from "../../lib/repo/products.ts";

const base = mkdtempSync(join(tmpdir(), "loop-place-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

let n = 0;
/** A checkout folder `…/item-1` (and its sibling `…/item-10` named in files, which is not it). */
function checkout(files: Record<string, string | Buffer>, modes: Record<string, number> = {}): string {
  const dir = join(base, `c${n++}`, "item-1");
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), typeof body === "string" ? body.replaceAll("$DIR", dir) : body);
    if (modes[rel]) chmodSync(join(dir, rel), modes[rel]);
  }
  return dir;
}

const VENV = {
  ".venv/pyvenv.cfg": "home = /usr/bin\ncommand = /usr/bin/python3 -m venv $DIR/.venv\n",
  ".venv/bin/activate": 'VIRTUAL_ENV="$DIR/.venv"\nexport VIRTUAL_ENV\n',
  ".venv/bin/tool": "#!$DIR/.venv/bin/python3\nimport sys\n",
  ".venv/lib/site-packages/_editable.pth": "$DIR/src\n",
  ".venv/lib/site-packages/other.pth": "$DIR0/src\n",
  ".venv/lib/site-packages/mod.py": "X = 1\n",
  ".venv/lib/site-packages/__pycache__/.keep": "",
};

describe("placeBinding", () => {
  test("in a virtualenv, every text file naming the checkout is listed; a .pyc naming it is not; a longer name that starts with it is not it", () => {
    const dir = checkout(VENV, { ".venv/bin/tool": 0o755 });
    writeFileSync(join(dir, ".venv/lib/site-packages/__pycache__/mod.cpython-311.pyc"), Buffer.from(`\0\0${dir}/mod.py`), { flag: "w" });
    // other.pth names `…/item-10`, another checkout: not this one.
    const r = placeBinding(dir, stampProducts(dir, [".venv"]));
    expect(r).toEqual({ binding: { dir, files: [".venv/bin/activate", ".venv/bin/tool", ".venv/lib/site-packages/_editable.pth", ".venv/pyvenv.cfg"] } });
  });

  test("bound to its place: a binary file in a virtualenv naming the checkout, a link into it", () => {
    const bin = checkout(VENV);
    writeFileSync(join(bin, ".venv/lib/native.so"), Buffer.concat([Buffer.from("\x7fELF\0"), Buffer.from(`${bin}/lib`)]));
    expect(placeBinding(bin, stampProducts(bin, [".venv"]))).toEqual({ bound: ".venv/lib/native.so (a binary file naming the checkout's path)" });
    const link = checkout({ "deps/a.js": "1\n" });
    symlinkSync(join(link, "deps/a.js"), join(link, "deps/b.js"));
    expect(placeBinding(link, stampProducts(link, ["deps"]))).toEqual({ bound: "deps/b.js (a link into the checkout)" });
  });

  test("outside a virtualenv: a script whose #! names the checkout is listed, a relative link and a plain file naming it are not read", () => {
    const dir = checkout({ "node_modules/.bin/x": "#!$DIR/node_modules/node\n", "node_modules/pkg/index.js": "// $DIR\n" }, { "node_modules/.bin/x": 0o755 });
    symlinkSync("../pkg/index.js", join(dir, "node_modules/.bin/y"));
    expect(placeBinding(dir, stampProducts(dir, ["node_modules"]))).toEqual({ binding: { dir, files: ["node_modules/.bin/x"] } });
  });
});

describe("relocateProducts", () => {
  test("each listed file names the new checkout, its mode kept; a longer name that starts with the old path is left alone", () => {
    const dir = checkout(VENV, { ".venv/bin/tool": 0o755 });
    writeFileSync(join(dir, ".venv/bin/activate"), `VIRTUAL_ENV="${dir}/.venv"\nOTHER="${dir}0/x"\n`);
    const got = placeBinding(dir, stampProducts(dir, [".venv"]));
    if (!("binding" in got)) throw new Error("bound");
    const to = join(dirname(dir), "item-22");
    // The move of the folder itself is the caller's (a rename); the files then name the old path.
    rmSync(to, { recursive: true, force: true });
    renameSync(dir, to);
    const moved = relocateProducts(got.binding, to);
    expect(moved).toEqual({ dir: to, files: got.binding.files });
    expect(readFileSync(join(to, ".venv/bin/tool"), "utf8")).toBe(`#!${to}/.venv/bin/python3\nimport sys\n`);
    expect(statSync(join(to, ".venv/bin/tool")).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(to, ".venv/bin/activate"), "utf8")).toBe(`VIRTUAL_ENV="${to}/.venv"\nOTHER="${dir}0/x"\n`);
    expect(readFileSync(join(to, ".venv/lib/site-packages/_editable.pth"), "utf8")).toBe(`${to}/src\n`);
    // Moved again: from where it is now.
    const back = join(dirname(dir), "item-3");
    renameSync(to, back);
    relocateProducts(moved, back);
    expect(readFileSync(join(back, ".venv/lib/site-packages/_editable.pth"), "utf8")).toBe(`${back}/src\n`);
  });
});
