import { describe, expect, it } from 'vitest';
import { getPreset } from './presets.ts';
import { withLora } from './preset-lora.ts';

describe('a preset with LoRA', () => {
  it('sets the adapters on the RL systems only, keeping the rest of the model section', () => {
    const quick = getPreset('quick');
    const lora = withLora(quick, { rank: 16, alpha: 32 });
    expect(lora.train.model?.lora).toEqual({ rank: 16, alpha: 32 });
    expect({ ...lora.train.model, lora: undefined }).toEqual({ ...quick.train.model, lora: undefined });
    expect(lora.sft).toBe(quick.sft);
    expect(quick.train.model?.lora).toBeUndefined();
  });

  it('refuses a rank that is not a positive whole number', () => {
    expect(() => withLora(getPreset('quick'), { rank: 0 })).toThrow();
    expect(() => withLora(getPreset('quick'), { rank: 2.5 })).toThrow();
  });
});
