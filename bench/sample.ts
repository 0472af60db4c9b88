/**
 * Speed anchor: sampled tokens/s of the embedded sampler and of the llama.cpp sampler
 * (node-llama-cpp, adapters/llamacpp-sampler.ts) on the same model, exported to GGUF once, at
 * batch 1, 16 and 64, in one run. Workload (as issue benchmarks of llama.cpp's own batched bench):
 * a 1-token prompt per sequence, then `--tokens` new tokens (default 255, the reference model's
 * whole context), temperature 1, no stop token. The embedded sampler runs on the native pool's
 * threads (CRL_THREADS or all cores), llama.cpp on CRL_THREADS or one thread (llamacpp.ts says
 * why); both are printed.
 * Run: `npm run bench:sample [-- --preset reference --tokens 255 --batches 1,16,64]`.
 * Last line: {"embeddedTokPerS": {...}, "llamacppTokPerS": {...}, "ratio": {...}} keyed by batch;
 * ratio = embedded / llama.cpp.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { llamaCppThreads } from '../src/adapters/llamacpp.ts';
import { LlamaCppSampler } from '../src/adapters/llamacpp-sampler.ts';
import { modelConfig } from '../src/model/network/config.ts';
import { exportGguf, namedWeights } from '../src/model/formats/gguf-export.ts';
import { wordVocabMetadata } from '../src/model/formats/gguf-vocab.ts';
import { PolicyModel } from '../src/model/network/policy.ts';
import { ModelSampler } from '../src/model/sampler/sampler.ts';
import { VOCAB } from '../src/words/vocab.ts';
import { DEFAULT_OPTIMIZER } from '../src/optim/config.ts';
import type { SampleRequest, TokenSampler } from '../src/contracts/index.ts';
import { nativeAddon } from '../src/tensor/native.ts';
import { Rng } from '../src/util/random.ts';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const PRESET = arg('preset', 'reference');
const BATCHES = arg('batches', '1,16,64').split(',').map(Number);

const cfg = modelConfig(PRESET, { vocabSize: VOCAB.length });
const TOKENS = Number(arg('tokens', String(cfg.maxSeqLen - 1)));
const policy = new PolicyModel({ config: cfg, optim: DEFAULT_OPTIMIZER, rng: new Rng(1) });
const dir = mkdtempSync(join(tmpdir(), 'crl-bench-sample-'));
const path = join(dir, `${PRESET}.gguf`);
const net = policy.net;
const weights = namedWeights(net);
writeFileSync(
  path,
  exportGguf({
    cfg,
    weights,
    vocab: wordVocabMetadata({ words: VOCAB, vocabSize: cfg.vocabSize }),
    precision: 'f32',
    name: PRESET,
  }),
);

const requests = (b: number): SampleRequest[] =>
  Array.from({ length: b }, () => ({ prompt: [1], maxTokens: TOKENS, stopTokens: [] }));

async function tokPerS(sampler: TokenSampler, b: number): Promise<number> {
  await sampler.sample(
    requests(b).map((r) => ({ ...r, maxTokens: 4 })),
    { temperature: 1, topP: 1 },
  ); // warm-up
  const t0 = performance.now();
  const out = await sampler.sample(requests(b), { temperature: 1, topP: 1 });
  const s = (performance.now() - t0) / 1000;
  return out.reduce((a, r) => a + r.tokens.length, 0) / s;
}

const round = (x: number) => Math.round(x * 10) / 10;
const embeddedTokPerS: Record<string, number> = {};
const llamacppTokPerS: Record<string, number> = {};
const ratio: Record<string, number> = {};
const info = nativeAddon?.info();
console.log(
  JSON.stringify({
    model: PRESET,
    parameters: net.paramCount,
    vocab: cfg.vocabSize,
    newTokensPerSequence: TOKENS,
    embeddedThreads: info ? info.threads : 'typescript (no native addon)',
    llamacppThreads: llamaCppThreads(),
  }),
);
const llama = await LlamaCppSampler.open({ path, rng: new Rng(2), contextSize: cfg.maxSeqLen });
for (const b of BATCHES) {
  const e = await tokPerS(new ModelSampler({ policy, rng: new Rng(3) }), b);
  const l = await tokPerS(llama, b);
  embeddedTokPerS[b] = round(e);
  llamacppTokPerS[b] = round(l);
  ratio[b] = Math.round((e / l) * 100) / 100;
  console.log(JSON.stringify({ batch: b, embeddedTokPerS: embeddedTokPerS[b], llamacppTokPerS: llamacppTokPerS[b] }));
}
await llama.dispose();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ embeddedTokPerS, llamacppTokPerS, ratio }));
