/**
 * The sampler's copy of a network's weight matrices (the four projections of every layer and the
 * LM head), in the precision it samples with (weight-precision.ts): f32 packed once for the
 * native GEMM (packed-weight.ts), or f16 / bf16 (half-weight.ts). Made from the f32 master weights
 * and remade when they change (LlamaNetwork.inferenceWeights keys it by the weight version).
 * Embedding rows are still gathered from the f32 weights: a step reads one row per token, not the
 * table, so halving it would save no bandwidth.
 */
import { halfWeight, type HalfWeight } from '../../tensor/half-weight.ts';
import type { PreparedWeight } from '../../tensor/linear.ts';
import { packWeight } from '../../tensor/packed-weight.ts';
import { attentionShape, type ModelConfig } from './config.ts';
import type { PackedLayer } from './llama-block.ts';
import { WeightPrecisionError, type WeightPrecision } from './weight-precision.ts';
import type { LayerViews, WeightViews } from './weights.ts';

/** A network's matrices prepared for inference, valid while `version` is the network's. */
export interface InferenceWeights {
  version: number;
  precision: WeightPrecision;
  layers: PackedLayer[];
  lmHead: PreparedWeight | null;
}

type Prepare = (o: {
  what: string;
  weight: Float32Array;
  n: number;
  k: number;
  into: PreparedWeight | null | undefined;
}) => PreparedWeight | null;

// One preparation per precision (a registry: a new precision is a new entry).
const PREPARE: Record<WeightPrecision, Prepare> = {
  f32: ({ weight, n, k, into }) => packWeight({ weight, n, k, into: into && !('format' in into) ? into : null }),
  f16: ({ what, weight, n, k, into }) => {
    checkF16Range(what, weight.subarray(0, n * k));
    return halfWeight({ weight, n, k, format: 'f16', into: asHalf(into) });
  },
  bf16: ({ weight, n, k, into }) => halfWeight({ weight, n, k, format: 'bf16', into: asHalf(into) }),
};

/** Beyond f16's largest value a weight would become infinite: refused, naming the way out. */
function checkF16Range(what: string, w: Float32Array): void {
  for (let i = 0; i < w.length; i++) {
    if (Math.abs(w[i]!) > F16_MAX)
      throw new WeightPrecisionError(
        `${what} holds ${w[i]}, beyond f16's largest value ${F16_MAX}: sample with bf16 (f32's range) or f32 weights`,
      );
  }
}

const F16_MAX = 65504;

function asHalf(w: PreparedWeight | null | undefined): HalfWeight | null {
  return w && 'format' in w ? w : null;
}

/**
 * Prepares every matrix of `w` in `precision`, reusing `old`'s buffers where the shapes match;
 * null when there is nothing to prepare (f32 without the native addon: gemm reads W itself).
 */
export function prepareInferenceWeights(o: {
  cfg: ModelConfig;
  w: WeightViews;
  precision: WeightPrecision;
  version: number;
  old: InferenceWeights | null;
  /** Layer l's weights from here instead of w.layers[l] (network.ts layerSource). */
  layers?: ((l: number) => LayerViews) | null | undefined;
}): InferenceWeights | null {
  const { cfg, w, precision, version } = o;
  const { dModel: c, mlpHidden: f, vocabSize: v } = cfg;
  const { qDim, qkvDim } = attentionShape(cfg);
  const prepare = PREPARE[precision];
  const old = o.old?.precision === precision ? o.old : null;
  const layers = w.layers.map((held, l) => {
    const lw = o.layers?.(l) ?? held;
    const prev = old?.layers[l];
    return {
      qkv: prepare({ what: `layer ${l} q/k/v`, weight: lw.qkv, n: qkvDim, k: c, into: prev?.qkv }),
      o: prepare({ what: `layer ${l} o_proj`, weight: lw.o, n: c, k: qDim, into: prev?.o }),
      gateUp: prepare({ what: `layer ${l} gate/up`, weight: lw.gateUp, n: 2 * f, k: c, into: prev?.gateUp }),
      down: prepare({ what: `layer ${l} down_proj`, weight: lw.down, n: c, k: f, into: prev?.down }),
    };
  });
  if (layers[0] && !layers[0].qkv) return null;
  const lmHead = w.lmHead ? prepare({ what: 'the LM head', weight: w.lmHead, n: v, k: c, into: old?.lmHead }) : null;
  return { version, precision, layers, lmHead };
}
