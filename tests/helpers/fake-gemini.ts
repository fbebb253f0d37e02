// A fake of Gemini's API (ai.google.dev/api/generate-content) on 127.0.0.1, for the real Gemini CLI:
// `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` answers with the step a script
// chooses (a text reply, or a `run_shell_command` function call, which the CLI runs under --yolo),
// as one SSE chunk whose candidate names its finishReason and whose usageMetadata says what was
// served; `:generateContent` is the CLI's router asking which model to use (answered "flash").
// Every billed answer is recorded with its usage, so a test can compare what loop recorded.

export interface GeminiUsage {
  promptTokenCount: number;
  cachedContentTokenCount: number;
  candidatesTokenCount: number;
  thoughtsTokenCount: number;
}

interface GeminiTurn {
  path: string;
  /** Whether the conversation already holds a function's answer (the shell call ran). */
  replied: boolean;
  /** The whole request's text, for what the conversation holds. */
  text: string;
  /** The key it carried (`x-goog-api-key`, else the `key` query parameter), or null. */
  key: string | null;
  usage: GeminiUsage;
}

export type GeminiStep = { text: string } | { shell: string };

export interface FakeGemini {
  url: string;
  turns: GeminiTurn[];
  stop(): Promise<void>;
}

const USAGE: GeminiUsage = { promptTokenCount: 1200, cachedContentTokenCount: 400, candidatesTokenCount: 30, thoughtsTokenCount: 12 };

/** Start the fake; `script` picks each turn's step from the request (its text, whether a shell call was answered). */
export async function startFakeGemini(script: (t: { text: string; replied: boolean; step: number }) => GeminiStep): Promise<FakeGemini> {
  const turns: GeminiTurn[] = [];
  let step = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const text = await req.text();
      const m = /^\/v1beta\/models\/([^:]+):(generateContent|streamGenerateContent)$/.exec(url.pathname);
      if (!m || req.method !== "POST") return Response.json({ error: { code: 404, message: "not found", status: "NOT_FOUND" } }, { status: 404 });
      const replied = text.includes('"functionResponse"');
      const usage = { ...USAGE };
      turns.push({ path: url.pathname, replied, text, key: req.headers.get("x-goog-api-key") ?? url.searchParams.get("key"), usage });
      const answer = (parts: unknown[]) => ({
        candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
        usageMetadata: { ...usage, totalTokenCount: usage.promptTokenCount + usage.candidatesTokenCount + usage.thoughtsTokenCount },
        modelVersion: `${m[1]}-fake`,
      });
      if (m[2] === "generateContent") return Response.json(answer([{ text: '{"reasoning":"a simple task","model_choice":"flash"}' }]));
      const s = script({ text, replied, step: step++ });
      const parts = "shell" in s ? [{ functionCall: { name: "run_shell_command", args: { command: s.shell } } }] : [{ text: s.text }];
      return new Response(`data: ${JSON.stringify(answer(parts))}\r\n\r\n`, { headers: { "content-type": "text/event-stream" } });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, turns, stop: () => server.stop(true) };
}

/** What the turns served, as loop counts it: cached input apart, thinking as output. */
export function geminiServed(turns: readonly GeminiTurn[]): { input: number; output: number; cacheRead: number; cacheWrite: number } {
  const t = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  for (const { usage: u } of turns) {
    t.input += u.promptTokenCount - u.cachedContentTokenCount;
    t.cacheRead += u.cachedContentTokenCount;
    t.output += u.candidatesTokenCount + u.thoughtsTokenCount;
  }
  return t;
}

/** The settings an unattended Gemini CLI needs in its home (~/.gemini/settings.json): an API key's auth, no usage statistics, no update check. */
export const GEMINI_SETTINGS = {
  security: { auth: { selectedType: "gemini-api-key" } },
  privacy: { usageStatisticsEnabled: false },
  general: { disableAutoUpdate: true, disableUpdateNag: true },
};
