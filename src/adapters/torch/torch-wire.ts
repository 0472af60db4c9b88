import type { LlamaNetwork } from '../../model/network/network.ts';

/**
 * The trainer protocol's tensors as bytes (docs/torch-trainer.md, "Protocol"): a network goes over
 * as its tensor list (names, shapes, decay) with its weights and both AdamW moments as three flat
 * float32 buffers, so the trainer starts from the embedded optimizer's exact state; batches go
 * over concatenated, with their lengths in the header.
 */
/** The network's tensor list and optimizer settings, for the request header. */
export function netSpec(net: LlamaNetwork): Record<string, unknown> {
  return {
    tensors: net.specs.map((s) => ({ name: s.name, shape: s.shape, decay: s.decay })),
    optim: net.optimizer.cfg,
    step: net.optimizer.state.step,
  };
}

/** Weights, first and second moments: views, not copies. */
export function netBuffers(net: LlamaNetwork): Uint8Array[] {
  return [bytes(net.params), bytes(net.optimizer.state.m), bytes(net.optimizer.state.v)];
}

export function bytes(a: Float32Array | Int32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** A reply buffer as float32 (the worker hands over fresh, aligned copies; copy otherwise). */
export function floats(b: Uint8Array): Float32Array {
  if (b.byteOffset % 4 === 0) return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  return new Float32Array(b.slice().buffer);
}

export function concat(arrays: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(arrays.reduce((a, b) => a + b.length, 0));
  let o = 0;
  for (const a of arrays) {
    out.set(a, o);
    o += a.length;
  }
  return out;
}

export function split(flat: Float32Array, lengths: readonly number[]): Float32Array[] {
  const out: Float32Array[] = [];
  let o = 0;
  for (const n of lengths) {
    out.push(flat.slice(o, o + n));
    o += n;
  }
  return out;
}
