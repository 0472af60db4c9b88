import type { SampleRequest, SampleResult, SamplingParams, TokenSampler } from '../contracts/index.ts';
import { postOnce } from './engine-http.ts';
import { EngineError, EngineFault, sampleEach } from './engine-error.ts';
import { engineProtocol, withRequestSeed, type EngineProtocolName } from './engine-protocols.ts';

export { EngineError } from './engine-error.ts';

export interface HttpSamplerOptions {
  /** Base URL of the engine, e.g. http://127.0.0.1:8000 (vLLM) or http://127.0.0.1:30000 (SGLang). */
  url: string;
  protocol: EngineProtocolName;
  /** Model name sent to OpenAI-style servers (vLLM checks it against what it serves). */
  model?: string;
  /** Per-request timeout. */
  timeoutMs?: number;
  /** Extra tries after a network error or a 5xx answer, with doubling back-off from 200 ms. */
  retries?: number;
  /**
   * Sampler seed: a request that names its episode carries a seed of its own, mixed from this,
   * the episode id and the prompt (util/random.ts requestSeed), so an engine that honours
   * per-request seeds draws an episode's tokens the same however it batched them. Absent: no seed.
   */
  seed?: number;
}

/**
 * TokenSampler over a remote engine's HTTP API (engine-protocols.ts). Each request of a batch is
 * one HTTP call, all in flight at once: vLLM and SGLang batch continuously on their side, so the
 * runtime's batching carries over without a batch endpoint. Token ids go in and come out, so
 * records stay token-exact (method §3). The engine's logprobs are what it reports, and engines
 * differ in which distribution that is (docs/remote-engines.md): vLLM's default `raw_logprobs` mode
 * and SGLang with SGLANG_RETURN_ORIGINAL_LOGPROB give the model's own (temperature 1), SGLang by
 * default logits / T without top-p, vLLM's `processed_logprobs` mode and `crl serve` the
 * distribution each token was drawn from. Training's off-policy corrections divide by them, so
 * `crl train` is told which with --engine-logprobs and refuses a mismatch (config/sampling-problems.ts).
 * An engine that fails after it has answered fails only the episodes it was serving (EngineFault,
 * docs/faults.md).
 */
export function createHttpSampler(options: HttpSamplerOptions): TokenSampler {
  const protocol = engineProtocol(options.protocol);
  let endpoint: URL;
  try {
    endpoint = new URL(protocol.path, options.url);
  } catch {
    throw new EngineError(
      `engine URL ${JSON.stringify(options.url)} is not a URL; expected e.g. http://127.0.0.1:8000`,
    );
  }
  const model = options.model;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const retries = options.retries ?? 2;

  // Once the engine has answered, a failure past the retries is a fault of the episode that asked
  // (EngineFault); before that, it is a wrong URL or an engine not started (EngineError).
  let answered = false;

  async function post(body: unknown): Promise<unknown> {
    let last = '';
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1)));
      const r = await postOnce(endpoint, body, timeoutMs);
      if (r.kind === 'ok') {
        answered = true;
        return r.json;
      }
      if (r.kind === 'unreachable') {
        last = `cannot reach the engine (${r.message}); is it running at ${options.url}?`;
        continue; // connection refused, reset, timeout: worth another try
      }
      last = `HTTP ${r.status}: ${r.text.slice(0, 300)}`;
      if (r.status < 500) throw new EngineError(`${endpoint.href}: ${last}`); // the request itself is wrong
    }
    throw new (answered ? EngineFault : EngineError)(`${endpoint.href}: ${last}`);
  }

  async function one(request: SampleRequest, params: SamplingParams): Promise<SampleResult> {
    const json = await post(
      protocol.requestBody({
        request: withRequestSeed(options.seed, request),
        params,
        ...(model === undefined ? {} : { model }),
      }),
    );
    try {
      return protocol.parseResponse(json, request);
    } catch (e) {
      throw new EngineError(`${endpoint.href}: ${(e as Error).message}`);
    }
  }

  return {
    sample: (requests: readonly SampleRequest[], params: SamplingParams) => sampleEach(requests, (r) => one(r, params)),
  };
}

/**
 * `vllm:URL` / `sglang:URL` (the `--policy` form of crl run and crl eval) as an HTTP sampler;
 * null for anything else (expert, a checkpoint or run directory).
 */
export function engineSamplerFor(policy: string, options: { seed?: number } = {}): TokenSampler | null {
  const m = /^(vllm|sglang):(.+)$/.exec(policy);
  return m ? createHttpSampler({ protocol: m[1] as EngineProtocolName, url: m[2]!, ...options }) : null;
}
