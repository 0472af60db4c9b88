/**
 * bench:scale's training phase (`--train N`), run in a child process of its own so that its peak
 * RSS is the phase's alone: one PPO update's work at a model shape, N tokens in sequences of
 * `--seq` tokens. The policy (random weights of the shape) and the critic (its first
 * `--critic-layers` layers, critic.ts) are built, both recomputing activations in the backward
 * with `--recompute true` (workspace.ts); the policy's packed copy is made as the
 * rollout's sampler leaves it; then the update: policy forward + backward + AdamW step, and the
 * critic's forward + backward + step twice (criticUpdatesPerPolicyUpdate = 2, method §6). The
 * first update allocates the workspaces and is the warm-up; the second is timed. The loss
 * gradients are synthetic (the PPO losses cost nothing next to the model). The machine's GEMM
 * ceiling (bench/gemm-ceiling.ts) is measured in the same process after the update, and the
 * memory plan (src/model/network/memory-plan.ts) is printed beside the measured peak.
 * With `--lora-rank R` the policy trains LoRA adapters of rank R on every projection (alpha 2R,
 * model/lora/) instead of every weight: the step is the adapter's (dA and dB from the rows, AdamW
 * on them, the merge), and the plan counts what a LoRA policy holds. The policy's random weights
 * are rounded to bf16 first, as a Qwen3 base is shipped (the cost of a full update does not
 * depend on the values), so a LoRA policy's frozen base is kept in bf16 as it would be for the
 * real model. In storage 'base' (lora-adapter.ts) the adapter is made before the critic and the
 * sampler's copy, which read the policy's layers from it, and the released f32 weights are
 * collected (gc, exposed by bench/scale.ts) before anything else is allocated.
 */
import { performance } from 'node:perf_hooks';
import type { ModelConfig } from '../src/model/network/config.ts';
import { CriticModel } from '../src/model/network/critic.ts';
import { trainingMemoryPlan } from '../src/model/network/memory-plan.ts';
import { PolicyModel } from '../src/model/network/policy.ts';
import { resolvePrecision } from '../src/model/network/weight-precision.ts';
import { DEFAULT_OPTIMIZER } from '../src/optim/config.ts';
import { attentionShape } from '../src/model/network/config.ts';
import { LoraAdapter, type LoraStorage } from '../src/model/lora/lora-adapter.ts';
import { resolveLora } from '../src/model/lora/lora-config.ts';
import { Rng } from '../src/util/random.ts';
import { measureGemmCeiling } from './gemm-ceiling.ts';

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const gb = (bytes: number) => round(bytes / 1e9);

/**
 * FLOPs of one forward + backward over `lengths` of a network with `layers` layers: 6 per token
 * per matrix parameter (the layers' matrices, plus the V x C output layer for a policy), and 6 l^2
 * H D per layer per sequence for causal attention (QK^T and PV over half the l x l scores, times 3
 * for the backward).
 */
export function trainFlops(cfg: ModelConfig, lengths: readonly number[], lmHead: boolean): number {
  const { dModel: c, mlpHidden: f, vocabSize: v } = cfg;
  const { qDim, qkvDim } = attentionShape(cfg);
  const n = lengths.reduce((a, b) => a + b, 0);
  const matrices = cfg.nLayers * (qkvDim * c + c * qDim + 3 * f * c) + (lmHead ? v * c : 0);
  const attention = 6 * lengths.reduce((a, l) => a + l * l, 0) * qDim * cfg.nLayers;
  return 6 * n * matrices + attention;
}

export function trainPhase(o: {
  cfg: ModelConfig;
  tokens: number;
  seq: number;
  criticLayers: number;
  recompute: boolean;
  /** LoRA adapters of this rank on every projection instead of training every weight. */
  loraRank?: number | undefined;
  loraStorage?: LoraStorage;
  criticEmbedding?: 'trained' | 'frozen';
}): void {
  const baseRss = process.memoryUsage().rss; // the runtime before any model buffer
  const { cfg, tokens, seq } = o;
  const rng = new Rng(1);
  const t0 = performance.now();
  const policy = new PolicyModel({ config: cfg, optim: DEFAULT_OPTIMIZER, rng });
  const bits = new Uint32Array(policy.net.params.buffer, policy.net.params.byteOffset, policy.net.params.length);
  for (let k = 0; k < bits.length; k++) bits[k] = bits[k]! & 0xffff0000; // a base shipped in bf16 (truncated: any bf16 values do)
  const lora = o.loraRank
    ? new LoraAdapter({
        net: policy.net,
        settings: resolveLora({ rank: o.loraRank }),
        optim: DEFAULT_OPTIMIZER,
        rng: rng.fork(),
        storage: o.loraStorage ?? 'merged',
      })
    : null;
  (globalThis as { gc?: () => void }).gc?.(); // storage 'base': the released f32 weights go now
  const critic = CriticModel.fromPolicy({
    policy,
    optim: DEFAULT_OPTIMIZER,
    layers: o.criticLayers,
    embedding: o.criticEmbedding ?? 'trained',
  });
  policy.net.recompute = critic.net.recompute = o.recompute;
  // What the rollout's sampler leaves behind: its copy in the precision it picks by size.
  policy.net.inferenceWeights(resolvePrecision('auto', policy.net.paramCount));
  const buildS = (performance.now() - t0) / 1000;
  const lengths = Array.from({ length: Math.ceil(tokens / seq) }, (_, i) => Math.min(seq, tokens - i * seq));
  const seqs = lengths.map((l) => Int32Array.from({ length: l }, () => rng.int(cfg.vocabSize)));
  const lpGrads = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : -1 / tokens)));
  const vGrads = seqs.map((s) => Float32Array.from(s, (_, t) => (t === 0 ? 0 : 1 / tokens)));
  // CPU seconds beside wall seconds: on a shared machine the wall time also counts waiting.
  const cpuS = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  let policyCpuS = 0;
  const update = () => {
    const a = performance.now();
    const ca = cpuS();
    policy.forward(seqs, { train: true });
    policy.backward({ logprobs: lpGrads });
    if (lora) lora.step();
    else policy.step();
    policyCpuS = cpuS() - ca;
    const b = performance.now();
    for (let i = 0; i < 2; i++) {
      critic.forward(seqs, { train: true });
      critic.backward({ values: vGrads });
      critic.step();
    }
    return { policyS: (b - a) / 1000, criticS: (performance.now() - b) / 1000 };
  };
  update(); // warm-up: allocates both workspaces and touches every AdamW moment
  const { policyS, criticS } = update();
  const peakRss = process.resourceUsage().maxRSS * 1024;
  const plan = trainingMemoryPlan({
    policy: cfg,
    criticLayers: critic.config.nLayers,
    lengths,
    recompute: o.recompute,
    lora: lora ? { frozenBytes: lora.base.bytes, adapterParams: lora.params.length, storage: lora.storage } : undefined,
    criticEmbedding: o.criticEmbedding ?? 'trained',
  });
  const ceiling = measureGemmCeiling();
  const ceilingGflops = Math.max(ceiling.builtinGflops, ceiling.openblasGflops ?? 0);
  const policyGflops = trainFlops(cfg, lengths, true) / policyS / 1e9;
  const updateGflops =
    (trainFlops(cfg, lengths, true) + 2 * trainFlops(critic.config, lengths, false)) / (policyS + criticS) / 1e9;
  console.log(
    JSON.stringify({
      parameters: { policy: policy.net.paramCount, critic: critic.net.paramCount, criticLayers: critic.config.nLayers },
      tokens,
      seq,
      recompute: o.recompute,
      loraRank: o.loraRank ?? null,
      ...(lora ? { loraStorage: lora.storage } : {}),
      criticEmbedding: o.criticEmbedding ?? 'trained',
      ...(lora ? { loraParameters: lora.params.length } : {}),
      buildS: round(buildS, 1),
      policyStepS: round(policyS, 2),
      policyStepCpuS: round(policyCpuS, 2),
      criticStepsS: round(criticS, 2),
      policyTrainTokPerS: round(tokens / policyS),
      updateTrainTokPerS: round(tokens / (policyS + criticS)),
      policyGflops: round(policyGflops, 1),
      updateGflops: round(updateGflops, 1),
      gemmCeilingGflops: round(ceilingGflops, 1),
      gemmCeilingWinner: ceiling.winner,
      policyOfCeiling: round(policyGflops / ceilingGflops, 3),
      updateOfCeiling: round(updateGflops / ceilingGflops, 3),
      runtimeRssGb: gb(baseRss),
      plan: Object.fromEntries(plan.lines.map((l) => [l.what, gb(l.bytes)])),
      predictedPeakRssGb: gb(baseRss + plan.totalBytes),
      peakRssGb: gb(peakRss),
    }),
  );
}
