/**
 * A deliberately naive float64 forward of the same network, one sequence at a time, written
 * independently of the engine's kernels: the oracle for whole-model tests (values and, through
 * finite differences, gradients). Test use only; O(T^2 C) loops, no GEMM.
 * T = sequence length, C = dModel, H = query heads, Hkv = key/value heads, D = head dim,
 * F = mlpHidden, V = vocab.
 */
import { headDim, kvHeads, type ModelConfig } from './config.ts';
import type { HeadKind, TensorSpec } from './weights.ts';

type Get = (name: string) => Float64Array;

function getter(params: Float64Array, specs: readonly TensorSpec[]): Get {
  const byName = new Map(specs.map((s) => [s.name, s]));
  return (name) => {
    const s = byName.get(name);
    if (!s) throw new Error(`reference: no tensor ${name}`);
    return params.subarray(s.offset, s.offset + s.size);
  };
}

function rms(x: Float64Array, w: Float64Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const s = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * s * w[i]!);
}

/** Qwen3's q_norm / k_norm: rms over each head of d values, one shared weight. */
function headRms(x: Float64Array, d: number, w: Float64Array, eps: number): Float64Array {
  const out = new Float64Array(x.length);
  for (let o = 0; o < x.length; o += d) out.set(rms(x.subarray(o, o + d), w, eps), o);
  return out;
}

/** y = W x with W stored [out, in]. */
function matvec(w: Float64Array, x: Float64Array, out: number): Float64Array {
  const inF = x.length;
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = 0;
    for (let i = 0; i < inF; i++) s += w[o * inF + i]! * x[i]!;
    y[o] = s;
  }
  return y;
}

function rope(v: Float64Array, pos: number, nHeads: number, theta: number): void {
  const d = v.length / nHeads;
  const half = d / 2;
  for (let h = 0; h < nHeads; h++) {
    for (let i = 0; i < half; i++) {
      const ang = pos * Math.pow(theta, (-2 * i) / d);
      const a = v[h * d + i]!;
      const b = v[h * d + half + i]!;
      v[h * d + i] = a * Math.cos(ang) - b * Math.sin(ang);
      v[h * d + half + i] = b * Math.cos(ang) + a * Math.sin(ang);
    }
  }
}

/** Final hidden states [T][C] after model.norm. */
export function referenceTrunk({
  cfg,
  specs,
  params,
  tokens,
}: {
  cfg: ModelConfig;
  specs: readonly TensorSpec[];
  params: Float64Array;
  tokens: ArrayLike<number>;
}): Float64Array[] {
  const get = getter(params, specs);
  const { dModel: c, nHeads: h, mlpHidden: f } = cfg;
  const d = headDim(cfg);
  const hkv = kvHeads(cfg);
  const emb = get('model.embed_tokens.weight');
  let xs = Array.from({ length: tokens.length }, (_, t) => emb.slice(tokens[t]! * c, tokens[t]! * c + c));
  for (let l = 0; l < cfg.nLayers; l++) {
    const p = `model.layers.${l}.`;
    const ln = xs.map((x) => rms(x, get(`${p}input_layernorm.weight`), cfg.normEps));
    const project = (name: string, heads: number, norm: string | null) =>
      ln.map((x, t) => {
        let v = matvec(get(`${p}self_attn.${name}.weight`), x, heads * d);
        if (norm) v = headRms(v, d, get(`${p}self_attn.${norm}.weight`), cfg.normEps);
        rope(v, t, heads, cfg.ropeTheta);
        return v;
      });
    const q = project('q_proj', h, cfg.qkNorm ? 'q_norm' : null);
    const k = project('k_proj', hkv, cfg.qkNorm ? 'k_norm' : null);
    const v = ln.map((x) => matvec(get(`${p}self_attn.v_proj.weight`), x, hkv * d));
    const att = xs.map(() => new Float64Array(h * d));
    for (let hh = 0; hh < h; hh++) {
      const kv = Math.floor(hh / (h / hkv)); // grouped-query attention: H / Hkv query heads per kv head
      for (let i = 0; i < xs.length; i++) {
        const s: number[] = [];
        for (let j = 0; j <= i; j++) {
          let dot = 0;
          for (let e = 0; e < d; e++) dot += q[i]![hh * d + e]! * k[j]![kv * d + e]!;
          s.push(dot / Math.sqrt(d));
        }
        const mx = Math.max(...s);
        const ex = s.map((z) => Math.exp(z - mx));
        const zsum = ex.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= i; j++)
          for (let e = 0; e < d; e++) att[i]![hh * d + e]! += (ex[j]! / zsum) * v[j]![kv * d + e]!;
      }
    }
    const mid = xs.map((x, t) => {
      const o = matvec(get(`${p}self_attn.o_proj.weight`), att[t]!, c);
      return x.map((a, i) => a + o[i]!);
    });
    xs = mid.map((x) => {
      const n2 = rms(x, get(`${p}post_attention_layernorm.weight`), cfg.normEps);
      const gate = matvec(get(`${p}mlp.gate_proj.weight`), n2, f);
      const up = matvec(get(`${p}mlp.up_proj.weight`), n2, f);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]!);
      const down = matvec(get(`${p}mlp.down_proj.weight`), act, c);
      return x.map((a, i) => a + down[i]!);
    });
  }
  return xs.map((x) => rms(x, get('model.norm.weight'), cfg.normEps));
}

/** Per-sequence outputs in the trainable.ts position convention. */
export function referenceHeads({
  cfg,
  specs,
  params,
  tokens,
  head,
}: {
  cfg: ModelConfig;
  specs: readonly TensorSpec[];
  params: Float64Array;
  tokens: ArrayLike<number>;
  head: HeadKind;
}): { logprobs: Float64Array; entropies: Float64Array; values: Float64Array; logits: Float64Array[] } {
  const get = getter(params, specs);
  const hs = referenceTrunk({ cfg, specs, params, tokens });
  const n = tokens.length;
  const logprobs = new Float64Array(n);
  const entropies = new Float64Array(n);
  const values = new Float64Array(n);
  const logits: Float64Array[] = [];
  for (let t = 0; t < n; t++) {
    if (head === 'lm') {
      const w = cfg.tiedEmbeddings ? get('model.embed_tokens.weight') : get('lm_head.weight');
      const z = matvec(w, hs[t]!, cfg.vocabSize);
      logits.push(z);
      if (t + 1 < n) {
        const mx = Math.max(...z);
        const lse = mx + Math.log(z.reduce((a, b) => a + Math.exp(b - mx), 0));
        logprobs[t + 1] = z[tokens[t + 1]!]! - lse;
        entropies[t + 1] = -z.reduce((a, b) => a + Math.exp(b - lse) * (b - lse), 0);
      }
    } else if (t + 1 < n) {
      const sw = get('score.weight');
      let s = get('score.bias')[0]!;
      for (let i = 0; i < cfg.dModel; i++) s += sw[i]! * hs[t]![i]!;
      values[t + 1] = s;
    }
  }
  return { logprobs, entropies, values, logits };
}
