/**
 * The Llama decoder block, forward, written once for the three ways the model runs: training
 * (transformer.ts: every layer keeps its activations for the backward), prefix extension
 * (sampler/kv-extend.ts) and decode (sampler/kv-decoder.ts), which reuse one set of row buffers for every layer.
 * Only attention differs between them (packed causal sequences, new rows against a cached prefix,
 * one row per slot against its cache), so it comes in as a callback.
 *
 * Legend: N = rows, C = dModel, H = query heads, Hkv = key/value heads, D = head size,
 * Q3 = (H + 2 Hkv) D, F = mlpHidden (config.ts attentionShape).
 *   mid = x + o_proj(attn(rope(qn(q_proj(rms1(x)))), rope(kn(k_proj(..))), v_proj(..)))
 *   out = mid + down_proj(silu(gate_proj(rms2(mid))) * up_proj(rms2(mid)))
 * where qn / kn are Qwen3's per-head q_norm / k_norm (identity unless cfg.qkNorm) and query head h
 * attends with key/value head floor(h / (H / Hkv)). q/k/v_proj are one [Q3, C] weight and
 * gate/up_proj one [2F, C] (weights.ts), so the block is four products. transformer.ts's
 * trunkBackward is this function's adjoint, step for step.
 */
import { headRmsnormForward } from '../../tensor/head-rmsnorm.ts';
import { linearForward, type PreparedWeight } from '../../tensor/linear.ts';
import { rmsnormForward } from '../../tensor/rmsnorm.ts';
import { ropeForward } from '../../tensor/rope.ts';
import type { RopeTable } from '../../tensor/op-args.ts';
import { swigluForward } from '../../tensor/swiglu.ts';
import { attentionShape, type ModelConfig } from './config.ts';
import type { Profiler } from './profiler.ts';
import type { LayerViews } from './weights.ts';

/**
 * Where one block reads and writes. Training passes each layer's own buffers; inference passes
 * the same buffers for every layer with x, mid and out the same array (the residual stream is
 * updated in place; the results are identical, the copies are just skipped).
 */
export interface BlockBuffers {
  x: Float32Array; // [N, C] block input (residual stream)
  ln1: Float32Array; // [N, C]
  rstd1: Float32Array; // [N]
  /** [N, Q3] q | k | v before q/k norm (qkNorm training only; null: normalized in place). */
  qkvRaw: Float32Array | null;
  qkRstd: Float32Array; // [N, H + Hkv] per-head rstd of q/k norm (qkNorm only)
  qkv: Float32Array; // [N, Q3] post-norm, post-RoPE q | k | v
  att: Float32Array; // [N, H D] attention output, before o_proj
  mid: Float32Array; // [N, C] x + attention (may be x itself)
  ln2: Float32Array; // [N, C]
  rstd2: Float32Array; // [N]
  gateUp: Float32Array; // [N, 2F]
  act: Float32Array; // [N, F]
  sig: Float32Array; // [N, F] sigmoid(gate), for the backward
  out: Float32Array; // [N, C] block output (may be mid itself)
}

/** One layer's four projection weights prepared once (LlamaNetwork.inferenceWeights; inference). */
export interface PackedLayer {
  qkv: PreparedWeight | null;
  o: PreparedWeight | null;
  gateUp: PreparedWeight | null;
  down: PreparedWeight | null;
}

/** Fills att [N, H D] from qkv [N, Q3] (q and k already normed and rotated); may also write a KV cache. */
export type AttendFn = (qkv: Float32Array, att: Float32Array) => void;

export interface BlockForwardArgs {
  cfg: ModelConfig;
  lw: LayerViews;
  n: number;
  positions: Int32Array; // [N] RoPE position of each row
  rope: RopeTable;
  buf: BlockBuffers;
  attend: AttendFn;
  /** The layer's weights prepared once (f32 packed: same results; or 16-bit); null / absent: f32, packed per call. */
  packed?: PackedLayer | null | undefined;
  prof?: Profiler | undefined;
  /** Profiler label prefix ('' for training, 'decode-' / 'prefill-' for the sampler). */
  label?: string;
}

export function blockForward(a: BlockForwardArgs): void {
  const { cfg, lw, n, positions, rope, buf, attend, prof } = a;
  const pw = a.packed;
  const { dModel: c, mlpHidden: f, normEps: eps } = cfg;
  const { h, hkv, d, qDim, qkvDim } = attentionShape(cfg);
  const label = a.label ?? '';
  let t = prof ? prof.now() : 0;
  rmsnormForward({ out: buf.ln1, rstd: buf.rstd1, inp: buf.x, weight: lw.ln1, n, c, eps });
  if (prof) t = prof.lap(`${label}rmsnorm`, t);
  const raw = cfg.qkNorm && buf.qkvRaw ? buf.qkvRaw : buf.qkv;
  linearForward({ out: raw, inp: buf.ln1, weight: lw.qkv, n, inF: c, outF: qkvDim, packed: pw?.qkv });
  if (prof) t = prof.lap(`${label}linear-qkv`, t);
  if (cfg.qkNorm) {
    headRmsnormForward({
      out: buf.qkv,
      rstd: buf.qkRstd,
      inp: raw,
      qWeight: lw.qNorm!,
      kWeight: lw.kNorm!,
      n,
      h,
      hkv,
      d,
      eps,
    });
    if (prof) t = prof.lap(`${label}rmsnorm`, t);
  }
  // q and k heads are adjacent in each row, so they rotate together as H + Hkv heads.
  ropeForward({ x: buf.qkv, n, nHeads: h + hkv, rowStride: qkvDim, offset: 0, positions, table: rope });
  if (prof) t = prof.lap(`${label}rope`, t);
  attend(buf.qkv, buf.att);
  if (prof) t = prof.lap(`${label}attention`, t);
  if (buf.mid !== buf.x) buf.mid.set(buf.x.subarray(0, n * c));
  linearForward({ out: buf.mid, inp: buf.att, weight: lw.o, n, inF: qDim, outF: c, accumulate: true, packed: pw?.o });
  if (prof) t = prof.lap(`${label}linear-o`, t);
  rmsnormForward({ out: buf.ln2, rstd: buf.rstd2, inp: buf.mid, weight: lw.ln2, n, c, eps });
  if (prof) t = prof.lap(`${label}rmsnorm`, t);
  linearForward({ out: buf.gateUp, inp: buf.ln2, weight: lw.gateUp, n, inF: c, outF: 2 * f, packed: pw?.gateUp });
  if (prof) t = prof.lap(`${label}linear-gate-up`, t);
  swigluForward({ out: buf.act, sig: buf.sig, inp: buf.gateUp, n, f });
  if (prof) t = prof.lap(`${label}swiglu`, t);
  if (buf.out !== buf.mid) buf.out.set(buf.mid.subarray(0, n * c));
  linearForward({
    out: buf.out,
    inp: buf.act,
    weight: lw.down,
    n,
    inF: f,
    outF: c,
    accumulate: true,
    packed: pw?.down,
  });
  if (prof) prof.lap(`${label}linear-down`, t);
}

/** Row buffers for inference: one set, reused by every layer, grown on demand. */
export class InferenceBuffers implements BlockBuffers {
  capacity = 0;
  x = new Float32Array(0); // [N, C] residual stream (x, mid and out of every layer)
  ln1 = new Float32Array(0); // [N, C] (also the final norm's output)
  rstd1 = new Float32Array(0); // [N]
  readonly qkvRaw = null; // q/k norm runs in place
  qkRstd = new Float32Array(0); // [N, H + Hkv]
  qkv = new Float32Array(0); // [N, Q3]
  att = new Float32Array(0); // [N, H D]
  gateUp = new Float32Array(0); // [N, 2F]
  act = new Float32Array(0); // [N, F]
  sig = new Float32Array(0); // [N, F]
  get mid(): Float32Array {
    return this.x;
  }
  get out(): Float32Array {
    return this.x;
  }
  get ln2(): Float32Array {
    return this.ln1;
  }
  get rstd2(): Float32Array {
    return this.rstd1;
  }

  /** Grows every buffer to hold n rows (contents are not kept). */
  ensure({ n, cfg }: { n: number; cfg: ModelConfig }): void {
    if (n <= this.capacity) return;
    const { dModel: c, mlpHidden: f } = cfg;
    const { h, hkv, qDim, qkvDim } = attentionShape(cfg);
    this.capacity = n;
    this.x = new Float32Array(n * c);
    this.ln1 = new Float32Array(n * c);
    this.rstd1 = new Float32Array(n);
    this.qkRstd = new Float32Array(cfg.qkNorm ? n * (h + hkv) : 0);
    this.qkv = new Float32Array(n * qkvDim);
    this.att = new Float32Array(n * qDim);
    this.gateUp = new Float32Array(n * 2 * f);
    this.act = new Float32Array(n * f);
    this.sig = new Float32Array(n * f);
  }
}
