import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { modelConfig } from './config.ts';
import { CriticModel } from './critic.ts';
import {
  BYTES_PER_PARAM,
  packedCopyBytes,
  trainingMemoryPlan,
  trainingMemoryProblem,
  workspaceBytes,
} from './memory-plan.ts';
import { MODEL_SHAPES } from './model-shapes.ts';
import { PolicyModel } from './policy.ts';
import { randomSequences, TEST_OPTIM } from './test-helpers.ts';
import { Workspace } from './workspace.ts';

/** Bytes of every Float32Array a workspace holds (the per-layer lists included). */
function allocatedBytes(ws: Workspace, skip: readonly string[] = []): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(ws)) {
    if (skip.includes(name)) continue;
    if (value instanceof Float32Array) bytes += value.byteLength;
    else if (Array.isArray(value) && value[0] instanceof Float32Array)
      bytes += (value as Float32Array[]).reduce((a, t) => a + t.byteLength, 0);
  }
  return bytes;
}

describe('training memory plan', () => {
  const shapes = [
    ['tiny', modelConfig('tiny')],
    ['qwen3-tiny (GQA, q/k norm, tied)', { ...MODEL_SHAPES['qwen3-tiny'], vocabSize: 300 }],
  ] as const;

  it.each(shapes)('counts every float the %s workspace allocates for a batch', (_name, cfg) => {
    const lengths = [7, 3, 12];
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    policy.forward(randomSequences({ rng: new Rng(2), lengths, cfg }), { train: true });
    const ws = (policy.net as unknown as { ws: Workspace }).ws;
    expect(workspaceBytes(cfg, lengths, true)).toBe(allocatedBytes(ws));
    // A critic never writes logits: the plan leaves those pages out.
    expect(workspaceBytes(cfg, lengths, false)).toBe(allocatedBytes(ws, ['logits', 'dlogits']));
  });

  it.each(shapes)('counts the %s parameters and the packed copy the sampler holds', (_name, cfg) => {
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const critic = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM, layers: 1 });
    const plan = trainingMemoryPlan({ policy: cfg, criticLayers: 1, lengths: [4] });
    const line = (what: string) => plan.lines.find((l) => l.what.startsWith(what))!.bytes;
    expect(line('policy weights')).toBe(BYTES_PER_PARAM * policy.net.paramCount);
    expect(line('critic (1 layers)')).toBe(BYTES_PER_PARAM * critic.net.paramCount);
    const packed = policy.net.packedWeights();
    const held = packed ? [...packed.layers.flatMap((l) => [l.qkv, l.o, l.gateUp, l.down]), packed.lmHead] : [];
    expect(packedCopyBytes(cfg)).toBe(held.reduce((a, p) => a + p!.data.byteLength, 0));
  });

  it('refuses the 0.6B shape with a full critic or 4096-token minibatches in 24 GiB, and passes K = 4 at 512 tokens', () => {
    const policy = MODEL_SHAPES['qwen3-0.6b'];
    const machine = 24 * 2 ** 30;
    const run = (criticLayers: number | null, minibatchTokens: number) =>
      trainingMemoryProblem({ policy, criticLayers, minibatchTokens, seqLen: 512, totalBytes: machine });
    // Without the native addon there is no packed copy (2.4 GB less), so the full critic is refused at 1024.
    expect(run(28, 1024)).toMatch(/^training needs about \d\d\.\d GB \(policy weights, grads, AdamW m, v 9\.5 GB, /);
    expect(run(28, 1024)).toContain(
      "more than this machine's 25.8 GB; lower --minibatch-tokens (now 1024) or --critic-layers",
    );
    expect(run(null, 4096)).toMatch(/^training needs about 3\d\.\d GB/);
    expect(run(4, 512)).toBeNull();
  });
});
