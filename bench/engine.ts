/**
 * Engine benchmark: training step and sampling speed of the embedded model, against the
 * machine's GEMM ceiling. `npm run bench:engine [-- --quick]`.
 *
 * FLOPs counted (per training step over N tokens, forward + backward = 3x forward):
 *   matmul: 6 * N * (params - embed_tokens)   (the embedding lookup does no multiply-adds)
 *   attention: 6 * sum_seq L^2 * C * layers   (QK^T and PV over the causal half only; the kernel
 *                                               computes the full square, so this undercounts work)
 * Last line: one JSON object for the reference model.
 */
import { modelConfig, type ModelConfig } from '../src/model/network/config.ts';
import { PolicyModel } from '../src/model/network/policy.ts';
import { Profiler } from '../src/model/network/profiler.ts';
import { ModelSampler } from '../src/model/sampler/sampler.ts';
import { DEFAULT_OPTIMIZER } from '../src/optim/config.ts';
import { gemmBackend } from '../src/tensor/gemm.ts';
import { measureGemmCeiling } from './gemm-ceiling.ts';
import { Rng } from '../src/util/random.ts';

const quick = process.argv.includes('--quick');
const BATCH = 16;
const SEQ = 256;

interface ModelResult {
  name: string;
  params: number;
  stepMs: number;
  trainTokensPerSecond: number;
  trainGflops: number;
  stepGflop: number;
  optimizerMs: number;
  sample: { batch: number; newTokens: number; tokensPerSecond: number }[];
  multiTurn: { cached: number; fresh: number }; // generated tokens/s

  trainBreakdown: Map<string, number>;
  sampleBreakdown: Map<string, number>;
  peakRssMb: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function trainFlops(cfg: ModelConfig, params: number, lengths: number[]): number {
  const n = lengths.reduce((a, b) => a + b, 0);
  const matmul = 6 * n * (params - cfg.vocabSize * cfg.dModel);
  const attention = 6 * lengths.reduce((a, l) => a + l * l, 0) * cfg.dModel * cfg.nLayers;
  return matmul + attention;
}

function peakRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}

function benchModel(name: 'reference' | 'large'): ModelResult {
  const cfg = modelConfig(name);
  const rng = new Rng(1);
  const policy = new PolicyModel({ config: cfg, optim: DEFAULT_OPTIMIZER, rng });
  const seq = Math.min(SEQ, cfg.maxSeqLen);
  const seqs = Array.from({ length: BATCH }, () => Int32Array.from({ length: seq }, () => rng.int(cfg.vocabSize)));
  const grads = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : -1 / (BATCH * seq))));
  const step = () => {
    policy.forward(seqs, { train: true });
    policy.backward({ logprobs: grads });
    return policy.step();
  };
  step(); // warm-up: allocates the workspace
  const reps = quick ? 2 : name === 'reference' ? 5 : 3;
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    step();
    times.push(performance.now() - t);
  }
  const stepMs = median(times);
  // Breakdown of one more step.
  const prof = new Profiler();
  policy.net.profiler = prof;
  policy.forward(seqs, { train: true });
  policy.backward({ logprobs: grads });
  let t0 = performance.now();
  policy.step();
  const optimizerMs = performance.now() - t0;
  prof.totals.set('optimizer', optimizerMs);
  const trainBreakdown = new Map(prof.totals);
  policy.net.profiler = undefined;

  const flop = trainFlops(
    cfg,
    policy.net.paramCount,
    seqs.map((s) => s.length),
  );
  const sample: ModelResult['sample'] = [];
  let sampleBreakdown = new Map<string, number>();
  for (const batch of [16, 64]) {
    const newTokens = Math.min(256, cfg.maxSeqLen - 1);
    const sampler = new ModelSampler({ policy, rng: new Rng(batch) });
    const reqs = Array.from({ length: batch }, (_, i) => ({
      prompt: [i % cfg.vocabSize],
      maxTokens: newTokens,
      stopTokens: [],
    }));
    sampler.sampleSync(
      reqs.slice(0, 2).map((r) => ({ ...r, maxTokens: 8 })),
      { temperature: 1, topP: 1 },
    ); // warm-up
    if (batch === 64) policy.net.profiler = new Profiler();
    t0 = performance.now();
    const res = sampler.sampleSync(reqs, { temperature: 1, topP: 1 });
    const ms = performance.now() - t0;
    if (batch === 64) {
      sampleBreakdown = new Map(policy.net.profiler!.totals);
      sampleBreakdown.set('total', ms);
      policy.net.profiler = undefined;
    }
    const generated = res.reduce((a, r) => a + r.tokens.length, 0);
    sample.push({ batch, newTokens, tokensPerSecond: (generated / ms) * 1000 });
  }
  const rss = peakRssMb(); // before the multi-turn extra, which is not part of the issue's workload
  multiTurnTokensPerSecond(policy, true); // warm-up: the JIT and the slot buffers
  multiTurnTokensPerSecond(policy, false);
  const multiTurn = { cached: multiTurnTokensPerSecond(policy, true), fresh: multiTurnTokensPerSecond(policy, false) };
  return {
    name,
    params: policy.net.paramCount,
    stepMs,
    stepGflop: flop / 1e9,
    multiTurn,
    trainTokensPerSecond: (BATCH * seq) / (stepMs / 1000),
    trainGflops: flop / (stepMs * 1e6),
    optimizerMs,
    sample,
    trainBreakdown,
    sampleBreakdown,
    peakRssMb: rss,
  };
}

/**
 * An agent-like workload: 64 episodes x 4 turns; each turn's prompt is the previous prompt, its
 * generation (16 tokens) and a 24-token observation. With `cached` one sampler serves every turn
 * (its KV slots reuse the shared prefix); otherwise each turn re-prefills the whole prompt.
 */
function multiTurnTokensPerSecond(policy: PolicyModel, cached: boolean): number {
  const cfg = policy.config;
  const rng = new Rng(3);
  const turns = 4,
    gen = 16,
    obs = 24;
  let prompts = Array.from({ length: 64 }, () => Array.from({ length: 32 }, () => rng.int(cfg.vocabSize)));
  let sampler = new ModelSampler({ policy, rng: new Rng(4) });
  let generated = 0;
  const t0 = performance.now();
  for (let turn = 0; turn < turns; turn++) {
    if (!cached) sampler = new ModelSampler({ policy, rng: new Rng(4 + turn) });
    const res = sampler.sampleSync(
      prompts.map((prompt) => ({ prompt, maxTokens: gen, stopTokens: [] })),
      { temperature: 1, topP: 1 },
    );
    generated += res.reduce((a, r) => a + r.tokens.length, 0);
    prompts = prompts.map((p, i) => [
      ...p,
      ...res[i]!.tokens,
      ...Array.from({ length: obs }, () => rng.int(cfg.vocabSize)),
    ]);
  }
  return (generated / (performance.now() - t0)) * 1000;
}

function fmt(x: number, d = 1): string {
  return x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
}

function printBreakdown(title: string, m: Map<string, number>): void {
  const total = [...m.entries()].filter(([k]) => k !== 'total').reduce((a, [, v]) => a + v, 0);
  console.log(
    `  ${title} (ms, share of profiled time${m.has('total') ? `; wall ${fmt(m.get('total')!, 0)} ms` : ''}):`,
  );
  for (const [k, v] of [...m.entries()].filter(([k]) => k !== 'total').sort((a, b) => b[1] - a[1])) {
    console.log(`    ${k.padEnd(18)} ${fmt(v, 1).padStart(9)}  ${fmt((100 * v) / total, 1).padStart(5)}%`);
  }
}

async function main(): Promise<void> {
  console.log(`engine benchmark: gemm backend ${gemmBackend()}, batch ${BATCH}x${SEQ}${quick ? ' (quick)' : ''}`);
  const results: ModelResult[] = [benchModel('reference')];
  if (!quick) results.push(benchModel('large'));
  const c = measureGemmCeiling();
  const ceiling = {
    gflops: Math.max(c.builtinGflops, c.openblasGflops ?? 0),
    winner: c.winner,
    builtin: c.builtinGflops,
    openblas: c.openblasGflops,
  };
  console.log('');
  console.log(
    '| model | params | train step ms | train tok/s | GFLOP/step | train GFLOP/s | optimizer ms | sample tok/s b16 | sample tok/s b64 | peak RSS MB |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(
      `| ${r.name} | ${(r.params / 1e6).toFixed(2)}M | ${fmt(r.stepMs, 0)} | ${fmt(r.trainTokensPerSecond, 0)} | ${fmt(r.stepGflop, 1)} | ${fmt(r.trainGflops, 1)} | ${fmt(r.optimizerMs, 1)} | ${fmt(r.sample[0]!.tokensPerSecond, 0)} | ${fmt(r.sample[1]!.tokensPerSecond, 0)} | ${fmt(r.peakRssMb, 0)} |`,
    );
  }
  console.log(
    `(sampling: 1-token prompts, ${results[0]!.sample[0]!.newTokens} new tokens for reference (ctx ${modelConfig('reference').maxSeqLen}), temperature 1; peak RSS is the process maximum after that model's training and sampling runs)`,
  );
  for (const r of results) {
    console.log(
      `multi-turn sampling (${r.name}, 64 episodes x 4 turns, 16 new + 24 observation tokens per turn): ${fmt(r.multiTurn.cached, 0)} generated tok/s with KV prefix reuse, ${fmt(r.multiTurn.fresh, 0)} re-prefilling every turn`,
    );
  }
  const openblas = ceiling.openblas === null ? 'not available' : `${fmt(ceiling.openblas, 1)} GFLOP/s`;
  console.log(
    `GEMM ceiling (1024^3 f32): built-in ${fmt(ceiling.builtin, 1)} GFLOP/s, OpenBLAS ${openblas}; winner ${ceiling.winner}`,
  );
  for (const r of results) {
    console.log(`\n${r.name}: per-kernel breakdown`);
    printBreakdown('training step (forward + backward + optimizer)', r.trainBreakdown);
    printBreakdown('sampling, batch 64', r.sampleBreakdown);
  }
  const ref = results[0]!;
  console.log(
    JSON.stringify({
      trainGflops: +ref.trainGflops.toFixed(2),
      ceilingGflops: +ceiling.gflops.toFixed(2),
      ratio: +(ref.trainGflops / ceiling.gflops).toFixed(3),
      trainTokensPerSecond: Math.round(ref.trainTokensPerSecond),
      sampleTokensPerSecond: Math.round(ref.sample[1]!.tokensPerSecond),
      peakRssMb: Math.round(ref.peakRssMb),
    }),
  );
}

await main();
