import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
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
import { WEIGHT_PRECISIONS } from './weight-precision.ts';
import { randomSequences, TEST_OPTIM } from './test-helpers.ts';
import { Workspace } from './workspace.ts';

/** Bytes of every distinct Float32Array a workspace holds (the per-layer lists included). */
function allocatedBytes(ws: Workspace, skip: readonly string[] = []): number {
  const seen = new Set<Float32Array>();
  for (const [name, value] of Object.entries(ws)) {
    if (skip.includes(name)) continue;
    if (value instanceof Float32Array) seen.add(value);
    else if (Array.isArray(value) && value[0] instanceof Float32Array)
      for (const t of value as Float32Array[]) seen.add(t);
  }
  return [...seen].reduce((a, t) => a + t.byteLength, 0);
}

describe('training memory plan', () => {
  const shapes = [
    ['tiny', modelConfig('tiny')],
    ['qwen3-tiny (GQA, q/k norm, tied)', { ...MODEL_SHAPES['qwen3-tiny'], vocabSize: 300 }],
  ] as const;

  it.each(shapes)(
    'counts every float the %s workspace allocates for a batch, with and without recompute',
    (_name, cfg) => {
      const lengths = [7, 3, 12];
      for (const recompute of [false, true]) {
        const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
        policy.net.recompute = recompute;
        policy.forward(randomSequences({ rng: new Rng(2), lengths, cfg }), { train: true });
        const ws = (policy.net as unknown as { ws: Workspace }).ws;
        expect(workspaceBytes(cfg, lengths, true, recompute)).toBe(allocatedBytes(ws));
        // A critic never writes logits: the plan leaves those pages out.
        expect(workspaceBytes(cfg, lengths, false, recompute)).toBe(allocatedBytes(ws, ['logits', 'dlogits']));
      }
      expect(workspaceBytes(cfg, lengths, true, true)).toBeLessThan(workspaceBytes(cfg, lengths, true));
    },
  );

  it.each(shapes)('counts the %s parameters and the packed copy the sampler holds', (_name, cfg) => {
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const critic = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM, layers: 1 });
    const plan = trainingMemoryPlan({ policy: cfg, criticLayers: 1, lengths: [4] });
    const line = (what: string) => plan.lines.find((l) => l.what.startsWith(what))!.bytes;
    expect(line('policy weights')).toBe(BYTES_PER_PARAM * policy.net.paramCount);
    expect(line('critic (1 layers)')).toBe(BYTES_PER_PARAM * critic.net.paramCount);
    for (const precision of WEIGHT_PRECISIONS) {
      const copy = policy.net.inferenceWeights(precision);
      const held = copy ? [...copy.layers.flatMap((l) => [l.qkv, l.o, l.gateUp, l.down]), copy.lmHead] : [];
      expect(packedCopyBytes(cfg, precision)).toBe(held.reduce((a, p) => a + (p?.data.byteLength ?? 0), 0));
    }
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
    // Recomputation: 3072-token minibatches with a 4-layer critic fit too (the logits then dominate).
    expect(run(4, 3072)).toContain('or --critic-layers, or add --recompute');
    expect(
      trainingMemoryProblem({
        policy,
        criticLayers: 4,
        minibatchTokens: 3072,
        seqLen: 512,
        recompute: true,
        totalBytes: machine,
      }),
    ).toBeNull();
  });
});
