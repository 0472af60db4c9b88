import type { Rng } from '../../util/random.ts';
import { attentionShape, type ModelConfig } from './config.ts';

/**
 * Parameter layout: every tensor lives in one flat Float32Array (and its gradient in a twin), so
 * the optimizer, clipping and checkpoints are single loops. Names follow Hugging Face
 * LlamaForCausalLM (and Qwen3's q_norm / k_norm). q/k/v_proj are stored adjacently, as are
 * gate/up_proj, so each group is one [Q3, C] or [2F, C] matrix and costs one GEMM.
 * V = vocab, C = dModel, F = mlpHidden, L = layers, H = query heads, Hkv = key/value heads,
 * D = head size, Q3 = (H + 2 Hkv) D (config.ts attentionShape).
 */
export type HeadKind = 'lm' | 'value';

export interface TensorSpec {
  name: string;
  shape: number[];
  offset: number;
  size: number;
  /** AdamW weight decay applies (matrices, embeddings; not norms or biases). */
  decay: boolean;
}

export interface LayerViews {
  ln1: Float32Array; // [C] input_layernorm
  qkv: Float32Array; // [Q3, C] q_proj [H D, C] | k_proj [Hkv D, C] | v_proj [Hkv D, C]
  qNorm: Float32Array | null; // [D] self_attn.q_norm (qkNorm models only)
  kNorm: Float32Array | null; // [D] self_attn.k_norm
  o: Float32Array; // [C, H D] o_proj
  ln2: Float32Array; // [C] post_attention_layernorm
  gateUp: Float32Array; // [2F, C] gate_proj | up_proj
  down: Float32Array; // [C, F] down_proj
}

export interface WeightViews {
  embed: Float32Array; // [V, C]
  layers: LayerViews[];
  norm: Float32Array; // [C]
  lmHead: Float32Array | null; // [V, C] (the embed view itself when tied); 'lm' head only
  score: Float32Array | null; // [1, C] value head; 'value' head only
  scoreBias: Float32Array | null; // [1]
}

export function tensorSpecs(cfg: ModelConfig, head: HeadKind): TensorSpec[] {
  const { vocabSize: v, dModel: c, mlpHidden: f } = cfg;
  const { d, qDim, kvDim } = attentionShape(cfg);
  const specs: TensorSpec[] = [];
  let offset = 0;
  const add = (name: string, shape: number[], decay: boolean) => {
    const size = shape.reduce((a, b) => a * b, 1);
    specs.push({ name, shape, offset, size, decay });
    offset += size;
  };
  add('model.embed_tokens.weight', [v, c], true);
  for (let l = 0; l < cfg.nLayers; l++) {
    const p = `model.layers.${l}.`;
    add(`${p}input_layernorm.weight`, [c], false);
    add(`${p}self_attn.q_proj.weight`, [qDim, c], true);
    add(`${p}self_attn.k_proj.weight`, [kvDim, c], true);
    add(`${p}self_attn.v_proj.weight`, [kvDim, c], true);
    if (cfg.qkNorm) {
      add(`${p}self_attn.q_norm.weight`, [d], false);
      add(`${p}self_attn.k_norm.weight`, [d], false);
    }
    add(`${p}self_attn.o_proj.weight`, [c, qDim], true);
    add(`${p}post_attention_layernorm.weight`, [c], false);
    add(`${p}mlp.gate_proj.weight`, [f, c], true);
    add(`${p}mlp.up_proj.weight`, [f, c], true);
    add(`${p}mlp.down_proj.weight`, [c, f], true);
  }
  add('model.norm.weight', [c], false);
  if (head === 'lm' && !cfg.tiedEmbeddings) add('lm_head.weight', [v, c], true);
  if (head === 'value') {
    add('score.weight', [1, c], true);
    add('score.bias', [1], false);
  }
  return specs;
}

export function paramCount(specs: readonly TensorSpec[]): number {
  return specs.reduce((a, s) => a + s.size, 0);
}

/** Typed views of a flat buffer (parameters or gradients) under a layout. */
export function weightViews({
  buf,
  specs,
  cfg,
  head,
}: {
  buf: Float32Array;
  specs: readonly TensorSpec[];
  cfg: ModelConfig;
  head: HeadKind;
}): WeightViews {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const view = (name: string) => {
    const s = byName.get(name)!;
    return buf.subarray(s.offset, s.offset + s.size);
  };
  const span = (first: string, last: string) => {
    const a = byName.get(first)!;
    const b = byName.get(last)!;
    return buf.subarray(a.offset, b.offset + b.size);
  };
  const layers: LayerViews[] = [];
  for (let l = 0; l < cfg.nLayers; l++) {
    const p = `model.layers.${l}.`;
    layers.push({
      ln1: view(`${p}input_layernorm.weight`),
      qkv: span(`${p}self_attn.q_proj.weight`, `${p}self_attn.v_proj.weight`),
      qNorm: cfg.qkNorm ? view(`${p}self_attn.q_norm.weight`) : null,
      kNorm: cfg.qkNorm ? view(`${p}self_attn.k_norm.weight`) : null,
      o: view(`${p}self_attn.o_proj.weight`),
      ln2: view(`${p}post_attention_layernorm.weight`),
      gateUp: span(`${p}mlp.gate_proj.weight`, `${p}mlp.up_proj.weight`),
      down: view(`${p}mlp.down_proj.weight`),
    });
  }
  const embed = view('model.embed_tokens.weight');
  return {
    embed,
    layers,
    norm: view('model.norm.weight'),
    lmHead: head === 'lm' ? (cfg.tiedEmbeddings ? embed : view('lm_head.weight')) : null,
    score: head === 'value' ? view('score.weight') : null,
    scoreBias: head === 'value' ? view('score.bias') : null,
  };
}

/**
 * GPT-2/Llama-style init: N(0, 0.02) for matrices and embeddings, residual-output projections
 * (o_proj, down_proj) scaled by 1/sqrt(2L) so the residual stream's variance stays O(1) with
 * depth, norms at 1, the value head at 0 (the critic starts by predicting 0 everywhere).
 */
export function initWeights({
  buf,
  specs,
  cfg,
  rng,
}: {
  buf: Float32Array;
  specs: readonly TensorSpec[];
  cfg: ModelConfig;
  rng: Rng;
}): void {
  const resid = 0.02 / Math.sqrt(2 * cfg.nLayers);
  for (const s of specs) {
    const t = buf.subarray(s.offset, s.offset + s.size);
    if (s.name.endsWith('norm.weight')) t.fill(1);
    else if (s.name.startsWith('score.')) t.fill(0);
    else {
      const std = s.name.endsWith('o_proj.weight') || s.name.endsWith('down_proj.weight') ? resid : 0.02;
      for (let i = 0; i < t.length; i++) t[i] = rng.normal() * std;
    }
  }
}
