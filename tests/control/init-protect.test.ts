// What `loop init` proposes to protect (lib/control/init.ts proposeProtect): the tests and test
// configuration of each ecosystem, as seen in the tracked files; pure.
import { describe, expect, test } from "bun:test";
import { proposeProtect } from "../../lib/control/init.ts";

describe("proposeProtect", () => {
  const cases: { name: string; tracked: string[]; verify: string | null; want: string[] }[] = [
    { name: "nothing that looks like tests", tracked: ["README.md", "src/a.ts"], verify: null, want: [] },
    {
      name: "node: a tests folder, jest's config, CI",
      tracked: ["package.json", "tests/a.test.ts", "jest.config.js", ".github/workflows/ci.yml", "src/x.ts"],
      verify: "npm test",
      want: ["tests/**", "jest.config.js", ".github/**"],
    },
    {
      name: "node: test files beside the code",
      tracked: ["src/a.ts", "src/a.test.ts", "vitest.config.mts"],
      verify: "npm test",
      want: ["**/*.{test,spec}.*", "vitest.config.mts"],
    },
    {
      name: "python: src layout, pytest.ini, conftest beside the package",
      tracked: ["pyproject.toml", "src/pkg/__init__.py", "tests/test_cli.py", "src/pkg/conftest.py", "pytest.ini", "tox.ini"],
      verify: "python3 -m pytest",
      want: ["tests/**", "**/conftest.py", "pytest.ini", "tox.ini"],
    },
    {
      name: "python: test files beside the code",
      tracked: ["pkg/a.py", "pkg/test_a.py", "pkg/b_test.py"],
      verify: "python3 -m pytest",
      want: ["**/{test_*,*_test}.py"],
    },
    { name: "go", tracked: ["go.mod", "x.go", "x_test.go"], verify: "go test ./...", want: ["**/*_test.go"] },
    {
      name: "a verify script it names, and a Makefile behind make test",
      tracked: ["scripts/verify.sh", "Makefile"],
      verify: "sh scripts/verify.sh",
      want: ["scripts/verify.sh"],
    },
    { name: "make test", tracked: ["Makefile", "test/x.c"], verify: "make test", want: ["test/**", "Makefile"] },
  ];
  for (const c of cases) test(c.name, () => expect(proposeProtect(c.tracked, c.verify)).toEqual(c.want));
});
