import { describe, expect, it } from 'vitest';
import { modelConfig } from '../network/config.ts';
import { tensorSpecs } from '../network/weights.ts';
import { LORA_TARGETS, loraMatrices, loraProblem, loraScale, resolveLora, LoraSectionSchema } from './lora-config.ts';

describe('LoRA settings', () => {
  it('default to alpha 2r over every projection, and keep the layer order whatever the order given', () => {
    expect(resolveLora({ rank: 4 })).toEqual({ rank: 4, alpha: 8, targets: LORA_TARGETS });
    const s = resolveLora({ rank: 4, alpha: 2, targets: ['down_proj', 'q_proj', 'q_proj'] });
    expect(s.targets).toEqual(['q_proj', 'down_proj']);
    expect(loraScale(s)).toBe(0.5);
  });

  it('refuse a rank of 0 and an unknown module name at the schema', () => {
    expect(LoraSectionSchema.safeParse({ rank: 0 }).success).toBe(false);
    expect(LoraSectionSchema.safeParse({ rank: 2, targets: ['qq_proj'] }).success).toBe(false);
    expect(LoraSectionSchema.safeParse({ rank: 2, targets: [] }).success).toBe(false);
  });

  it("refuse a rank above the narrowest adapted matrix's smaller side, naming it and the flag", () => {
    // Grouped-query attention: k_proj and v_proj are [Hkv D, C] = [12, 16], narrower than q_proj.
    const cfg = modelConfig('tiny', { nHeads: 4, nKvHeads: 2, headDim: 6 });
    const specs = tensorSpecs(cfg, 'lm');
    const all = loraMatrices({ specs, cfg, targets: LORA_TARGETS });
    expect(all).toHaveLength(cfg.nLayers * 7);
    expect(all.find((m) => m.target === 'k_proj')).toMatchObject({ out: 12, in: 16 });
    expect(loraProblem(resolveLora({ rank: 12 }), all)).toBeNull();
    expect(loraProblem(resolveLora({ rank: 13 }), all)).toBe(
      'model.lora.rank: 13 is above the smaller side of k_proj [12, 16] (--lora-rank takes 1 to 12 with these --lora-targets)',
    );
    const q = loraMatrices({ specs, cfg, targets: ['q_proj'] });
    expect(loraProblem(resolveLora({ rank: 13 }), q)).toBeNull();
  });
});
