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

/**
 * A command in a real tmux pane (its own server, no configuration: the default scrollback of 2,000
 * lines), as an operator's terminal would keep what it printed: `history()` is every line the pane
 * still holds, scrolled off or visible, wrapped rows joined. Waits are conditions, as above.
 */
export interface InPane {
  history(): string;
  waitFor(what: string): Promise<void>;
  /** tmux key names: "Enter", "Escape", "Down". */
  keys(...names: string[]): void;
  /** The pane's title (what an OSC 2 sequence sets). */
  title(): string;
  /** The exit code, once the command has ended; the tmux server is gone after. */
  ended(): Promise<number>;
  /** End the tmux server, whatever runs in it (a test's `finally`). */
  close(): void;
}

let panes = 0;
export function inTmuxPane(argv: string[], o: { cwd: string; env: Record<string, string | undefined>; cols?: number; rows?: number }): InPane {
  const server = `loop-pane-${process.pid}-${panes++}`;
  const env = Object.fromEntries(Object.entries(o.env).filter(([k]) => k !== "TMUX" && k !== "TMUX_PANE")) as Record<string, string>;
  const tmux = (...args: string[]) => Bun.spawnSync(["tmux", "-L", server, "-f", "/dev/null", ...args], { env, stdout: "pipe", stderr: "pipe" });
  const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
  // The pane stays after the command, saying how it ended, until the test has read it.
  const script = `${argv.map(quote).join(" ")}; echo "[pane: exit $?]"; sleep 3600`;
  const started = tmux("new-session", "-d", "-s", "t", "-x", String(o.cols ?? 100), "-y", String(o.rows ?? 40), "-c", o.cwd, script);
  if (started.exitCode !== 0) throw new Error(`tmux new-session failed: ${started.stderr.toString()}`);
  const history = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", "t").stdout.toString();
  const waitFor = async (what: string) => {
    for (let i = 0; i < 2400 && !history().includes(what); i++) await Bun.sleep(25);
    expect(history()).toContain(what);
  };
  return {
    history,
    waitFor,
    keys: (...names) => void tmux("send-keys", "-t", "t", ...names),
    title: () => tmux("display-message", "-p", "-t", "t", "#{pane_title}").stdout.toString().trim(),
    close: () => void tmux("kill-server"),
    async ended() {
      await waitFor("[pane: exit ");
      const code = Number(/\[pane: exit (\d+)\]/.exec(history())![1]);
      tmux("kill-server");
      return code;
    },
  };
}
