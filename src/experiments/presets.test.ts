import { describe, expect, it } from 'vitest';
import { deepMerge } from '../config/config-flags.ts';
import { parseTrainConfig } from '../config/load-config.ts';
import { getPreset, presetNames } from './presets.ts';
import { withTokenizer } from './preset-tokenizer.ts';
import { SftConfigSchema } from './sft-config.ts';
import { systemOverrides } from './systems.ts';
import { getFamily } from '../env/registry.ts';

describe('reproduce presets', () => {
  it.each(presetNames())(
    '%s: every stage config parses, and RL starts from a checkpoint of the same model',
    async (name) => {
      const p = getPreset(name);
      for (const env of p.envs) {
        const family = getFamily(env);
        const sftKnobs = p.knobs?.[env] ?? {};
        const knobs = { ...sftKnobs, ...(p.rlKnobs?.[env] ?? {}) };
        expect(() => family.create(knobs)).not.toThrow();
        const sft = SftConfigSchema.parse({ ...p.sft, env: { name: env, knobs: sftKnobs }, seed: p.seeds[0] });
        for (const system of p.systems) {
          const train = parseTrainConfig(
            deepMerge(
              deepMerge(p.train, { env: { name: env, knobs }, seed: p.seeds[0] }),
              systemOverrides(system, p.train),
            ),
            name,
          );
          expect(train.model.preset).toBe(sft.model.preset);
          // The base's positions cover every system's C: C itself, and 2C for the 2x-context system.
          const C = sft.rollout.contextWindow ?? 256;
          const positions = Math.max(C, sft.model.maxSeqLen ?? 0);
          expect(train.rollout.contextWindow ?? 256).toBeLessThanOrEqual(positions);
          if (system === 'ppo-single-window-2x') {
            expect(train.rollout.contextWindow).toBe(2 * C);
            expect(train.rollout.maxWindows).toBe(1);
          } else expect(train.rollout.contextWindow ?? 256).toBe(C);
        }
      }
      expect(p.systems.length).toBeGreaterThan(0);
    },
  );

  // table4-mixed reuses the quick preset's base and its seed 0: same SFT config, same RL config per system.
  it('table4-mixed: the quick preset with one shared base and five RL seeds', () => {
    const quick = getPreset('quick');
    const t4 = getPreset('table4-mixed');
    expect(t4.baseSeed).toBe(0);
    expect(t4.seeds).toEqual([0, 1, 2, 3, 4]);
    expect(t4.sft).toEqual(quick.sft);
    expect(t4.knobs).toEqual(quick.knobs);
    expect(t4.train).toEqual(quick.train);
    expect(t4.eval.windows).toEqual(quick.eval.windows);
    expect(t4.systems.every((s) => quick.systems.includes(s))).toBe(true);
  });

  it('a subword tokenizer scales the token counts and writes kv-ledger values as words; word changes nothing', () => {
    const quick = getPreset('quick');
    expect(withTokenizer(quick, 'word')).toBe(quick);
    const q = withTokenizer(quick, 'qwen3');
    expect(q.knobs?.['kv-ledger']).toEqual({ ...quick.knobs?.['kv-ledger'], valueWords: true });
    expect(q.sft.rollout?.contextWindow).toBe(461);
    expect(q.train.tokenizer).toBe('qwen3');
    const terminal = getPreset('terminal');
    expect(withTokenizer(terminal, 'qwen3').knobs).toEqual(terminal.knobs);
  });

  // Slips (docs/decisions/0028) make the full preset's base err where it acts; the other presets keep the plain expert.
  it("only the full preset's demonstrator slips: 0.2, kv-ledger 0.1", () => {
    const full = getPreset('full');
    expect(full.sft.slipP).toBe(0.2);
    expect(full.sftByEnv?.['kv-ledger']?.slipP).toBe(0.1);
    for (const name of ['quick', 'table4', 'table4-mixed', 'terminal'])
      expect(getPreset(name).sft.slipP).toBeUndefined();
  });

  it('an unknown preset names the valid ones', () => {
    expect(() => getPreset('nope')).toThrow(/quick, full, table4, table4-mixed, smoke, terminal/);
  });
});
