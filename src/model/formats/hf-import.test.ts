import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../../util/random.ts';
import { modelConfig, type ModelConfig } from '../network/config.ts';
import { loadHfModel, tensorToF32 } from './hf-import.ts';
import { encode, writeHfDir, type Dtype } from './hf-test-helpers.ts';
import { loadPolicyDir } from './load-policy.ts';
import { PolicyModel } from '../network/policy.ts';
import { randomSequences, scrambleWeights, TEST_OPTIM } from '../network/test-helpers.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-hf-import-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The policy with its weights rounded as `dtype` stores them: what loading should reproduce. */
function rounded(policy: PolicyModel, dtype: Dtype): PolicyModel {
  const params = tensorToF32({ dtype, bytes: encode(policy.net.params, dtype) }, 'all', 'test');
  return new PolicyModel({ config: policy.config, optim: TEST_OPTIM, params });
}

function makePolicy(over: Partial<ModelConfig>, seed: number): PolicyModel {
  const p = new PolicyModel({ config: modelConfig('tiny', over), optim: TEST_OPTIM, rng: new Rng(seed) });
  scrambleWeights(p.net, seed + 1);
  return p;
}

describe('Hugging Face model directories', () => {
  it.each([
    ['BF16, 3 shards with an index, tied embeddings', 'BF16', 3, true],
    ['F16, one file, untied', 'F16', 1, false],
    ['F32, 2 shards', 'F32', 2, false],
  ] as const)('loads %s and computes what the same weights compute', async (label, dtype, shards, tied) => {
    const policy = makePolicy({ tiedEmbeddings: tied, ropeTheta: 500000 }, 3);
    const dir = writeHfDir({
      root,
      policy,
      dtype,
      shards,
      name: label.replace(/\W+/g, '-'),
      // What some loaders save: the RoPE buffer and, with tied embeddings, a copy of the embedding.
      extraTensors: [
        { name: 'model.layers.0.self_attn.rotary_emb.inv_freq', shape: [4], data: new Float32Array(4) },
        ...(tied ? [{ name: 'lm_head.weight', shape: [32, 16], data: new Float32Array(32 * 16) }] : []),
      ],
    });
    const loaded = await loadPolicyDir(dir);
    expect(loaded.source).toBe('hf');
    expect(loaded.policy.config).toEqual(policy.config);
    const want = rounded(policy, dtype);
    expect(Array.from(loaded.policy.net.params)).toEqual(Array.from(want.net.params));
    const seqs = randomSequences({ rng: new Rng(4), lengths: [9, 20], cfg: policy.config });
    const a = loaded.policy.forward(seqs).logprobs;
    const b = want.forward(seqs).logprobs;
    a.forEach((x, i) => expect(Array.from(x)).toEqual(Array.from(b[i]!)));
  });

  it('loads a Qwen3 directory (GQA, q/k norm, head_dim apart from hidden_size / heads) and computes what the same weights compute', async () => {
    const policy = makePolicy({ nHeads: 4, nKvHeads: 2, headDim: 6, qkNorm: true, tiedEmbeddings: true }, 7);
    const dir = writeHfDir({ root, policy, dtype: 'F16', shards: 2, name: 'qwen3' });
    const loaded = await loadPolicyDir(dir);
    expect(loaded.policy.config).toEqual(policy.config);
    const want = rounded(policy, 'F16');
    const seqs = randomSequences({ rng: new Rng(8), lengths: [12], cfg: policy.config });
    expect(Array.from(loaded.policy.forward(seqs).logprobs[0]!)).toEqual(Array.from(want.forward(seqs).logprobs[0]!));
    // Called a Llama model, its q_norm tensors do not belong, and the error names one.
    const missing = writeHfDir({
      root,
      policy,
      dtype: 'F16',
      shards: 1,
      name: 'qwen3-as-llama',
      config: { architectures: ['LlamaForCausalLM'] },
    });
    await expect(loadHfModel(missing)).rejects.toThrow(/unexpected tensor model\.layers\.0\.self_attn\.q_norm\.weight/);
  });

  it('names the field of a config it cannot run, and the tensor of weights that do not fit', async () => {
    const policy = makePolicy({}, 5);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ hidden_act: 'gelu' }, /hidden_act gelu is not supported/],
      [{ attention_bias: true }, /attention_bias true is not supported/],
      [{ rope_scaling: { rope_type: 'dynamic', factor: 2 } }, /rope_scaling\.rope_type "dynamic" is not supported/],
      [{ architectures: ['MistralForCausalLM'] }, /architectures \["MistralForCausalLM"\] is not supported/],
      [{ use_sliding_window: true }, /use_sliding_window/],
      [{ hidden_size: 'big' }, /hidden_size/],
      [{ num_key_value_heads: 3 }, /num_key_value_heads 3 does not divide num_attention_heads 2/],
      [{ head_dim: 7 }, /head_dim 7 must be even/],
      [{ hidden_size: 17, head_dim: null }, /hidden_size 17 is not a multiple of num_attention_heads 2/],
      [{ partial_rotary_factor: 0.5 }, /partial_rotary_factor 0.5 is not supported/],
      [{ rope_scaling: { rope_type: 'yarn', factor: 2, mscale: 1 } }, /rope_scaling\.mscale is not supported/],
      [
        { architectures: ['Qwen3ForCausalLM'], layer_types: ['sliding_attention'] },
        /layer_types contains "sliding_attention"/,
      ],
    ];
    for (const [config, msg] of cases) {
      const dir = writeHfDir({ root, policy, dtype: 'F32', shards: 1, name: `bad-${Object.keys(config)[0]}`, config });
      await expect(loadHfModel(dir)).rejects.toThrow(msg);
    }
    const extra = writeHfDir({
      root,
      policy,
      dtype: 'F32',
      shards: 1,
      name: 'extra',
      extraTensors: [{ name: 'model.layers.0.self_attn.q_proj.bias', shape: [16], data: new Float32Array(16) }],
    });
    await expect(loadHfModel(extra)).rejects.toThrow(/unexpected tensor model\.layers\.0\.self_attn\.q_proj\.bias/);
    const shape = writeHfDir({
      root,
      policy,
      dtype: 'F32',
      shards: 1,
      name: 'shape',
      config: { intermediate_size: 48 },
    });
    await expect(loadHfModel(shape)).rejects.toThrow(
      /mlp\.gate_proj\.weight has shape \[32, 16\], config\.json implies \[48, 16\]/,
    );
    expect(() => tensorToF32({ dtype: 'I8', bytes: new Uint8Array(4) }, 'x', 'f')).toThrow(
      /dtype I8; supported: F32, F16, BF16/,
    );
    await expect(loadPolicyDir(root)).rejects.toThrow(/neither a checkpoint .* nor a Hugging Face model directory/);
  });

  it('refuses sizes no machine holds before allocating, naming the field, and weights that are not finite', async () => {
    const policy = makePolicy({}, 5);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ hidden_size: 1e9 }, /hidden_size: must be at most 65536/],
      [{ vocab_size: 1e9 }, /vocab_size: must be at most 4194304/],
      [{ max_position_embeddings: 1e12 }, /max_position_embeddings: must be at most 16777216/],
      [{ num_hidden_layers: 1e6 }, /num_hidden_layers: must be at most 1024/],
      [
        { hidden_size: 65536, intermediate_size: 1 << 20, num_hidden_layers: 1024, head_dim: null },
        /parameters and needs about .* more than this machine's .* of memory; check vocabSize \(vocab_size\)/,
      ],
    ];
    for (const [config, msg] of cases) {
      const dir = writeHfDir({
        root,
        policy,
        dtype: 'F32',
        shards: 1,
        name: `huge-${Object.keys(config).join('-')}`,
        config,
      });
      await expect(loadHfModel(dir)).rejects.toThrow(msg);
    }
    for (const [dtype, bad] of [
      ['F32', NaN],
      ['BF16', Infinity],
      ['F16', -Infinity],
    ] as const) {
      const spoiled = makePolicy({}, 5);
      spoiled.net.params[spoiled.net.specs[3]!.offset + 1] = bad;
      const dir = writeHfDir({ root, policy: spoiled, dtype, shards: 1, name: `nonfinite-${dtype}` });
      await expect(loadHfModel(dir)).rejects.toThrow(
        new RegExp(`tensor ${spoiled.net.specs[3]!.name.replace(/\./g, '\\.')} holds 1 non-finite values`),
      );
    }
  });
});
