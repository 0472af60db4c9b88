import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { loadCheckpoint, restoreCheckpoint, saveCheckpoint } from './checkpoint.ts';
import { modelConfig } from '../network/config.ts';
import { CriticModel } from '../network/critic.ts';
import { PolicyModel } from '../network/policy.ts';
import { decodeSafetensors, encodeSafetensors } from './safetensors.ts';
import { randomSequences, TEST_OPTIM } from '../network/test-helpers.ts';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'crl-ckpt-'));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** One SFT-ish step on policy and one regression step on critic, so optimizer state is non-trivial. */
function trainStep(policy: PolicyModel, critic: CriticModel, seqs: Int32Array[]): void {
  policy.forward(seqs, { train: true });
  policy.backward({ logprobs: seqs.map((s) => new Float32Array(s.length).fill(-0.1)) });
  policy.step();
  critic.forward(seqs, { train: true });
  critic.backward({ values: seqs.map((s) => new Float32Array(s.length).fill(0.1)) });
  critic.step();
}

describe('safetensors', () => {
  it('writes an 8-byte LE header length, a JSON header and 8-byte aligned data, and reads it back', () => {
    const buf = encodeSafetensors([{ name: 'a', shape: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6]) }], {
      k: 'v',
    });
    const hlen = Number(buf.readBigUInt64LE(0));
    expect((8 + hlen) % 8).toBe(0);
    const header = JSON.parse(buf.subarray(8, 8 + hlen).toString());
    expect(header.a).toEqual({ dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] });
    expect(buf.readFloatLE(8 + hlen + 4 * 5)).toBe(6);
    const f = decodeSafetensors(buf, 'x');
    expect(f.metadata).toEqual({ k: 'v' });
    expect(f.tensors.get('a')!.shape).toEqual([2, 3]);
  });
});

describe.each([
  ['tied: false', false, {}],
  ['tied: true', true, {}],
  ['GQA + q/k norm', false, { nHeads: 4, nKvHeads: 2, headDim: 6, qkNorm: true }],
] as const)('checkpoint round trip (%s)', (_name, tied, extra) => {
  it('restores weights, optimizer state and meta; training continues identically', async () => {
    const cfg = modelConfig('tiny', { tiedEmbeddings: tied, ...extra });
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const critic = CriticModel.fromPolicy({ policy, optim: { ...TEST_OPTIM, lr: 1e-3 } });
    const seqs = randomSequences({ rng: new Rng(2), lengths: [5, 9], cfg });
    trainStep(policy, critic, seqs);
    const dir = await tempDir();
    await saveCheckpoint(dir, { policy, critic, meta: { iteration: 7 } });
    const files = (await readdir(dir)).sort();
    expect(files).toEqual([
      'config.json',
      'critic-optimizer.safetensors',
      'critic.safetensors',
      'crl_tokenizer.json',
      'model.safetensors',
      'optimizer.safetensors',
      'trainer_state.json',
    ]);
    const hf = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    expect(hf.architectures).toEqual(['qkNorm' in extra ? 'Qwen3ForCausalLM' : 'LlamaForCausalLM']);
    expect(hf.tie_word_embeddings).toBe(tied);
    const names = [...decodeSafetensors(await readFile(join(dir, 'model.safetensors')), 'm').tensors.keys()];
    expect(names.includes('lm_head.weight')).toBe(!tied);
    expect(names).toContain('model.layers.1.self_attn.q_proj.weight');

    const loaded = await loadCheckpoint(dir);
    expect(loaded.meta).toEqual({ iteration: 7 });
    expect(loaded.policy.config).toEqual(cfg);
    expect(Array.from(loaded.policy.net.params)).toEqual(Array.from(policy.net.params));
    expect(Array.from(loaded.policy.net.optimizer.state.v)).toEqual(Array.from(policy.net.optimizer.state.v));
    expect(loaded.policy.net.optimizer.state.step).toBe(1);
    expect(loaded.critic!.net.optimizer.cfg.lr).toBe(1e-3);
    trainStep(policy, critic, seqs);
    trainStep(loaded.policy, loaded.critic!, seqs);
    expect(Array.from(loaded.policy.net.params)).toEqual(Array.from(policy.net.params));
    expect(Array.from(loaded.critic!.net.params)).toEqual(Array.from(critic.net.params));
  });
});

describe("restoreCheckpoint (resume into the run's own models)", () => {
  it("puts weights and AdamW moments back bit-exact, keeping the models' optimizer configs", async () => {
    const cfg = modelConfig('tiny');
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const critic = CriticModel.fromPolicy({ policy, optim: { ...TEST_OPTIM, lr: 1e-3 } });
    const seqs = randomSequences({ rng: new Rng(2), lengths: [5, 9], cfg });
    trainStep(policy, critic, seqs);
    const dir = await tempDir();
    await saveCheckpoint(dir, { policy, critic });
    // A fresh run's models with a different schedule: restore must not change the schedule.
    const p2 = new PolicyModel({ config: cfg, optim: { ...TEST_OPTIM, lr: 7e-4 }, rng: new Rng(9) });
    const c2 = CriticModel.fromPolicy({ policy: p2, optim: { ...TEST_OPTIM, lr: 2e-3 } });
    await restoreCheckpoint(dir, { policy: p2, critic: c2 });
    for (const [a, b] of [
      [p2.net, policy.net],
      [c2.net, critic.net],
    ] as const) {
      expect(Array.from(a.params)).toEqual(Array.from(b.params));
      expect(Array.from(a.optimizer.state.m)).toEqual(Array.from(b.optimizer.state.m));
      expect(Array.from(a.optimizer.state.v)).toEqual(Array.from(b.optimizer.state.v));
      expect(a.optimizer.state.step).toBe(b.optimizer.state.step);
    }
    expect(p2.net.optimizer.cfg.lr).toBe(7e-4);
    expect(c2.net.optimizer.cfg.lr).toBe(2e-3);
  });

  it('refuses a checkpoint without a critic when the run trains one, and a different model size', async () => {
    const cfg = modelConfig('tiny');
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const dir = await tempDir();
    await saveCheckpoint(dir, { policy });
    const critic = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM });
    await expect(restoreCheckpoint(dir, { policy, critic })).rejects.toThrow(/has no critic, but this run trains one/);
    const wider = new PolicyModel({ config: modelConfig('tiny', { dModel: 32 }), optim: TEST_OPTIM, rng: new Rng(1) });
    await expect(restoreCheckpoint(dir, { policy: wider })).rejects.toThrow(/has shape .* expected/);
  });
});

describe('a critic with fewer layers than the policy', () => {
  it('saves its layer count, loads and resumes it bit-exact, and refuses a run with another count', async () => {
    const cfg = modelConfig('tiny', { nLayers: 3 });
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const critic = CriticModel.fromPolicy({ policy, optim: { ...TEST_OPTIM, lr: 1e-3 }, layers: 1 });
    const seqs = randomSequences({ rng: new Rng(2), lengths: [5, 9], cfg });
    trainStep(policy, critic, seqs);
    const dir = await tempDir();
    await saveCheckpoint(dir, { policy, critic });
    expect(JSON.parse(await readFile(join(dir, 'trainer_state.json'), 'utf8')).criticLayers).toBe(1);
    const names = [...decodeSafetensors(await readFile(join(dir, 'critic.safetensors')), 'c').tensors.keys()];
    expect(names.some((n) => n.startsWith('model.layers.1.'))).toBe(false);

    const loaded = await loadCheckpoint(dir);
    expect(loaded.critic!.config.nLayers).toBe(1);
    expect(loaded.policy.config.nLayers).toBe(3);
    const p2 = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(9) });
    const c2 = CriticModel.fromPolicy({ policy: p2, optim: { ...TEST_OPTIM, lr: 1e-3 }, layers: 1 });
    await restoreCheckpoint(dir, { policy: p2, critic: c2 });
    for (const c of [loaded.critic!, c2]) {
      expect(Array.from(c.net.params)).toEqual(Array.from(critic.net.params));
      expect(Array.from(c.net.optimizer.state.v)).toEqual(Array.from(critic.net.optimizer.state.v));
    }
    trainStep(policy, critic, seqs);
    trainStep(p2, c2, seqs);
    expect(Array.from(c2.net.params)).toEqual(Array.from(critic.net.params));

    const full = CriticModel.fromPolicy({ policy: p2, optim: TEST_OPTIM });
    await expect(restoreCheckpoint(dir, { policy: p2, critic: full })).rejects.toThrow(
      /has a critic of 1 layers, this run's critic has 3 \(--critic-layers must match/,
    );
  });

  it("leaves criticLayers out of trainer_state.json for the critic of the policy's own depth", async () => {
    const cfg = modelConfig('tiny');
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const critic = CriticModel.fromPolicy({ policy, optim: TEST_OPTIM, layers: cfg.nLayers });
    const dir = await tempDir();
    await saveCheckpoint(dir, { policy, critic });
    expect(Object.keys(JSON.parse(await readFile(join(dir, 'trainer_state.json'), 'utf8')))).toEqual([
      'format',
      'version',
      'policyOptimizer',
      'criticOptimizer',
      'meta',
    ]);
  });
});

describe('checkpoint errors', () => {
  it('names a tensor with the wrong shape, and a missing file', async () => {
    const cfg = modelConfig('tiny');
    const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(1) });
    const dir = await tempDir();
    await saveCheckpoint(dir, { policy });
    expect((await loadCheckpoint(dir)).critic).toBeUndefined();
    const file = decodeSafetensors(await readFile(join(dir, 'model.safetensors')), 'm');
    const tensors = [...file.tensors.entries()].map(([name, t]) => {
      const data = new Float32Array(Uint8Array.from(t.bytes).buffer);
      return name === 'model.norm.weight' ? { name, shape: [2, 8], data } : { name, shape: t.shape, data };
    });
    await writeFile(join(dir, 'model.safetensors'), encodeSafetensors(tensors));
    await expect(loadCheckpoint(dir)).rejects.toThrow(/tensor model\.norm\.weight has shape \[2, 8\], expected \[16\]/);
    await rm(join(dir, 'trainer_state.json'));
    await expect(loadCheckpoint(dir)).rejects.toThrow(/has no trainer_state\.json/);
  });
});
