// Kept in step with package.json by tests/cmd/cli.test.ts.
export const VERSION = "0.1.0";
