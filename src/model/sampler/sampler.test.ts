import { describe, expect, it } from 'vitest';
import { linearForward } from '../../tensor/linear.ts';
import { nativeAddon } from '../../tensor/native.ts';
import { Rng } from '../../util/random.ts';
import { modelConfig, type ModelConfig } from '../network/config.ts';
import { KvDecoder } from './kv-decoder.ts';
import { PolicyModel } from '../network/policy.ts';
import { ModelSampler } from './sampler.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from '../network/test-helpers.ts';

/** Grouped-query attention (4 query heads on 2 kv heads), Qwen3's q/k norm, head size 6. */
const GQA: Partial<ModelConfig> = { nHeads: 4, nKvHeads: 2, headDim: 6, qkNorm: true };

function setup(seed = 1, extra: Partial<ModelConfig> = {}) {
  const cfg = modelConfig('tiny', extra);
  const policy = new PolicyModel({ config: cfg, optim: TEST_OPTIM, rng: new Rng(seed) });
  scrambleWeights(policy.net, seed + 1);
  return { cfg, policy };
}

/** Full-sequence logits from the training path: row t predicts token t + 1. */
function fullLogits(policy: PolicyModel, seq: Int32Array): Float32Array {
  const { cfg } = policy.net;
  const { batch, ws } = policy.net.runTrunk([seq], false);
  const out = new Float32Array(batch.n * cfg.vocabSize);
  linearForward({ out, inp: ws.lnf, weight: policy.net.w.lmHead!, n: batch.n, inF: cfg.dModel, outF: cfg.vocabSize });
  return out;
}

describe.each([
  ['multi-head', {}],
  ['GQA + q/k norm', GQA],
] as const)('KvDecoder (%s)', (_name, extra) => {
  it('KV-cache logits equal full-sequence forward logits over ragged prompts', () => {
    const { cfg, policy } = setup(1, extra);
    const rng = new Rng(3);
    const prompts = randomSequences({ rng, lengths: [3, 7, 1], cfg });
    const conts = randomSequences({ rng, lengths: [6, 2, 9], cfg });
    const dec = new KvDecoder(policy.net);
    const v = cfg.vocabSize;
    const got: Float32Array[][] = prompts.map(() => []);
    const started = dec.start({ prompts, maxTotal: 16 });
    let logits = started.logits;
    prompts.forEach((_, i) => got[i]!.push(logits.slice(i * v, (i + 1) * v)));
    for (let step = 0; step < 9; step++) {
      const live = [0, 1, 2].filter((i) => step < conts[i]!.length);
      logits = dec.step({
        slotIds: Int32Array.from(live, (i) => started.slots[i]!),
        tokens: Int32Array.from(live, (i) => conts[i]![step]!),
        count: live.length,
      });
      live.forEach((i, a) => got[i]!.push(logits.slice(a * v, (a + 1) * v)));
    }
    let maxDiff = 0;
    prompts.forEach((p, i) => {
      const full = Int32Array.from([...p, ...conts[i]!]);
      const ref = fullLogits(policy, full);
      got[i]!.forEach((row, k) => {
        const r = p.length - 1 + k;
        for (let j = 0; j < v; j++) maxDiff = Math.max(maxDiff, Math.abs(row[j]! - ref[r * v + j]!));
      });
    });
    console.log(`kv-cache vs full forward logits: max diff ${maxDiff.toExponential(2)}`);
    expect(maxDiff).toBeLessThan(1e-4);
  });
});

describe.each([
  ['multi-head', {}],
  ['GQA + q/k norm', GQA],
] as const)('KvDecoder prefix reuse (%s)', (_name, extra) => {
  it('a later prompt extending a cached sequence reuses its slot and gets full-forward logits', () => {
    const { cfg, policy } = setup(1, extra);
    const rng = new Rng(4);
    const [p0, p1, extra0, extra1, other] = randomSequences({ rng, lengths: [5, 8, 4, 3, 6], cfg });
    const dec = new KvDecoder(policy.net);
    const v = cfg.vocabSize;
    const first = dec.start({ prompts: [p0!, p1!], maxTotal: 24 });
    // one generated token on slot of p0 only
    const g0 = 7;
    dec.step({ slotIds: Int32Array.from([first.slots[0]!]), tokens: Int32Array.from([g0]), count: 1 });
    // turn 2: p1 + extra1 (continues p1), p0 + g0 + extra0 (continues p0 and its generation),
    // p0 cut short + other (shares only part of a slot's history), and an unrelated prompt.
    const q = [
      Int32Array.from([...p1!, ...extra1!]),
      Int32Array.from([...p0!, g0, ...extra0!]),
      Int32Array.from([...p0!.subarray(0, 3), ...other!]),
      other!,
    ];
    const second = dec.start({ prompts: q, maxTotal: 30 }); // more slots and a longer cache: both regrow, keeping slots
    expect(second.slots[0]).toBe(first.slots[1]);
    expect(second.slots[1]).toBe(first.slots[0]);
    let maxDiff = 0;
    q.forEach((seq, i) => {
      const ref = fullLogits(policy, seq);
      const r = seq.length - 1;
      for (let j = 0; j < v; j++) maxDiff = Math.max(maxDiff, Math.abs(second.logits[i * v + j]! - ref[r * v + j]!));
    });
    // and decoding continues correctly from the reused slots
    const next = dec.step({ slotIds: Int32Array.from(second.slots), tokens: Int32Array.from([1, 2, 3, 4]), count: 4 });
    q.forEach((seq, i) => {
      const ref = fullLogits(policy, Int32Array.from([...seq, i + 1]));
      for (let j = 0; j < v; j++) maxDiff = Math.max(maxDiff, Math.abs(next[i * v + j]! - ref[seq.length * v + j]!));
    });
    console.log(`prefix-reuse logits vs full forward: max diff ${maxDiff.toExponential(2)}`);
    expect(maxDiff).toBeLessThan(1e-4);
  });
});

describe('KvDecoder with the native addon', () => {
  // A decode step that repacks every weight per call gives the same numbers three times slower
  // (the large model's single-sequence decode), so only a count of the calls can see it.
  it.skipIf(nativeAddon === null)('multiplies by the weights packed once: no per-call packing in a decode step', () => {
    const { cfg, policy } = setup(1);
    const dec = new KvDecoder(policy.net);
    const { slots } = dec.start({ prompts: [[1, 2, 3], [4]], maxTotal: 8 });
    const addon = nativeAddon!;
    const calls = { gemm: 0, gemmPacked: 0 };
    const saved = { ...addon }; // the bindings, restored below
    addon.gemm = (...args) => {
      calls.gemm++;
      saved.gemm(...args);
    };
    addon.gemmPacked = (...args) => {
      calls.gemmPacked++;
      saved.gemmPacked(...args);
    };
    try {
      dec.step({ slotIds: slots, tokens: Int32Array.of(5, 6), count: 2 });
    } finally {
      Object.assign(addon, saved);
    }
    expect(calls).toEqual({ gemm: 0, gemmPacked: 4 * cfg.nLayers + 1 });
  });
});

describe('ModelSampler', () => {
  it('multi-turn calls (cached prefixes) match a fresh sampler, and a policy step drops the cache', () => {
    const { cfg, policy } = setup();
    const greedy = { temperature: 0, topP: 1 };
    const cached = new ModelSampler({ policy, rng: new Rng(1) });
    const prompts = randomSequences({ rng: new Rng(5), lengths: [4, 6, 2], cfg }).map((p) => Array.from(p));
    const turn1 = cached.sampleSync(
      prompts.map((prompt) => ({ prompt, maxTokens: 5, stopTokens: [] })),
      greedy,
    );
    const prompts2 = prompts.map((p, i) => [...p, ...turn1[i]!.tokens, 3, 4]);
    const compare = (a: ModelSampler, b: ModelSampler, ps: number[][]) => {
      const ra = a.sampleSync(
        ps.map((prompt) => ({ prompt, maxTokens: 6, stopTokens: [] })),
        greedy,
      );
      const rb = b.sampleSync(
        ps.map((prompt) => ({ prompt, maxTokens: 6, stopTokens: [] })),
        greedy,
      );
      let maxDiff = 0;
      ra.forEach((r, i) => {
        expect(r.tokens).toEqual(rb[i]!.tokens);
        r.logprobs.forEach((lp, k) => {
          maxDiff = Math.max(maxDiff, Math.abs(lp! - rb[i]!.logprobs[k]!));
        });
      });
      expect(maxDiff).toBeLessThan(1e-5);
    };
    compare(cached, new ModelSampler({ policy, rng: new Rng(1) }), prompts2);
    // a training step changes the weights: the cache must not be reused
    policy.forward(
      prompts2.map((p) => Int32Array.from(p)),
      { train: true },
    );
    policy.backward({ logprobs: prompts2.map((p) => new Float32Array(p.length).fill(-0.5)) });
    policy.step();
    compare(cached, new ModelSampler({ policy, rng: new Rng(1) }), prompts2);
  });

  it("log-probs of sampled tokens equal training log-probs under the same temperature and top-p; entropies the model's own", async () => {
    const { cfg, policy } = setup();
    const sampler = new ModelSampler({ policy, rng: new Rng(7) });
    const prompts = randomSequences({ rng: new Rng(8), lengths: [4, 1, 10, 6], cfg });
    const res = await sampler.sample(
      prompts.map((p) => ({ prompt: Array.from(p), maxTokens: 12, stopTokens: [] })),
      { temperature: 0.8, topP: 0.9 },
    );
    const full = prompts.map((p, i) => Int32Array.from([...p, ...res[i]!.tokens]));
    const plain = policy.forward(full); // the model's own distribution: the entropies
    policy.sampling = { temperature: 0.8, topP: 0.9 };
    const train = policy.forward(full);
    let maxLp = 0;
    let maxEnt = 0;
    res.forEach((r, i) => {
      expect(r.tokens.length).toBe(12);
      expect(r.finishReason).toBe('length');
      r.tokens.forEach((_, k) => {
        const t = prompts[i]!.length + k;
        maxLp = Math.max(maxLp, Math.abs(r.logprobs[k]! - train.logprobs[i]![t]!));
        maxEnt = Math.max(maxEnt, Math.abs(r.entropies![k]! - plain.entropies[i]![t]!));
      });
    });
    console.log(
      `sampler vs training: logprob max diff ${maxLp.toExponential(2)}, entropy max diff ${maxEnt.toExponential(2)}`,
    );
    expect(maxLp).toBeLessThan(1e-4);
    expect(maxEnt).toBeLessThan(1e-4);
  });

  it('same seed, same tokens; another seed, other tokens', () => {
    const { cfg, policy } = setup();
    const reqs = randomSequences({ rng: new Rng(9), lengths: [2, 5, 3], cfg }).map((p) => ({
      prompt: Array.from(p),
      maxTokens: 20,
      stopTokens: [],
    }));
    const run = (seed: number) =>
      new ModelSampler({ policy, rng: new Rng(seed) })
        .sampleSync(reqs, { temperature: 1, topP: 1 })
        .map((r) => r.tokens);
    expect(run(11)).toEqual(run(11));
    expect(run(11)).not.toEqual(run(12));
  });

  it('greedy (temperature 0) and a tiny top-p both pick the argmax of the full forward', () => {
    const { cfg, policy } = setup();
    const prompt = Array.from(randomSequences({ rng: new Rng(10), lengths: [5], cfg })[0]!);
    for (const params of [
      { temperature: 0, topP: 1 },
      { temperature: 1, topP: 1e-6 },
    ]) {
      const r = new ModelSampler({ policy, rng: new Rng(1) }).sampleSync(
        [{ prompt, maxTokens: 8, stopTokens: [] }],
        params,
      )[0]!;
      const seq = [...prompt, ...r.tokens];
      const logits = fullLogits(policy, Int32Array.from(seq));
      r.tokens.forEach((tok, k) => {
        const row = logits.subarray((prompt.length - 1 + k) * cfg.vocabSize, (prompt.length + k) * cfg.vocabSize);
        expect(tok).toBe(row.indexOf(Math.max(...row)));
      });
    }
  });

  it('stops after a stop token (returned and counted) and at maxTokens', () => {
    const { policy } = setup();
    const prompt = [1, 2, 3];
    const greedy = new ModelSampler({ policy, rng: new Rng(1) }).sampleSync(
      [{ prompt, maxTokens: 6, stopTokens: [] }],
      { temperature: 0, topP: 1 },
    )[0]!;
    const stop = greedy.tokens[2]!;
    const firstStop = greedy.tokens.indexOf(stop);
    const [a, b, c] = new ModelSampler({ policy, rng: new Rng(1) }).sampleSync(
      [
        { prompt, maxTokens: 6, stopTokens: [stop] },
        { prompt, maxTokens: 4, stopTokens: [] },
        { prompt, maxTokens: 0, stopTokens: [] },
      ],
      { temperature: 0, topP: 1 },
    );
    expect(a!.tokens).toEqual(greedy.tokens.slice(0, firstStop + 1));
    expect(a!.finishReason).toBe('stop');
    expect(b!.tokens).toEqual(greedy.tokens.slice(0, 4));
    expect(b!.finishReason).toBe('length');
    expect(c!.tokens).toEqual([]);
  });

  it('shares weights with the live policy: a step changes what it samples', () => {
    const { cfg, policy } = setup();
    const sampler = new ModelSampler({ policy, rng: new Rng(1) });
    const req = [{ prompt: [1, 2, 3], maxTokens: 1, stopTokens: [] }];
    const before = sampler.sampleSync(req, { temperature: 0, topP: 1 })[0]!;
    policy.net.params.fill(0, policy.net.specs.find((s) => s.name === 'lm_head.weight')!.offset);
    policy.net.markWeightsChanged();
    const after = sampler.sampleSync(req, { temperature: 0, topP: 1 })[0]!;
    expect(after.logprobs[0]).toBeCloseTo(-Math.log(cfg.vocabSize), 5);
    expect(before.logprobs[0]).not.toBeCloseTo(-Math.log(cfg.vocabSize), 2);
  });

  it('rejects a prompt plus maxTokens longer than maxSeqLen with a clear error', () => {
    const { policy } = setup();
    const sampler = new ModelSampler({ policy, rng: new Rng(1) });
    expect(() =>
      sampler.sampleSync([{ prompt: new Array(30).fill(1), maxTokens: 3, stopTokens: [] }], {
        temperature: 1,
        topP: 1,
      }),
    ).toThrow(/prompt \(30\) \+ maxTokens \(3\) of 33 tokens exceeds the model's maxSeqLen 32/);
    expect(() =>
      sampler.sampleSync([{ prompt: [], maxTokens: 3, stopTokens: [] }], { temperature: 1, topP: 1 }),
    ).toThrow(/empty/);
  });
});
