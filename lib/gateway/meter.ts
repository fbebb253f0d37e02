// What a model answer used, read from the provider's own answer as it streams through the gateway
// (docs/spend.md#the-gateway): Anthropic Messages (`message_start` carries the input and cache
// tokens, each `message_delta` the output so far), OpenAI Responses (`response.completed` carries
// the whole usage), OpenAI Chat Completions (the last chunk's `usage`, when asked for), or the same
// answers unstreamed (one JSON body with `usage`); and whether the answer gave its final figure
// (Anthropic's last `message_delta`, with its stop reason; OpenAI's `response.completed`; the chat
// usage chunk; a whole body), without which the gateway charges the request's worst case. Gemini's
// `generateContent` and `streamGenerateContent` answers carry `usageMetadata` (streamed: in the
// chunks, cumulative; final in the chunk whose candidate names its finishReason; unstreamed without
// `alt=sse`: a JSON array of those chunks, read whole). Pure and
// incremental: fed the bytes in the pieces they arrive in, it never holds more than one unfinished
// line of an event stream.

export interface MeteredUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

const NO_USAGE: Readonly<MeteredUsage> = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

const n = (x: unknown): number => (typeof x === "number" && Number.isFinite(x) && x >= 0 ? Math.floor(x) : 0);
const obj = (x: unknown): Record<string, unknown> | null => (x && typeof x === "object" && !Array.isArray(x) ? (x as Record<string, unknown>) : null);

/** What a provider document said of an answer's usage: nothing, a figure so far, or the answer's final figure. */
type Said = "none" | "partial" | "final";

/** Usage from one provider document (an event's data or a whole body), merged into `u`. */
function readUsage(doc: unknown, u: MeteredUsage): Said {
  // Gemini's streamGenerateContent without alt=sse: one JSON array of the chunks.
  if (Array.isArray(doc)) return doc.reduce<Said>((said, c) => strongest(said, readUsage(c, u)), "none");
  const d = obj(doc);
  if (!d) return "none";
  // Gemini: usageMetadata { promptTokenCount (cached included), cachedContentTokenCount, candidatesTokenCount, thoughtsTokenCount, toolUsePromptTokenCount }.
  const gemini = obj(d.usageMetadata);
  if (gemini) {
    const cached = n(gemini.cachedContentTokenCount);
    const prompt = n(gemini.promptTokenCount) + n(gemini.toolUsePromptTokenCount);
    u.cacheRead = Math.min(cached, prompt);
    u.input = prompt - u.cacheRead;
    // Thinking is billed as output; candidatesTokenCount leaves it out.
    u.output = n(gemini.candidatesTokenCount) + n(gemini.thoughtsTokenCount);
    u.cacheWrite = 0;
    const finished = Array.isArray(d.candidates) && d.candidates.some((c) => typeof obj(c)?.finishReason === "string");
    return finished ? "final" : "partial";
  }
  // Anthropic: message_start { message: { usage } }, message_delta { usage } (output is cumulative).
  if (d.type === "message_start") {
    const usage = obj(obj(d.message)?.usage);
    if (!usage) return "none";
    u.input = n(usage.input_tokens);
    u.cacheRead = n(usage.cache_read_input_tokens);
    u.cacheWrite = n(usage.cache_creation_input_tokens);
    u.output = n(usage.output_tokens);
    return "partial";
  }
  if (d.type === "message_delta") {
    const usage = obj(d.usage);
    if (!usage) return "none";
    u.output = Math.max(u.output, n(usage.output_tokens));
    // Newer answers repeat the input figures here; the larger is the final one.
    if ("input_tokens" in usage) u.input = Math.max(u.input, n(usage.input_tokens));
    if ("cache_read_input_tokens" in usage) u.cacheRead = Math.max(u.cacheRead, n(usage.cache_read_input_tokens));
    if ("cache_creation_input_tokens" in usage) u.cacheWrite = Math.max(u.cacheWrite, n(usage.cache_creation_input_tokens));
    // The message's last delta names why it stopped: its usage is the final one.
    return typeof obj(d.delta)?.stop_reason === "string" ? "final" : "partial";
  }
  // OpenAI Responses: response.completed (also .incomplete and .failed) { response: { usage } }.
  if (typeof d.type === "string" && /^response\.(completed|incomplete|failed)$/.test(d.type)) return readOpenAiUsage(obj(obj(d.response)?.usage), u);
  // An unstreamed answer: Anthropic { type: "message", usage }, OpenAI { object: "response" | "chat.completion", usage }; a chat chunk with usage.
  const usage = obj(d.usage);
  if (!usage) return "none";
  if (d.type === "message") {
    u.input = n(usage.input_tokens);
    u.output = n(usage.output_tokens);
    u.cacheRead = n(usage.cache_read_input_tokens);
    u.cacheWrite = n(usage.cache_creation_input_tokens);
    return "final";
  }
  return readOpenAiUsage(usage, u);
}

const RANK: Record<Said, number> = { none: 0, partial: 1, final: 2 };
function strongest(a: Said, b: Said): Said {
  return RANK[b] > RANK[a] ? b : a;
}

function readOpenAiUsage(usage: Record<string, unknown> | null, u: MeteredUsage): Said {
  if (!usage) return "none";
  // Responses: input_tokens (cached ones included), output_tokens; Chat: prompt_tokens, completion_tokens.
  const input = n(usage.input_tokens ?? usage.prompt_tokens);
  const cached = n(obj(usage.input_tokens_details ?? usage.prompt_tokens_details)?.cached_tokens);
  u.cacheRead = Math.min(cached, input);
  u.input = input - u.cacheRead;
  u.output = n(usage.output_tokens ?? usage.completion_tokens);
  u.cacheWrite = 0;
  return "final";
}

/**
 * The model an answer names, for the operator's prices: Anthropic's `message_start` message (or an
 * unstreamed message), OpenAI's response events (or an unstreamed response or chat chunk). Bounded:
 * a name longer than a model name is none.
 */
function modelOf(doc: unknown): string | null {
  const d = obj(doc);
  if (!d) return null;
  // Gemini names the model that answered as modelVersion.
  if (typeof d.modelVersion === "string" && d.modelVersion.length > 0 && d.modelVersion.length <= 200) return d.modelVersion;
  const holder = d.type === "message_start" ? obj(d.message) : typeof d.type === "string" && d.type.startsWith("response.") ? obj(d.response) : d;
  const m = holder?.model;
  return typeof m === "string" && m.length > 0 && m.length <= 200 ? m : null;
}

/** Reads one answer's bytes as they stream: an event stream line by line, any other body whole (bounded). */
export class UsageMeter {
  readonly usage: MeteredUsage = { ...NO_USAGE };
  /** Whether the answer said anything of what it used. */
  seen = false;
  /** Whether it said its final figure (an answer cut off before it has only what it said so far, or nothing). */
  final = false;
  /** The model the answer named (modelOf), or null. */
  model: string | null = null;
  private pending = "";
  private readonly decoder = new TextDecoder();
  private body: string[] = [];
  private bodyBytes = 0;
  constructor(private readonly stream: boolean) {}

  /** The next piece of the answer, as it arrived. */
  push(bytes: Uint8Array): void {
    const text = this.decoder.decode(bytes, { stream: true });
    if (!this.stream) {
      // A JSON answer is read at its end; one too large to be an answer's usage is not kept.
      if (this.bodyBytes < MAX_BODY) this.body.push(text);
      this.bodyBytes += bytes.length;
      return;
    }
    this.pending += text;
    let nl: number;
    while ((nl = this.pending.indexOf("\n")) >= 0) {
      this.line(this.pending.slice(0, nl).replace(/\r$/, ""));
      this.pending = this.pending.slice(nl + 1);
    }
    // A line that never ends (not an event stream after all) is dropped, not kept growing.
    if (this.pending.length > MAX_BODY) this.pending = "";
  }

  /** The answer ended (or was cut off: what it said so far is read; the gateway charges the rest, lib/gateway/gateway.ts). */
  end(): MeteredUsage {
    if (this.stream) {
      if (this.pending) this.line(this.pending);
      this.pending = "";
    } else if (this.bodyBytes <= MAX_BODY) {
      try {
        const doc = JSON.parse(this.body.join("") + this.decoder.decode());
        this.said(readUsage(doc, this.usage));
        this.model ??= Array.isArray(doc) ? (doc.map(modelOf).find((m) => m !== null) ?? null) : modelOf(doc);
      } catch {
        // not JSON: an error page, nothing used
      }
    }
    return this.usage;
  }

  private said(s: Said): void {
    if (s !== "none") this.seen = true;
    if (s === "final") this.final = true;
  }

  private line(line: string): void {
    if (!line.startsWith("data:")) return;
    const data = line.slice(5).trim();
    if (!data || data === "[DONE]") return;
    try {
      const doc = JSON.parse(data);
      this.said(readUsage(doc, this.usage));
      // Anthropic's last event: the message_delta before it said the final figure.
      if (this.seen && obj(doc)?.type === "message_stop") this.final = true;
      this.model ??= modelOf(doc);
    } catch {
      // a data line that is not JSON carries no usage
    }
  }
}

const MAX_BODY = 8 << 20;
