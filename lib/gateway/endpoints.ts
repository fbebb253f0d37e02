// What the gateway forwards to a model API (docs/threat-model.md#the-gateway): an allow-list of
// method + path per provider, each endpoint either billed (its answer says what it used, and the
// gateway meters it) or free (the provider bills nothing for it). Everything else is refused: a
// message batch or an uploaded file is billed later, outside any answer the gateway could read,
// and the same key can read or delete whatever else its organization holds. Also what a billed
// request may cost at most (its worst case: what it holds against the budget while in flight,
// and what it is charged when its answer is cut off before its usage), and the one change the
// gateway makes to a request (a Chat Completions stream is asked for its usage). Pure.
//
// How the list was found: the CLIs the presets run were pointed at the fake model APIs
// (tests/helpers/fake-anthropic.ts, fake-openai.ts) through a recorder of every request, in print
// mode (`claude -p` with the preset's flags, `codex exec` with loop's provider), with a model and
// without, with `--max-budget-usd`, resumed (`claude --resume <id>`, `codex exec resume --last`),
// with model discovery asked for (CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1), and with the
// non-essential traffic on and off. What each sent (2026-12-06):
//   Claude Code 2.1.332  POST /v1/messages?beta=true (streamed; max_tokens 32000, 128000 without a model);
//                        GET /v1/models?limit=1000 (model discovery); HEAD /api/hello (non-essential
//                        traffic on: off behind the gateway). Its binary also has
//                        POST /v1/messages/count_tokens?beta=true (the size check of an MCP tool's
//                        result) and GET /v1/models/{id}, not sent in these runs.
//   Claude Code 2.1.197  POST /v1/messages?beta=true (max_tokens 32000, 64000 without a model); HEAD /
//                        (its probe, whatever the non-essential traffic says).
//   Codex 0.171.0        POST /responses (streamed, no max_output_tokens, store false) only: its
//                        models endpoint (GET /models) is not asked with loop's provider.
//   aider (not run here) Chat Completions through litellm: POST /chat/completions.
//   Gemini CLI 0.61      (as a command runner; from the notes and Gemini's API reference, not
//                        recorded here) POST /v1beta/models/{model}:streamGenerateContent?alt=sse and
//                        :generateContent (its router's side request, on a second model); :countTokens
//                        and the model list are free.

type Provider = "anthropic" | "openai" | "gemini";

export interface Endpoint {
  /** Billed: its answer is metered (and held against the budget while in flight); free: costs nothing. */
  billed: boolean;
  /** Which answer it gives, for the worst case: the Messages API, OpenAI Responses, or Chat Completions. */
  api: "messages" | "responses" | "chat" | "gemini" | null;
}

/** The allow-list: provider → [method, path pattern below the provider's base, endpoint]. */
const ALLOWED: Readonly<Record<Provider, readonly [string, RegExp, Endpoint][]>> = {
  anthropic: [
    ["POST", /^\/v1\/messages$/, { billed: true, api: "messages" }],
    // Free to use (docs.anthropic.com, token counting: "free to use but subject to requests per minute rate limits").
    ["POST", /^\/v1\/messages\/count_tokens$/, { billed: false, api: null }],
    ["GET", /^\/v1\/models$/, { billed: false, api: null }],
    ["GET", /^\/v1\/models\/[A-Za-z0-9._:@-]{1,200}$/, { billed: false, api: null }],
    // The CLIs' probes: no body, no answer but a status.
    ["HEAD", /^\/$/, { billed: false, api: null }],
    ["HEAD", /^\/api\/hello$/, { billed: false, api: null }],
  ],
  openai: [
    ["POST", /^\/responses$/, { billed: true, api: "responses" }],
    ["POST", /^\/chat\/completions$/, { billed: true, api: "chat" }],
    ["GET", /^\/models$/, { billed: false, api: null }],
    ["GET", /^\/models\/[A-Za-z0-9._:@-]{1,200}$/, { billed: false, api: null }],
  ],
  // Gemini's API (ai.google.dev/api): the model is in the path; v1 and v1beta alike.
  gemini: [
    ["POST", GEMINI_CALL("generateContent"), { billed: true, api: "gemini" }],
    ["POST", GEMINI_CALL("streamGenerateContent"), { billed: true, api: "gemini" }],
    // Free (ai.google.dev: countTokens is not billed).
    ["POST", GEMINI_CALL("countTokens"), { billed: false, api: null }],
    ["GET", /^\/v1(?:beta)?\/models$/, { billed: false, api: null }],
    ["GET", /^\/v1(?:beta)?\/models\/[A-Za-z0-9._@-]{1,200}$/, { billed: false, api: null }],
  ],
};

/** A Gemini model method's path: `/v1beta/models/<model>:<method>`. */
function GEMINI_CALL(method: string): RegExp {
  return new RegExp(`^/v1(?:beta)?/models/[A-Za-z0-9._@-]{1,200}:${method}$`);
}

/** The model a Gemini path names (`/v1beta/models/gemini-2.5-pro:generateContent` → `gemini-2.5-pro`), or null. */
export function geminiModelOf(path: string): string | null {
  return /^\/v1(?:beta)?\/models\/([A-Za-z0-9._@-]{1,200}):/.exec(path)?.[1] ?? null;
}

/** The endpoint a request is for, or null: not one the gateway forwards. `path` is below the provider's base, without the query. */
export function endpointOf(provider: Provider, method: string, path: string): Endpoint | null {
  for (const [m, p, e] of ALLOWED[provider]) if (m === method && p.test(path)) return e;
  return null;
}

/**
 * The output a request that names no limit may still produce: no model of either provider writes
 * more in one answer (Anthropic's largest 128,000 output tokens, OpenAI's GPT-5 family 128,000).
 * Codex 0.171 names none.
 */
export const DEFAULT_MAX_OUTPUT = 128_000;
/**
 * Added to a request's size for what the provider adds to it on its side (Anthropic's tool-use
 * system prompt is a few hundred tokens; the rest of the input is in the request).
 */
export const INPUT_MARGIN = 4_096;

/** What a billed request may cost at most, read from it before it is forwarded. */
export interface WorstCase {
  /** The model the request names (what its hold is priced at), or null. */
  model: string | null;
  /**
   * Its input, at most: the request's size in bytes (a token is at least one byte of what is sent,
   * images and files far more) plus INPUT_MARGIN.
   */
  input: number;
  /** Its output, at most: its max_tokens (max_output_tokens, max_completion_tokens, × n), else DEFAULT_MAX_OUTPUT. */
  output: number;
}

/** A billed request as the gateway forwards it: its worst case, its body (changed or not), and why it is refused if it is. */
type ReadRequest = { worst: WorstCase; body: Uint8Array; refused?: undefined } | { refused: string };

const count = (x: unknown): number | null => (typeof x === "number" && Number.isSafeInteger(x) && x > 0 ? x : null);

/**
 * Read a billed request: its worst case, and for a streamed Chat Completions request the body with
 * `stream_options.include_usage` set (without it the stream says nothing of what it used).
 * A request billed outside its answer (a Responses `background` request, answered before it is
 * generated) is refused. A body that is not a JSON object is forwarded as it is: the provider
 * refuses it, and nothing is billed.
 */
export function readRequest(api: NonNullable<Endpoint["api"]>, bytes: Uint8Array, pathModel: string | null = null): ReadRequest {
  let doc: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(bytes));
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) doc = parsed as Record<string, unknown>;
  } catch {
    // not JSON: the provider's 400
  }
  const input = bytes.length + INPUT_MARGIN;
  if (!doc) return { worst: { model: pathModel, input, output: DEFAULT_MAX_OUTPUT }, body: bytes };
  const model = typeof doc.model === "string" && doc.model.length <= 200 ? doc.model : pathModel;
  if (api === "gemini") {
    // generationConfig.maxOutputTokens × candidateCount; thinking tokens are billed as output too, within the same bound.
    const config = doc.generationConfig && typeof doc.generationConfig === "object" ? (doc.generationConfig as Record<string, unknown>) : {};
    return { worst: { model, input, output: (count(config.maxOutputTokens) ?? DEFAULT_MAX_OUTPUT) * (count(config.candidateCount) ?? 1) }, body: bytes };
  }
  if (api === "responses" && doc.background === true)
    return { refused: "a background response is generated and billed after its answer, which says nothing of what it used" };
  const limit =
    api === "messages"
      ? count(doc.max_tokens)
      : api === "responses"
        ? count(doc.max_output_tokens)
        : (count(doc.max_completion_tokens) ?? count(doc.max_tokens));
  const choices = api === "chat" ? (count(doc.n) ?? 1) : 1;
  const output = (limit ?? DEFAULT_MAX_OUTPUT) * choices;
  let body = bytes;
  if (api === "chat" && doc.stream === true) {
    const options =
      doc.stream_options && typeof doc.stream_options === "object" && !Array.isArray(doc.stream_options) ? (doc.stream_options as Record<string, unknown>) : {};
    if (options.include_usage !== true) body = new TextEncoder().encode(JSON.stringify({ ...doc, stream_options: { ...options, include_usage: true } }));
  }
  return { worst: { model, input, output }, body };
}
