import { describe, expect, it } from 'vitest';
import { modelConfig, modelPresetNames, parseModelConfig } from './config.ts';
import { fromHfConfig, toHfConfig } from './hf-config.ts';
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
    expect(() => fromHfConfig({ ...hf, num_key_value_heads: 1 })).toThrow(/grouped-query/);
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
