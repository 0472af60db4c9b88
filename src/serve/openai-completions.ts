import { randomUUID } from 'node:crypto';
import type { PositionLogprobs, ScoreSampling } from '../model/sampler/top-logprobs.ts';
import type { SampleRequest, SampleResult, SamplingParams, Tokenizer } from '../contracts/index.ts';
import { applyStopStrings, Detokenizer } from '../adapters/completion-text.ts';
import { HttpError } from './http-guard.ts';
import { adapterNamed } from './route.ts';
import { CompletionRequest, UNSUPPORTED, type CompletionRequestBody as Request } from './completions-request.ts';

/**
 * `POST /v1/completions` as the OpenAI API defines it, for the fields vLLM supports and with
 * vLLM's shapes (vllm/entrypoints/openai/completion/{protocol,serving}.py): prompts as text or
 * token ids (one or a list), n, max_tokens, temperature, top_p, stop strings, stop_token_ids,
 * echo, logprobs: k (top_logprobs: the sampled token plus the k most likely), text_offset,
 * stream (server-sent events ending in `data: [DONE]`), stream_options.include_usage,
 * return_tokens_as_token_ids (tokens as `token_id:N`), return_token_ids. Fields it cannot honour
 * are refused with a 400 that names them, never silently ignored. Differences from vLLM:
 * docs/remote-engines.md.
 */
const MAX_CHOICES = 64; // prompts x n in one request

export interface CompletionsOptions {
  model: string;
  /** Loaded LoRA adapters, served by name (route.ts adapterNamed). */
  adapters?: { has(name: string): boolean };
  tokenizer: Tokenizer;
  vocabSize: number;
  /** Prompt + max_tokens may not exceed this (the model's maxSeqLen). */
  maxModelLen: number;
  /** The server's batching queue (`adapter`: a loaded LoRA adapter answers, absent: the base). */
  sample(requests: readonly SampleRequest[], params: SamplingParams, adapter?: string): Promise<SampleResult[]>;
  /** Top-k next-token log-probs of a sequence from position `from` on; absent: logprobs > 0 and echo+logprobs are refused. */
  score?(
    seq: readonly number[],
    from: number,
    k: number,
    sampling?: ScoreSampling,
    adapter?: string,
  ): PositionLogprobs[];
}

/** What the route sends: one JSON body, or server-sent events. */
export type CompletionsAnswer = { json: unknown } | { events: string[] };

export async function completions(body: unknown, o: CompletionsOptions): Promise<CompletionsAnswer> {
  const unsupported = Object.entries(UNSUPPORTED)
    .filter(
      ([k, ok]) => typeof body === 'object' && body !== null && k in body && !ok((body as Record<string, unknown>)[k]),
    )
    .map(([k]) => k);
  if (unsupported.length > 0)
    throw new HttpError(400, `not supported by crl serve: ${unsupported.join(', ')} (leave them unset)`);
  const r = CompletionRequest.safeParse(body);
  if (!r.success)
    throw new HttpError(400, r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; '));
  const req = r.data;
  const adapter = adapterNamed(o, req.model);
  const k = req.logprobs ?? null;
  const echo = req.echo === true;
  if (((k ?? 0) > 0 || (echo && k !== null)) && !o.score)
    throw new HttpError(400, 'logprobs > 0 (and echo with logprobs) need the embedded model; this server cannot score');
  const prompts = promptIds(req, o);
  const n = req.n ?? 1;
  if (prompts.length * n > MAX_CHOICES)
    throw new HttpError(400, `prompts x n is ${prompts.length * n}; at most ${MAX_CHOICES} choices per request`);
  const maxTokens = req.max_tokens ?? 16;
  for (const p of prompts)
    if (p.length + maxTokens > o.maxModelLen)
      throw new HttpError(
        400,
        `This model's maximum context length is ${o.maxModelLen} tokens. However, you requested ${p.length + maxTokens} tokens (${p.length} in the prompt, ${maxTokens} in the completion). Please reduce the length of the prompt or completion.`,
      );
  const stopTokens = req.stop_token_ids ?? [];
  if (stopTokens.some((t) => t >= o.vocabSize))
    throw new HttpError(400, `stop_token_ids must be below the vocabulary size ${o.vocabSize}`);
  const results = await o.sample(
    // A seed makes each choice's draws its own, whatever else the server batches with it; the n
    // choices of a prompt take seed + index, as vLLM's parallel sampling gives its child requests.
    prompts.flatMap((prompt) =>
      Array.from({ length: n }, (_, i) => ({
        prompt,
        maxTokens,
        stopTokens,
        ...(req.seed == null ? {} : { seed: req.seed + i }),
      })),
    ),
    { temperature: req.temperature ?? 1, topP: req.top_p ?? 1 },
    adapter,
  );
  const detok = new Detokenizer(o.tokenizer);
  const choices = results.map((res, i) =>
    buildChoice({ req, res, prompt: prompts[Math.floor(i / n)]!, index: i, detok, o, adapter }),
  );
  const usage = {
    prompt_tokens: prompts.reduce((a, p) => a + p.length, 0),
    completion_tokens: choices.reduce((a, c) => a + c.generated, 0),
    total_tokens: 0,
  };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  const head = {
    id: `cmpl-${randomUUID().replace(/-/g, '')}`,
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: adapter ?? o.model, // vLLM names the adapter that answered
  };
  if (!req.stream) return { json: { ...head, choices: choices.map((c) => c.choice), usage, system_fingerprint: null } };
  const events = choices.flatMap((c) =>
    c.chunks.map((choice) => `data: ${JSON.stringify({ ...head, choices: [choice] })}\n\n`),
  );
  if (req.stream_options?.include_usage) events.push(`data: ${JSON.stringify({ ...head, choices: [], usage })}\n\n`);
  events.push('data: [DONE]\n\n');
  return { events };
}

function promptIds(req: Request, o: CompletionsOptions): number[][] {
  const p = req.prompt;
  const list: (string | number[])[] =
    typeof p === 'string'
      ? [p]
      : p.length > 0 && typeof p[0] === 'number'
        ? [p as number[]]
        : (p as (string | number[])[]);
  return list.map((x, i) => {
    if (typeof x !== 'string') {
      if (x.some((t) => t >= o.vocabSize))
        throw new HttpError(400, `prompt ${i}: token ids must be below the vocabulary size ${o.vocabSize}`);
      return x;
    }
    let ids: number[];
    try {
      ids = o.tokenizer.encode(x);
    } catch (e) {
      throw new HttpError(400, `prompt ${i}: ${(e as Error).message}`);
    }
    if (ids.length === 0) throw new HttpError(400, `prompt ${i} has no tokens`);
    return ids;
  });
}

interface Built {
  choice: Record<string, unknown>;
  chunks: Record<string, unknown>[];
  generated: number;
}

/** One choice: text, finish and stop reason, logprobs, and its stream chunks (one per token). */
function buildChoice(a: {
  req: Request;
  res: SampleResult;
  prompt: number[];
  index: number;
  detok: Detokenizer;
  o: CompletionsOptions;
  adapter: string | undefined;
}): Built {
  const { req, prompt, index, detok, o } = a;
  let tokens = a.res.tokens;
  let finish: string = a.res.finishReason;
  const lastIsStopToken = finish === 'stop' && (req.stop_token_ids ?? []).includes(tokens[tokens.length - 1]!);
  let stopReason: number | string | null = lastIsStopToken ? tokens[tokens.length - 1]! : null;
  let pieces = detok.pieces(prompt, tokens);
  // A stop token's own text is not part of the completion (vLLM), unless asked for.
  let text = pieces.slice(0, lastIsStopToken && !req.include_stop_str_in_output ? -1 : undefined).join('');
  const stops = req.stop == null ? [] : typeof req.stop === 'string' ? [req.stop] : req.stop;
  const cut = applyStopStrings({ pieces, stops, includeStop: req.include_stop_str_in_output === true });
  if (cut) {
    tokens = tokens.slice(0, cut.keep);
    pieces = pieces.slice(0, cut.keep);
    text = cut.text;
    finish = 'stop';
    stopReason = cut.stop;
  }
  const lps = a.res.logprobs.slice(0, tokens.length);
  const echo = req.echo === true;
  const promptText = echo ? detok.decode(prompt) : '';
  const asIds = req.return_tokens_as_token_ids === true;
  const name = (ids: readonly number[], t: number) => (asIds ? `token_id:${t}` : detok.piece(ids, t));
  let logprobs: Record<string, unknown[]> | null = null;
  if (req.logprobs != null) {
    const k = req.logprobs;
    const seq = [...prompt, ...tokens];
    const from = echo ? 1 : prompt.length;
    // Generated positions under the distribution they were drawn from, as the sampled token's own
    // log-prob (vLLM's processed_logprobs mode); the echoed prompt under the model's.
    const sampling = { temperature: req.temperature ?? 1, topP: req.top_p ?? 1, from: prompt.length };
    const scored = (k > 0 || echo) && seq.length > from ? o.score!(seq, from, k, sampling, a.adapter) : [];
    const allPieces = [...(echo ? detok.pieces([], prompt) : []), ...pieces];
    const ids = echo ? seq : tokens;
    const base = echo ? 0 : prompt.length;
    const out = {
      tokens: [] as string[],
      token_logprobs: [] as (number | null)[],
      top_logprobs: [] as (Record<string, number> | null)[],
      text_offset: [] as number[],
    };
    let offset = 0;
    ids.forEach((t, j) => {
      const pos = base + j; // position in seq
      const before = seq.slice(0, pos);
      out.tokens.push(name(before, t));
      out.text_offset.push(offset);
      offset += allPieces[j]!.length;
      if (pos === 0) {
        out.token_logprobs.push(null);
        out.top_logprobs.push(null);
        return;
      }
      const s = scored[pos - from];
      const sampled = pos >= prompt.length ? lps[pos - prompt.length] : undefined;
      const lp = Math.max(sampled ?? s?.logprob ?? Number.NEGATIVE_INFINITY, -9999);
      out.token_logprobs.push(lp);
      const top: Record<string, number> = { [name(before, t)]: lp };
      for (const c of s?.top.slice(0, k) ?? []) {
        const key = name(before, c.id);
        if (!(key in top)) top[key] = Math.max(c.logprob, -9999);
      }
      out.top_logprobs.push(top);
    });
    logprobs = out;
  }
  const extra = req.return_token_ids ? { prompt_token_ids: prompt, token_ids: tokens } : {};
  const choice = { index, text: promptText + text, logprobs, finish_reason: finish, stop_reason: stopReason, ...extra };
  return {
    choice,
    chunks: streamChunks({ choice, promptText, pieces, text, nPrompt: echo ? prompt.length : 0 }),
    generated: tokens.length,
  };
}

/**
 * The same choice as stream chunks, vLLM-style: one per generated token (the first also carries
 * the echoed prompt), the last with finish_reason and stop_reason; logprobs split alongside.
 */
function streamChunks(a: {
  choice: Record<string, unknown>;
  promptText: string;
  pieces: readonly string[];
  text: string;
  nPrompt: number;
}): Record<string, unknown>[] {
  const lp = a.choice.logprobs as Record<string, unknown[]> | null;
  const count = Math.max(1, a.pieces.length);
  let used = 0;
  return Array.from({ length: count }, (_, j) => {
    const last = j === count - 1;
    // Piece j, clipped to the final text (a stop string may cut inside the last pieces).
    const piece = last ? a.text.slice(used) : a.text.slice(used, used + (a.pieces[j]?.length ?? 0));
    used += piece.length;
    const lo = j === 0 ? 0 : a.nPrompt + j;
    const hi = last ? undefined : a.nPrompt + j + 1;
    return {
      index: a.choice.index,
      text: (j === 0 ? a.promptText : '') + piece,
      logprobs: lp ? Object.fromEntries(Object.entries(lp).map(([key, v]) => [key, v.slice(lo, hi)])) : null,
      finish_reason: last ? a.choice.finish_reason : null,
      stop_reason: last ? a.choice.stop_reason : null,
    };
  });
}
