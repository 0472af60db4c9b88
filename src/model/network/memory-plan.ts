import { totalmem } from 'node:os';
import { nativeAddon } from '../../tensor/native.ts';
import { attentionShape, type ModelConfig } from './config.ts';
import { criticConfig } from './critic.ts';
import { resolvePrecision, type WeightPrecision } from './weight-precision.ts';
import { paramCount, tensorSpecs, type HeadKind } from './weights.ts';

/**
 * What training holds in memory, in bytes, from the shapes alone (docs/engine-scale.md "Training
 * memory"). Every buffer is float32. P = parameters, N = tokens of one forward/backward (a PPO
 * minibatch), l = one sequence's length, C = dModel, F = mlpHidden, V = vocab, L = layers,
 * H / Hkv = query / key-value heads, D = head size, Q3 = (H + 2 Hkv) D.
 */

/** Per parameter: weights, gradients, AdamW m and v (network.ts, optim/adamw.ts). */
export const BYTES_PER_PARAM = 16;

/**
 * Floats one layer keeps per token for the backward (workspace.ts): its input (resid), ln1, qkv,
 * the pre-norm qkv and per-head rstd (q/k-norm models), att, mid, ln2, gateUp, act, sig, two rstd.
 */
export function layerFloatsPerToken(cfg: ModelConfig): number {
  const { dModel: c, mlpHidden: f } = cfg;
  const { h, hkv, qDim, qkvDim } = attentionShape(cfg);
  const qkn = cfg.qkNorm === true;
  return 4 * c + 2 + qkvDim * (qkn ? 2 : 1) + (qkn ? h + hkv : 0) + qDim + 4 * f;
}

/**
 * Floats per token outside the layers: the trunk output, final norm, the per-layer gradient scratch
 * (dres, dln, datt, dqkv, dqkvRaw, dgateUp, dact, dlnf) and per-row scalars; with `logits`, the
 * [N, V] logits and their gradient (a policy's; a critic never writes them, so its pages stay
 * unmapped).
 */
export function headFloatsPerToken(cfg: ModelConfig, logits: boolean): number {
  const { dModel: c, mlpHidden: f, vocabSize: v } = cfg;
  const { qDim, qkvDim } = attentionShape(cfg);
  const qkn = cfg.qkNorm === true;
  return 5 * c + 1 + 6 + qDim + qkvDim * (qkn ? 2 : 1) + 3 * f + (logits ? 2 * v : 0);
}

/**
 * One network's workspace for `lengths` (one forward/backward), in bytes. With `recompute`
 * (workspace.ts) the layers keep only their inputs (C floats per token each) and share one set of
 * the rest, probabilities included.
 */
export function workspaceBytes(
  cfg: ModelConfig,
  lengths: readonly number[],
  logits: boolean,
  recompute = false,
): number {
  const n = lengths.reduce((a, b) => a + b, 0);
  const maxLen = lengths.reduce((a, l) => Math.max(a, l), 1);
  const probs = cfg.nHeads * lengths.reduce((a, l) => a + l * l, 0); // per layer: H x l x l per sequence
  const layer = layerFloatsPerToken(cfg);
  const layers = recompute ? cfg.nLayers * cfg.dModel + layer - cfg.dModel : cfg.nLayers * layer;
  const floats =
    n * (layers + headFloatsPerToken(cfg, logits)) +
    (recompute ? 1 : cfg.nLayers) * probs +
    cfg.nHeads * maxLen * maxLen; // attention backward scratch
  return 4 * floats;
}

/**
 * The sampler's copy of the weight matrices (network.ts inferenceWeights): every layer matrix and
 * the output layer, 4 bytes per parameter in f32 and 2 in f16 / bf16 (with the native addon panels
 * pad N to a whole panel). Without the addon an f32 copy is not made: gemm reads W itself.
 */
export function packedCopyBytes(cfg: ModelConfig, precision: WeightPrecision): number {
  const native = nativeAddon;
  if (!native && precision === 'f32') return 0;
  const size = (n: number, k: number) => (native ? native.packedWeightSize(n, k) : n * k);
  const { dModel: c, mlpHidden: f, vocabSize: v } = cfg;
  const { qDim, qkvDim } = attentionShape(cfg);
  const layer = size(qkvDim, c) + size(c, qDim) + size(2 * f, c) + size(c, f);
  return (precision === 'f32' ? 4 : 2) * (cfg.nLayers * layer + size(v, c));
}

/** The sampler's KV cache for `slots` sequences of up to `context` tokens (sampler/kv-decoder.ts). */
export function kvCacheBytes(cfg: ModelConfig, slots: number, context: number): number {
  return 4 * 2 * cfg.nLayers * slots * context * attentionShape(cfg).kvDim;
}

/**
 * A policy trained through LoRA adapters (model/lora/lora-adapter.ts) holds, in storage 'merged',
 * its merged weights (4 bytes per parameter, no gradients or moments) and a frozen copy of the
 * adapted matrices; in storage 'base', the weights less every layer product in f32, the frozen copy
 * of every layer product, and one layer's products merged in f32 (lora/merged-layers.ts). Either
 * way the adapters with gradients and AdamW (16 bytes per adapter parameter).
 */
export interface LoraMemory {
  frozenBytes: number; // the frozen copy (lora/frozen-base.ts: 4 bytes per parameter, 2 for a bf16 base)
  adapterParams: number; // r (I + O) summed over the adapted matrices
  storage?: 'merged' | 'base' | undefined; // absent: 'merged'
}

/** Parameters in the layers' four products (q/k/v, o, gate/up, down), one layer. */
export function layerProductParams(cfg: ModelConfig): number {
  const { dModel: c, mlpHidden: f } = cfg;
  const { qDim, qkvDim } = attentionShape(cfg);
  return qkvDim * c + c * qDim + 3 * f * c;
}

/** What a LoRA policy holds (LoraMemory), in bytes, for a policy of `params` parameters. */
export function loraPolicyBytes(cfg: ModelConfig, params: number, lora: LoraMemory): number {
  const adapters = BYTES_PER_PARAM * lora.adapterParams + lora.frozenBytes;
  if (lora.storage !== 'base') return 4 * params + adapters;
  const products = layerProductParams(cfg);
  return 4 * (params - cfg.nLayers * products) + 4 * products + adapters;
}

export interface MemoryLine {
  what: string;
  bytes: number;
}

/**
 * One CompactionRL iteration's peak: policy and critic (the policy's first `criticLayers` layers;
 * null = no critic) with AdamW state, both workspaces for a minibatch of `lengths`, the sampler's
 * packed copy, and its KV cache when `sampler` is given.
 */
export function trainingMemoryPlan(o: {
  policy: ModelConfig;
  criticLayers: number | null;
  lengths: readonly number[];
  sampler?: { slots: number; context: number };
  /** Both networks recompute layer activations in the backward (workspace.ts). */
  recompute?: boolean;
  /** The policy trains LoRA adapters (model/lora/) instead of every weight. */
  lora?: LoraMemory | undefined;
  /** The critic's embedding table is not trained (critic.ts): its weights only, no grads or moments. */
  criticEmbedding?: 'trained' | 'frozen' | undefined;
}): { lines: MemoryLine[]; totalBytes: number } {
  const re = o.recompute ?? false;
  const params = (cfg: ModelConfig, head: HeadKind) => paramCount(tensorSpecs(cfg, head));
  const lines: MemoryLine[] = [
    o.lora
      ? {
          what:
            o.lora.storage === 'base'
              ? 'policy weights less layer products, frozen products, one merged layer, adapters with grads and AdamW'
              : 'policy merged weights, frozen copy, adapters with grads and AdamW',
          bytes: loraPolicyBytes(o.policy, params(o.policy, 'lm'), o.lora),
        }
      : { what: 'policy weights, grads, AdamW m, v', bytes: BYTES_PER_PARAM * params(o.policy, 'lm') },
    // The training loop's sampler picks its precision by size ('auto': bf16 from 100M parameters).
    {
      what: 'policy packed copy (sampler)',
      bytes: packedCopyBytes(o.policy, resolvePrecision('auto', params(o.policy, 'lm'))),
    },
    { what: 'policy activations', bytes: workspaceBytes(o.policy, o.lengths, true, re) },
  ];
  if (o.criticLayers !== null) {
    const ccfg = criticConfig(o.policy, o.criticLayers);
    lines.push(
      o.criticEmbedding === 'frozen'
        ? {
            what: `critic (${ccfg.nLayers} layers) weights, grads, AdamW m, v; embedding weights only`,
            bytes: BYTES_PER_PARAM * params(ccfg, 'value') - 12 * ccfg.vocabSize * ccfg.dModel,
          }
        : {
            what: `critic (${ccfg.nLayers} layers) weights, grads, AdamW m, v`,
            bytes: BYTES_PER_PARAM * params(ccfg, 'value'),
          },
      { what: 'critic activations', bytes: workspaceBytes(ccfg, o.lengths, false, re) },
    );
  }
  if (o.sampler)
    lines.push({ what: 'sampler KV cache', bytes: kvCacheBytes(o.policy, o.sampler.slots, o.sampler.context) });
  return { lines, totalBytes: lines.reduce((a, l) => a + l.bytes, 0) };
}

/**
 * Refuses (returns why) a training run whose plan, with minibatches of `minibatchTokens` in
 * sequences of up to `seqLen`, exceeds the machine's memory (os.totalmem): at 0.6B the defaults
 * need 60 GB, and a run that starts anyway is killed for memory mid-iteration, taking other work
 * on the machine with it. The sampler's KV cache is left out, so this errs toward starting.
 */
export function trainingMemoryProblem(o: {
  policy: ModelConfig;
  criticLayers: number | null;
  minibatchTokens: number;
  seqLen: number;
  recompute?: boolean;
  lora?: LoraMemory | undefined;
  criticEmbedding?: 'trained' | 'frozen' | undefined;
  totalBytes?: number;
}): string | null {
  const seq = Math.max(1, Math.min(o.seqLen, o.minibatchTokens));
  const lengths = Array.from({ length: Math.ceil(o.minibatchTokens / seq) }, (_, i) =>
    Math.min(seq, o.minibatchTokens - i * seq),
  );
  const plan = trainingMemoryPlan({
    policy: o.policy,
    criticLayers: o.criticLayers,
    lengths,
    ...(o.recompute ? { recompute: true } : {}),
    lora: o.lora,
    criticEmbedding: o.criticEmbedding,
  });
  const limit = o.totalBytes ?? totalmem();
  if (plan.totalBytes <= limit) return null;
  const gb = (b: number) => `${(b / 1e9).toFixed(1)} GB`;
  return (
    `training needs about ${gb(plan.totalBytes)} (${plan.lines.map((l) => `${l.what} ${gb(l.bytes)}`).join(', ')}), ` +
    `more than this machine's ${gb(limit)}; lower --minibatch-tokens (now ${o.minibatchTokens}) or --critic-layers` +
    `${o.recompute ? '' : ', or add --recompute'} ` +
    `(docs/engine-scale.md "Training memory")`
  );
}
