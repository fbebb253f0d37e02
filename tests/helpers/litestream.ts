// The Litestream binary of the pinned devDependency (@flydotio/litestream-linux-x64): its wrapper
// package's launcher always exits 0, so tests call the binary itself.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { REPO } from "./project.ts";

export const LITESTREAM = join(REPO, "node_modules", "@flydotio", "litestream-linux-x64", "litestream");
/** What the docs name (docs/operations.md#litestream) and the tests hold the binary to. */
export const LITESTREAM_PIN = { package: "1.0.1", litestream: "v0.3.13", sqlite: "3.42.0" };
export const haveLitestream = process.platform === "linux" && process.arch === "x64" && existsSync(LITESTREAM);
