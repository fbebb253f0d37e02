// A command on a pseudo-terminal (stdin, stdout and stderr are one TTY), as an operator at a
// terminal runs it: wait for what it prints, type keys, and read everything once it has ended.
// Waits are conditions with a generous bound, never durations: a loaded machine is slow.
import { expect } from "bun:test";

export interface OnTerminal {
  /** Everything printed so far. */
  text(): string;
  /** Wait until the output contains `what` (a minute at most), and assert it does. */
  waitFor(what: string): Promise<void>;
  write(keys: string): void;
  /** The exit code and everything printed, once the process has ended and its output is all read. */
  ended(): Promise<{ code: number; text: string }>;
}

export function onTerminal(argv: string[], o: { cwd: string; env: Record<string, string | undefined> }): OnTerminal {
  let text = "";
  const dec = new TextDecoder();
  const { promise: eof, resolve } = Promise.withResolvers<void>();
  const proc = Bun.spawn(argv, {
    cwd: o.cwd,
    env: o.env,
    // exit: the terminal's end of file, once everything the process printed has been read.
    terminal: { cols: 200, rows: 50, data: (_t, d) => void (text += dec.decode(d, { stream: true })), exit: () => resolve() },
  });
  return {
    text: () => text,
    async waitFor(what) {
      for (let i = 0; i < 2400 && !text.includes(what); i++) await Bun.sleep(25);
      expect(text).toContain(what);
    },
    write: (keys) => void proc.terminal!.write(keys),
    async ended() {
      const code = await proc.exited;
      await eof;
      proc.terminal?.close();
      return { code, text };
    },
  };
}
