/**
 * The Llama trunk for training, llm.c style: explicit forward and backward over flat buffers.
 *
 * Legend: N = packed tokens (all sequences end to end), C = dModel, H = heads, D = C / H,
 * F = mlpHidden, L = layers. The forward is embedding -> L x blockForward (llama-block.ts, the one
 * definition of the block, here with each layer's activations kept) -> model.norm into ws.lnf.
 * trunkBackward is its adjoint. Backward functions ADD into parameter gradients; heads
 * (policy.ts, critic.ts) seed ws.dlnf.
 */
import { attentionBackward, attentionForward } from '../../tensor/attention.ts';
import { embeddingBackward, embeddingForward } from '../../tensor/embedding.ts';
import { linearBackward } from '../../tensor/linear.ts';
import { rmsnormBackward, rmsnormForward } from '../../tensor/rmsnorm.ts';
import { ropeBackward } from '../../tensor/rope.ts';
import type { RopeTable } from '../../tensor/op-args.ts';
import { swigluBackward } from '../../tensor/swiglu.ts';
import { headRmsnormBackward } from '../../tensor/head-rmsnorm.ts';
import { attentionShape, headDim, kvHeads, type ModelConfig } from './config.ts';
import { blockForward } from './llama-block.ts';
import type { PackedBatch } from './pack.ts';
import type { Profiler } from './profiler.ts';
import type { LayerViews, WeightViews } from './weights.ts';
import type { Workspace } from './workspace.ts';

/** One of a layer's four products, in llama-block.ts's order (q/k/v and gate/up fused). */
export type LayerMatrix = 'qkv' | 'o' | 'gateUp' | 'down';

/**
 * Takes the place of a layer matrix's weight gradient dW = dout^T inp (LoRA adapters, model/lora/):
 * called with the product's output gradient [N, O] and input [N, I]. Given, the base is frozen:
 * no matrix or embedding gradient is formed (the norms' go where `g` says).
 */
export type WeightGradHook = (o: {
  layer: number;
  matrix: LayerMatrix;
  dout: Float32Array;
  inp: Float32Array;
  n: number;
}) => void;

/**
 * Layer l's weights when the network does not hold its products itself (LoRA on a bf16 base,
 * lora/merged-layers.ts): the views it returns stay valid until the next call for another layer.
 */
export type LayerSource = (layer: number) => LayerViews;

export interface TrunkArgs {
  cfg: ModelConfig;
  w: WeightViews;
  /** Where layer l's weights come from instead of w.layers[l]; absent or null: w.layers. */
  layers?: LayerSource | null | undefined;
  ws: Workspace;
  batch: PackedBatch;
  rope: RopeTable;
  prof?: Profiler | undefined;
}

export function trunkForward(args: TrunkArgs): void {
  const { cfg, w, ws, batch, prof } = args;
  const { n } = batch;
  const { dModel: c, normEps: eps } = cfg;
  let t = prof ? prof.now() : 0;
  embeddingForward({ out: ws.resid[0]!, tokens: batch.tokens, weight: w.embed, n, c });
  if (prof) prof.lap('embedding', t);
  for (let l = 0; l < cfg.nLayers; l++) layerForward(args, l);
  t = prof ? prof.now() : 0;
  rmsnormForward({ out: ws.lnf, rstd: ws.rstdf, inp: ws.resid[cfg.nLayers]!, weight: w.norm, n, c, eps });
  if (prof) prof.lap('rmsnorm', t);
}

/** Layer l's forward into its workspace buffers (the shared ones under ws.recompute). */
function layerForward({ cfg, w, ws, batch, rope, prof, layers }: TrunkArgs, l: number): void {
  const heads = { nHeads: cfg.nHeads, headDim: headDim(cfg), nKvHeads: kvHeads(cfg) };
  const probs = ws.probs[l]!;
  blockForward({
    cfg,
    lw: layers?.(l) ?? w.layers[l]!,
    n: batch.n,
    positions: batch.positions,
    rope,
    buf: ws.layer(l),
    attend: (qkv, att) => attentionForward({ out: att, probs, qkv, layout: batch.layout, ...heads }),
    prof,
  });
}

/** Backward from ws.dlnf (dLoss/d trunk output, [N, C]) into the gradient views g. */
export function trunkBackward(
  args: TrunkArgs & { g: WeightViews; weightGrad?: WeightGradHook | null; frozenEmbedding?: boolean },
): void {
  const { cfg, w, g, ws, batch, rope, prof } = args;
  const hook = args.weightGrad ?? null;
  const { n } = batch;
  const { dModel: c, mlpHidden: f } = cfg;
  const { h, hkv, d, qDim, qkvDim } = attentionShape(cfg);
  const dres = ws.dres;
  let t = prof ? prof.now() : 0;
  dres.fill(0, 0, n * c);
  rmsnormBackward({
    dinp: dres,
    dweight: g.norm,
    dout: ws.dlnf,
    inp: ws.resid[cfg.nLayers]!,
    weight: w.norm,
    rstd: ws.rstdf,
    n,
    c,
  });
  if (prof) t = prof.lap('rmsnorm', t);
  for (let l = cfg.nLayers - 1; l >= 0; l--) {
    // The layer's activations again, from its kept input (rewrites resid[l + 1] with the same floats).
    if (ws.recompute) {
      layerForward(args, l);
      if (prof) t = prof.now();
    }
    const lw = args.layers?.(l) ?? w.layers[l]!;
    const lg = g.layers[l]!;
    // MLP: dres holds d(out); the residual passes it to d(mid) unchanged.
    ws.dact.fill(0, 0, n * f);
    linearBackward({
      dinp: ws.dact,
      dweight: hook ? null : lg.down,
      dout: dres,
      inp: ws.act[l]!,
      weight: lw.down,
      n,
      inF: f,
      outF: c,
    });
    hook?.({ layer: l, matrix: 'down', dout: dres, inp: ws.act[l]!, n });
    if (prof) t = prof.lap('linear', t);
    ws.dgateUp.fill(0, 0, n * 2 * f);
    swigluBackward({ dinp: ws.dgateUp, dout: ws.dact, inp: ws.gateUp[l]!, sig: ws.sig[l]!, n, f });
    if (prof) t = prof.lap('swiglu', t);
    ws.dln.fill(0, 0, n * c);
    linearBackward({
      dinp: ws.dln,
      dweight: hook ? null : lg.gateUp,
      dout: ws.dgateUp,
      inp: ws.ln2[l]!,
      weight: lw.gateUp,
      n,
      inF: c,
      outF: 2 * f,
    });
    hook?.({ layer: l, matrix: 'gateUp', dout: ws.dgateUp, inp: ws.ln2[l]!, n });
    if (prof) t = prof.lap('linear', t);
    rmsnormBackward({
      dinp: dres,
      dweight: lg.ln2,
      dout: ws.dln,
      inp: ws.mid[l]!,
      weight: lw.ln2,
      rstd: ws.rstd2[l]!,
      n,
      c,
    });
    if (prof) t = prof.lap('rmsnorm', t);
    // Attention: dres now holds d(mid).
    ws.datt.fill(0, 0, n * qDim);
    const o = { dout: dres, inp: ws.att[l]! };
    linearBackward({ dinp: ws.datt, dweight: hook ? null : lg.o, ...o, weight: lw.o, n, inF: qDim, outF: c });
    hook?.({ layer: l, matrix: 'o', ...o, n });
    if (prof) t = prof.lap('linear', t);
    ws.dqkv.fill(0, 0, n * qkvDim);
    attentionBackward({
      dqkv: ws.dqkv,
      dout: ws.datt,
      qkv: ws.qkv[l]!,
      probs: ws.probs[l]!,
      scratch: ws.attScratch,
      layout: batch.layout,
      nHeads: h,
      headDim: d,
      nKvHeads: hkv,
    });
    if (prof) t = prof.lap('attention', t);
    ropeBackward({
      x: ws.dqkv,
      n,
      nHeads: h + hkv,
      rowStride: qkvDim,
      offset: 0,
      positions: batch.positions,
      table: rope,
    });
    if (prof) t = prof.lap('rope', t);
    let dqkv = ws.dqkv;
    if (cfg.qkNorm) {
      ws.dqkvRaw.fill(0, 0, n * qkvDim);
      headRmsnormBackward({
        dinp: ws.dqkvRaw,
        dqWeight: lg.qNorm!,
        dkWeight: lg.kNorm!,
        dout: ws.dqkv,
        inp: ws.qkvRaw[l]!,
        qWeight: lw.qNorm!,
        kWeight: lw.kNorm!,
        rstd: ws.qkRstd[l]!,
        n,
        h,
        hkv,
        d,
      });
      dqkv = ws.dqkvRaw;
      if (prof) t = prof.lap('rmsnorm', t);
    }
    ws.dln.fill(0, 0, n * c);
    linearBackward({
      dinp: ws.dln,
      dweight: hook ? null : lg.qkv,
      dout: dqkv,
      inp: ws.ln1[l]!,
      weight: lw.qkv,
      n,
      inF: c,
      outF: qkvDim,
    });
    hook?.({ layer: l, matrix: 'qkv', dout: dqkv, inp: ws.ln1[l]!, n });
    if (prof) t = prof.lap('linear', t);
    rmsnormBackward({
      dinp: dres,
      dweight: lg.ln1,
      dout: ws.dln,
      inp: ws.resid[l]!,
      weight: lw.ln1,
      rstd: ws.rstd1[l]!,
      n,
      c,
    });
    if (prof) t = prof.lap('rmsnorm', t);
  }
  // A frozen base (hook set) or a frozen embedding forms no embedding gradient.
  if (!hook && !args.frozenEmbedding) embeddingBackward({ dweight: g.embed, dout: dres, tokens: batch.tokens, n, c });
  if (prof) prof.lap('embedding', t);
}
