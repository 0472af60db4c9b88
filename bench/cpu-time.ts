/**
 * Engine figures in process CPU time, for a machine other jobs share: wall-clock rates there
 * measure the other jobs as much as the engine (bench:engine's), while the CPU time this process
 * spends is what the engine costs. Run it with one pool thread (CRL_THREADS=1), so that CPU time
 * is one core's work and no time is spent waiting for a preempted worker.
 *   CRL_THREADS=1 npm run bench:cpu-time [-- ceiling train decode1 sample64]
 * Figures (best of a few repetitions, the least disturbed):
 *  - ceilingGflops: the built-in GEMM on 1024^3 (bench/gemm-ceiling.ts's product);
 *  - trainGflops, ratio: a reference-model training step (forward, backward, AdamW) on 16 x 256
 *    tokens, FLOPs counted as bench/engine.ts counts them, and its ratio to the ceiling;
 *  - largeB1TokPerCpuS: the large model's single-sequence decode (1-token prompt, 255 new tokens,
 *    temperature 1: the llama.cpp comparison's workload), generated tokens per CPU second;
 *  - refB64TokPerCpuS: the reference model sampling 64 sequences of 255 new tokens.
 * Last line: one JSON object with the figures asked for (all by default).
 */
import { modelConfig } from '../src/model/network/config.ts';
import { PolicyModel } from '../src/model/network/policy.ts';
import { ModelSampler } from '../src/model/sampler/sampler.ts';
import { DEFAULT_OPTIMIZER } from '../src/optim/config.ts';
import { gemm } from '../src/tensor/gemm.ts';
import { nativeAddon } from '../src/tensor/native.ts';
import { Rng } from '../src/util/random.ts';

const asked = new Set(process.argv.slice(2).filter((a) => !a.startsWith('-')));
const wants = (name: string): boolean => asked.size === 0 || asked.has(name);

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Least CPU ms of `reps` calls of f. */
function best(reps: number, f: () => void): number {
  let b = Infinity;
  for (let i = 0; i < reps; i++) {
    const t = cpuMs();
    f();
    b = Math.min(b, cpuMs() - t);
  }
  return b;
}

function ceilingGflops(): number {
  const size = 1024;
  const a = new Float32Array(size * size).map((_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
  const b = a.slice().reverse();
  const c = new Float32Array(size * size);
  gemm({ a, b, c, m: size, n: size, k: size }); // warm-up
  return (2 * size ** 3) / (best(10, () => gemm({ a, b, c, m: size, n: size, k: size })) * 1e6);
}

function trainGflops(): number {
  const cfg = modelConfig('reference');
  const rng = new Rng(1);
  const policy = new PolicyModel({ config: cfg, optim: DEFAULT_OPTIMIZER, rng });
  const seqs = Array.from({ length: 16 }, () => Int32Array.from({ length: 256 }, () => rng.int(cfg.vocabSize)));
  const grads = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : -1 / 4096)));
  const step = (): void => {
    policy.forward(seqs, { train: true });
    policy.backward({ logprobs: grads });
    policy.step();
  };
  step();
  step(); // warm-up: workspaces, JIT
  const ms = best(5, step);
  // As bench/engine.ts: 6 N (params - embedding) for the products, 6 sum L^2 C layers for attention.
  const matmul = 6 * 4096 * (policy.net.paramCount - cfg.vocabSize * cfg.dModel);
  const attention = 6 * 16 * 256 * 256 * cfg.dModel * cfg.nLayers;
  return (matmul + attention) / (ms * 1e6);
}

/** Generated tokens per CPU second: `batch` 1-token prompts, 255 new tokens each, temperature 1. */
function sampleRate(preset: string, batch: number, reps: number): number {
  const cfg = modelConfig(preset);
  const policy = new PolicyModel({ config: cfg, optim: DEFAULT_OPTIMIZER, rng: new Rng(1) });
  const requests = Array.from({ length: batch }, (_, i) => ({
    prompt: [i % cfg.vocabSize],
    maxTokens: 255,
    stopTokens: [],
  }));
  const sampler = new ModelSampler({ policy, rng: new Rng(batch) });
  const params = { temperature: 1, topP: 1 };
  sampler.sampleSync(
    requests.slice(0, 2).map((r) => ({ ...r, maxTokens: 8 })),
    params,
  ); // warm-up
  return (batch * 255) / (best(reps, () => sampler.sampleSync(requests, params)) / 1000);
}

const threads = nativeAddon?.info().threads ?? 1;
if (threads !== 1) console.warn(`bench:cpu-time: the pool has ${threads} threads; run it with CRL_THREADS=1`);
const out: Record<string, number | string> = { kernels: nativeAddon ? 'native' : 'typescript', threads };
if (wants('ceiling')) out.ceilingGflops = +ceilingGflops().toFixed(1);
if (wants('train')) {
  out.trainGflops = +trainGflops().toFixed(1);
  if (typeof out.ceilingGflops === 'number') out.ratio = +(out.trainGflops / out.ceilingGflops).toFixed(3);
}
if (wants('decode1')) out.largeB1TokPerCpuS = Math.round(sampleRate('large', 1, 3));
if (wants('sample64')) out.refB64TokPerCpuS = Math.round(sampleRate('reference', 64, 3));
console.log(JSON.stringify(out));
