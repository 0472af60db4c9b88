/**
 * `npm run bench:decode-profile`: where a decode step's time goes, op by op. A Hugging Face
 * directory (`--hf DIR`) or a generated one of a named shape (`--shape qwen3-0.6b`, the default,
 * written under the OS temp dir and removed at the end) is loaded and decodes `--tokens` new tokens
 * after a 1-token prompt at each batch size of `--batches` (temperature 1, top-p 1: RL's settings),
 * in `--precision` (bf16 by default): once timed as it runs, once with the model's profiler on
 * (LlamaNetwork.profiler: a lap per op of the step). Each op is given in ms per decode step; the
 * step's time outside every op (the sampler's own loop: the draw over the vocabulary, the
 * bookkeeping) is the remainder. The products are split by weight (`qkv`, `o`, `gate-up`,
 * `down`, `head`) with the GB/s their weight bytes imply. Last line: one JSON object.
 * Run with nice on a shared machine; the profiled step is a little slower than the timed one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { headDim } from '../src/model/network/config.ts';
import { writeRandomHfModel } from '../src/model/formats/hf-generate.ts';
import { loadPolicyDir } from '../src/model/formats/load-policy.ts';
import { MODEL_SHAPES } from '../src/model/network/model-shapes.ts';
import { Profiler } from '../src/model/network/profiler.ts';
import { ModelSampler } from '../src/model/sampler/sampler.ts';
import { WEIGHT_PRECISIONS } from '../src/model/network/weight-precision.ts';
import { Rng } from '../src/util/random.ts';
import { parseBenchArgs } from './bench-args.ts';

const args = parseBenchArgs(
  'bench:decode-profile',
  z
    .object({
      hf: z.string().optional(),
      shape: z.enum(Object.keys(MODEL_SHAPES) as [string, ...string[]]).default('qwen3-0.6b'),
      tokens: z.coerce.number().int().min(2).default(32),
      batches: z.string().default('1,8'),
      precision: z.enum(WEIGHT_PRECISIONS).default('bf16'),
    })
    .strict(),
);

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const generated = args.hf ? null : mkdtempSync(join(tmpdir(), 'crl-decode-profile-'));
try {
  const dir = args.hf ?? generated!;
  if (generated) {
    const cfg = MODEL_SHAPES[args.shape as keyof typeof MODEL_SHAPES];
    writeRandomHfModel({ dir, cfg: { ...cfg, maxSeqLen: Math.max(512, args.tokens + 8) } });
  }
  const { policy } = await loadPolicyDir(dir);
  const cfg = policy.config;
  const bytesPer = args.precision === 'f32' ? 4 : 2;
  const c = cfg.dModel;
  const d = headDim(cfg);
  const q = cfg.nHeads * d;
  const kv = (cfg.nKvHeads ?? cfg.nHeads) * d;
  const weightBytes: Record<string, number> = {
    qkv: cfg.nLayers * c * (q + 2 * kv) * bytesPer,
    o: cfg.nLayers * q * c * bytesPer,
    'gate-up': cfg.nLayers * c * 2 * cfg.mlpHidden * bytesPer,
    down: cfg.nLayers * cfg.mlpHidden * c * bytesPer,
    head: cfg.vocabSize * c * bytesPer,
  };
  const results = [];
  for (const b of args.batches.split(',').map(Number)) {
    const sampler = new ModelSampler({ policy, rng: new Rng(b), precision: args.precision });
    const reqs = (n: number) => Array.from({ length: b }, () => ({ prompt: [1], maxTokens: n, stopTokens: [] }));
    sampler.sampleSync(reqs(2), { temperature: 1, topP: 1 }); // warm-up: workspace, prepared weights
    const time = (prof: Profiler | undefined): number => {
      policy.net.profiler = prof;
      const t = performance.now();
      sampler.sampleSync(reqs(args.tokens), { temperature: 1, topP: 1 });
      policy.net.profiler = undefined;
      return (performance.now() - t) / args.tokens; // ms per decode step
    };
    const stepMs = time(undefined);
    const prof = new Profiler();
    const profiledStepMs = time(prof);
    const ops: Record<string, number> = {};
    let inOps = 0;
    for (const [name, ms] of prof.totals) {
      ops[name] = round(ms / args.tokens);
      inOps += ms / args.tokens;
    }
    const products = Object.fromEntries(
      Object.entries(weightBytes).map(([k, bytes]) => {
        const ms = ops[`decode-linear-${k}`] ?? 0;
        return [k, { ms, gbPerS: ms > 0 ? round(bytes / 1e6 / ms, 1) : null }];
      }),
    );
    const row = {
      batch: b,
      tokPerS: round((b * 1000) / stepMs),
      stepMs: round(stepMs),
      profiledStepMs: round(profiledStepMs),
      outsideOpsMs: round(profiledStepMs - inOps),
      products,
      ops,
    };
    console.log(JSON.stringify(row));
    results.push(row);
  }
  console.log(JSON.stringify({ precision: args.precision, parameters: policy.net.paramCount, results }));
} finally {
  if (generated) rmSync(generated, { recursive: true, force: true });
}
