import type { LoraAdapter } from '../../model/lora/lora-adapter.ts';
import type { LlamaNetwork } from '../../model/network/network.ts';
import { bytes } from './torch-wire.ts';

/**
 * A policy trained through LoRA adapters on the trainer protocol (docs/torch-trainer.md, "LoRA"):
 * the network's tensor list with a `lora` section (rank, alpha, the adapted matrices in the
 * adapter's order, the adapters' AdamW settings and step), and as buffers the frozen base, then
 * A/B and both AdamW moments in the adapter's flat layout (lora-adapter.ts: matrix by matrix, A
 * then B). crl draws A (and keeps B at 0 at a start), so both trainers begin from the same
 * adapters; pull answers the same three adapter buffers, which crl merges onto its own base.
 */

/**
 * The policy's header entry and buffers: its tensor list with the `lora` section (no AdamW of the
 * base, which is frozen: the policy's own moments are never made), then the network's parameters
 * and the adapters' A/B, m and v (views). The parameters must hold the base W0 when they are
 * sent: the caller sends inside lora.withBaseWeights, not the merged weights.
 */
export function loraPolicyPayload(
  net: LlamaNetwork,
  lora: LoraAdapter,
): { spec: Record<string, unknown>; buffers: Uint8Array[] } {
  const { rank, alpha, targets } = lora.settings;
  const { m, v, step } = lora.optimizer.state;
  return {
    spec: {
      tensors: net.specs.map((s) => ({ name: s.name, shape: s.shape, decay: s.decay })),
      lora: {
        rank,
        alpha,
        targets,
        matrices: lora.matrices.map((x) => ({ module: x.module, out: x.out, in: x.in })),
        optim: lora.optimizer.cfg,
        step,
      },
    },
    buffers: [bytes(net.params), bytes(lora.params), bytes(m), bytes(v)],
  };
}

/**
 * A pull's buffers (A/B[, m, v]) into the adapter, then the merge, so the network holds
 * W0 + s B A for the sampler and checkpoints as after an embedded step. False: they do not fit.
 */
export function applyLoraPull(lora: LoraAdapter, bufs: readonly Float32Array[], step: number): boolean {
  const want = lora.params.length;
  if (bufs.some((b) => b.length !== want)) return false;
  lora.params.set(bufs[0]!);
  if (bufs.length === 3) {
    lora.optimizer.state.m.set(bufs[1]!);
    lora.optimizer.state.v.set(bufs[2]!);
    lora.optimizer.state.step = step;
  }
  lora.merge();
  return true;
}
