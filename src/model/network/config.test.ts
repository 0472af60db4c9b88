import { describe, expect, it } from 'vitest';
import { modelConfig, modelParamCount, modelPresetNames, parseModelConfig } from './config.ts';
import { fromHfConfig, toHfConfig } from '../formats/hf-config.ts';
import { paramCount, tensorSpecs } from './weights.ts';

describe('ModelConfig', () => {
  it('has the issue presets', () => {
    expect(modelPresetNames()).toEqual(['tiny', 'reference', 'reference-2l', 'large']);
    expect(modelConfig('reference-2l').nLayers).toBe(2);
    const r = modelConfig('reference');
    expect([r.vocabSize, r.dModel, r.nLayers, r.nHeads, r.mlpHidden, r.maxSeqLen]).toEqual([128, 128, 4, 4, 512, 256]);
    const l = modelConfig('large');
    expect([l.dModel, l.nLayers, l.nHeads, l.maxSeqLen]).toEqual([256, 6, 8, 512]);
  });

  it('rejects unknown presets, unknown keys and bad head sizes with clear messages', () => {
    expect(() => modelConfig('huge')).toThrow(
      /unknown model preset 'huge'; valid presets: tiny, reference, reference-2l, large/,
    );
    expect(() => parseModelConfig({ ...modelConfig('tiny'), dropout: 0.1 })).toThrow(/invalid model config/);
    expect(() => modelConfig('tiny', { nHeads: 3 })).toThrow(/multiple of nHeads/);
    expect(() => modelConfig('tiny', { nHeads: 4, nKvHeads: 3 })).toThrow(/multiple of nKvHeads/);
    expect(() => modelConfig('tiny', { headDim: 5 })).toThrow(/even/);
  });

  it('round-trips through a Hugging Face config.json', () => {
    for (const name of modelPresetNames()) {
      const cfg = modelConfig(name, { tiedEmbeddings: name === 'tiny' });
      expect(fromHfConfig(JSON.parse(JSON.stringify(toHfConfig(cfg))))).toEqual(cfg);
    }
    for (const ropeScaling of [
      { type: 'linear', factor: 2 },
      { type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 8192 },
      { type: 'yarn', factor: 4, originalMaxPositions: 32768, betaFast: 32, betaSlow: 1 },
    ] as const) {
      const cfg = modelConfig('tiny', { ropeScaling });
      expect(fromHfConfig(JSON.parse(JSON.stringify(toHfConfig(cfg))))).toEqual(cfg);
    }
    const hf = toHfConfig(modelConfig('tiny'));
    expect(fromHfConfig({ ...hf, num_key_value_heads: 1 }).nKvHeads).toBe(1);
    expect(fromHfConfig({ ...hf, rope_scaling: { rope_type: 'llama3', factor: 8 } }).ropeScaling).toEqual({
      type: 'llama3',
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositions: 8192,
    });
    expect(() => fromHfConfig({ ...hf, rope_scaling: { type: 'dynamic', factor: 2 } })).toThrow(
      /rope_scaling\.rope_type "dynamic" is not supported; supported: default, linear, llama3, yarn/,
    );
    expect(() =>
      fromHfConfig({ ...hf, rope_scaling: { rope_type: 'yarn', factor: 4, attention_factor: 0.8 } }),
    ).toThrow(/rope_scaling\.attention_factor is not supported/);
    // Grouped-query attention, a decoupled head size and Qwen3's q/k norm (Qwen3-0.6B's shape, scaled down).
    const qwen = modelConfig('tiny', { nHeads: 4, nKvHeads: 2, headDim: 8, qkNorm: true });
    const qhf = toHfConfig(qwen);
    expect(qhf).toMatchObject({ architectures: ['Qwen3ForCausalLM'], num_key_value_heads: 2, head_dim: 8 });
    expect(fromHfConfig(JSON.parse(JSON.stringify(qhf)))).toEqual(qwen);
    expect(toHfConfig(modelConfig('tiny'))).not.toHaveProperty('head_dim');
    expect(() => fromHfConfig({ ...qhf, architectures: ['MistralForCausalLM'] })).toThrow(/is not supported/);
  });

  it('shapes the attention weights for grouped-query attention, head size and q/k norm', () => {
    const cfg = modelConfig('tiny', { nHeads: 4, nKvHeads: 2, headDim: 8, qkNorm: true }); // C = 16
    const specs = tensorSpecs(cfg, 'lm');
    const shape = (n: string) => specs.find((s) => s.name === `model.layers.0.self_attn.${n}.weight`)!.shape;
    expect([shape('q_proj'), shape('k_proj'), shape('v_proj'), shape('o_proj')]).toEqual([
      [32, 16],
      [16, 16],
      [16, 16],
      [16, 32],
    ]);
    expect([shape('q_norm'), shape('k_norm')]).toEqual([[8], [8]]);
  });

  it('counts parameters without allocating, as the layout does, and refuses a model no memory holds', () => {
    for (const cfg of [
      modelConfig('reference'),
      modelConfig('tiny', { tiedEmbeddings: true }),
      modelConfig('tiny', { nHeads: 4, nKvHeads: 2, headDim: 6, qkNorm: true }),
    ])
      expect(modelParamCount(cfg)).toBe(paramCount(tensorSpecs(cfg, 'lm')));
    expect(() => modelConfig('tiny', { dModel: 1e9 })).toThrow(/dModel: must be at most 65536/);
    expect(() => modelConfig('tiny', { dModel: 65536, nHeads: 64, mlpHidden: 1 << 20, nLayers: 1024 })).toThrow(
      /parameters and needs about .* more than this machine's/,
    );
  });

  it('counts parameters: Llama names and shapes', () => {
    const cfg = modelConfig('reference');
    const specs = tensorSpecs(cfg, 'lm');
    // embed + lm_head 2*128*128, per layer 4*C^2 + 3*C*F + 2*C, final norm C
    expect(paramCount(specs)).toBe(2 * 128 * 128 + 4 * (4 * 128 * 128 + 3 * 128 * 512 + 2 * 128) + 128);
    expect(specs.find((s) => s.name === 'model.layers.3.mlp.down_proj.weight')!.shape).toEqual([128, 512]);
    expect(specs.find((s) => s.name === 'model.norm.weight')!.decay).toBe(false);
  });
});
