/**
 * A network's tensors in a checkpoint (checkpoint.ts): its weights and AdamW moments as safetensors
 * tensors to write, and read back into an existing network.
 */
import type { LlamaNetwork } from '../network/network.ts';
import { CheckpointFormatError, readTensorInto, type NamedTensor, type SafetensorsFile } from './safetensors.ts';

/**
 * The network's tensors, each read when its bytes are wanted: a LoRA policy on a bf16 base
 * (lora/merged-layers.ts) materializes one layer at a time into one buffer, so the chunks must be
 * written one by one (writeChunksAtomic), never gathered.
 */
export function weightTensors(net: LlamaNetwork): NamedTensor[] {
  return net.specs.map((s) => ({
    name: s.name,
    shape: s.shape,
    get data() {
      return net.tensor(s);
    },
  }));
}

export function optimizerTensors(net: LlamaNetwork): NamedTensor[] {
  const { m, v } = net.optimizer.state;
  return net.specs.flatMap((s) => [
    { name: `${s.name}.exp_avg`, shape: s.shape, data: m.subarray(s.offset, s.offset + s.size) },
    { name: `${s.name}.exp_avg_sq`, shape: s.shape, data: v.subarray(s.offset, s.offset + s.size) },
  ]);
}

/** Loads weights into net; every expected tensor must be present with its shape, and nothing else. */
export function loadWeights(net: LlamaNetwork, file: SafetensorsFile, what: string): void {
  const expected = new Set(net.specs.map((s) => s.name));
  for (const name of file.tensors.keys()) {
    if (!expected.has(name))
      throw new CheckpointFormatError(`${what}: unexpected tensor ${name} (does the config match the weights?)`);
  }
  for (const s of net.specs)
    readTensorInto({ file, name: s.name, shape: s.shape, dst: net.params.subarray(s.offset, s.offset + s.size), what });
  // A diverged run can save NaN or infinite weights; nothing sampled or trained from them means
  // anything, so they are refused here, once, for every consumer (run, eval, serve, resume).
  for (const s of net.specs) {
    const t = net.params.subarray(s.offset, s.offset + s.size);
    let bad = 0;
    for (let i = 0; i < t.length; i++) if (!Number.isFinite(t[i]!)) bad++;
    if (bad > 0)
      throw new CheckpointFormatError(
        `${what}: tensor ${s.name} holds ${bad} non-finite values (NaN or infinity); the run that wrote it diverged, use an earlier checkpoint`,
      );
  }
  net.markWeightsChanged(); // caches derived from the weights (KV cache, packed weights) start over
}

export function loadOptimizer(net: LlamaNetwork, file: SafetensorsFile, what: string): void {
  const { m, v } = net.optimizer.state;
  for (const s of net.specs) {
    readTensorInto({
      file,
      name: `${s.name}.exp_avg`,
      shape: s.shape,
      dst: m.subarray(s.offset, s.offset + s.size),
      what,
    });
    readTensorInto({
      file,
      name: `${s.name}.exp_avg_sq`,
      shape: s.shape,
      dst: v.subarray(s.offset, s.offset + s.size),
      what,
    });
  }
  const step = Number(file.metadata.step);
  if (!Number.isInteger(step) || step < 0)
    throw new CheckpointFormatError(`${what}: metadata.step is missing or not a non-negative integer`);
  net.optimizer.state.step = step;
}
