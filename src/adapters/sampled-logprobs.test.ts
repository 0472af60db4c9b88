import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleRequest } from '../contracts/index.ts';
import { loadCheckpoint, saveCheckpoint } from '../model/formats/checkpoint.ts';
import { modelConfig } from '../model/network/config.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { scrambleWeights } from '../model/network/test-helpers.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { Rng } from '../util/random.ts';
import { createHttpSampler } from './http-sampler.ts';
import { startServe, type Served } from './testing/crl-serve.ts';

/**
 * `crl serve` reports each generated token's log-prob under the distribution it was drawn from
 * (logits / T, cut to the top-p nucleus: vLLM's processed_logprobs mode), through both APIs and
 * the clients of both, checked against the same checkpoint scored in this process.
 */
const tokenizer = new WordTokenizer();
const T = 0.7;
const TOP_P = 0.9;

describe('crl serve: log-probs of the sampled distribution', () => {
  let server: Served;
  let local: PolicyModel;

  beforeAll(async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'crl-sampled-lp-')), 'ckpt');
    const policy = new PolicyModel({
      config: modelConfig('tiny', { vocabSize: tokenizer.vocabSize, maxSeqLen: 256 }),
      optim: DEFAULT_OPTIMIZER,
      rng: new Rng(7),
    });
    scrambleWeights(policy.net, 8); // peaked distributions: temperature and top-p change them visibly
    await saveCheckpoint(dir, { policy });
    local = (await loadCheckpoint(dir)).policy;
    server = await startServe(['--policy', dir]);
  }, 240_000); // generous: a loaded machine runs this many times slower than an idle one
  afterAll(() => server?.stop());

  /** Teacher-forced log-probs of the generated tokens, under a sampling transform. */
  function scored(prompt: number[], tokens: number[], sampling: { temperature: number; topP: number }): number[] {
    local.sampling = sampling;
    const lp = local.forward([Int32Array.from([...prompt, ...tokens])]).logprobs[0]!;
    return tokens.map((_, t) => lp[prompt.length + t]!);
  }

  for (const protocol of ['vllm', 'sglang'] as const)
    it(`${protocol}: at temperature ${T}, top-p ${TOP_P} the log-probs are the sampled distribution's`, async () => {
      const sampler = createHttpSampler({ url: server.url, protocol, seed: 3 });
      const prompt = tokenizer.encode('<bos> <obs> set a 1 <eot>');
      const requests: SampleRequest[] = ['a', 'b', 'c'].map((e) => ({
        prompt,
        maxTokens: 8,
        stopTokens: [],
        episodeId: e,
      }));
      const results = await sampler.sample(requests, { temperature: T, topP: TOP_P });
      let differs = 0;
      for (const r of results) {
        const want = scored(prompt, r.tokens, { temperature: T, topP: TOP_P });
        const plain = scored(prompt, r.tokens, { temperature: 1, topP: 1 });
        r.tokens.forEach((_, t) => {
          expect(Math.abs(r.logprobs[t]! - want[t]!)).toBeLessThan(1e-4);
          if (Math.abs(r.logprobs[t]! - plain[t]!) > 1e-2) differs++;
        });
      }
      expect(differs).toBeGreaterThan(0); // not the temperature-1 values
    }, 240_000);

  it('/v1/completions with logprobs: k lists the top tokens under the same distribution', async () => {
    const prompt = tokenizer.encode('<bos> <user> read all , then answer <eot> <asst>');
    const body = {
      prompt,
      max_tokens: 5,
      temperature: T,
      top_p: TOP_P,
      seed: 11,
      logprobs: 3,
      return_tokens_as_token_ids: true,
    };
    const res = await fetch(new URL('/v1/completions', server.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    const json = (await res.json()) as {
      choices: { logprobs: { tokens: string[]; token_logprobs: number[]; top_logprobs: Record<string, number>[] } }[];
    };
    const lp = json.choices[0]!.logprobs;
    const tokens = lp.tokens.map((s) => Number(s.slice('token_id:'.length)));
    const want = scored(prompt, tokens, { temperature: T, topP: TOP_P });
    tokens.forEach((tok, t) => {
      expect(Math.abs(lp.token_logprobs[t]! - want[t]!)).toBeLessThan(1e-4);
      // Each listed alternative, scored as if it had been drawn at this position.
      for (const [key, v] of Object.entries(lp.top_logprobs[t]!)) {
        const alt = Number(key.slice('token_id:'.length));
        if (alt === tok || v <= -9999) continue; // -9999: outside the nucleus, clamped as vLLM clamps -inf
        const altLp = scored(prompt, [...tokens.slice(0, t), alt], { temperature: T, topP: TOP_P })[t]!;
        expect(Math.abs(v - altLp)).toBeLessThan(1e-4);
      }
    });
  }, 240_000);
});
