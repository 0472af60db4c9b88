import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { budgetTerms, overFamilySizes, resolveRolloutConfig, RolloutConfigError } from './config.ts';

const source = loadTokenizer('word');

function errorOf(input: unknown): RolloutConfigError {
  try {
    resolveRolloutConfig({ tokenizer: source, input });
  } catch (e) {
    if (e instanceof RolloutConfigError) return e;
    throw e;
  }
  throw new Error('expected the config to be rejected');
}

describe('RolloutConfig', () => {
  it('accepts the defaults and fills them in', () => {
    const { config, layout } = resolveRolloutConfig({ tokenizer: source });
    expect(config).toMatchObject({
      contextWindow: 256,
      compactThreshold: 112,
      tailSteps: 2,
      maxWindows: 4,
      summaryMaxTokens: 48,
      maxActionTokens: 12,
      maxObservationTokens: 32,
      stepLimit: 64,
      resume: { includeTask: false },
    });
    const b = budgetTerms(config, layout);
    expect(b.requiredThreshold).toBeLessThanOrEqual(config.compactThreshold);
    expect(b.resumeStart).toBeLessThanOrEqual(b.startRoom);
  });

  it('rejects a threshold that could overflow, naming the numbers to change', () => {
    const e = errorOf({ compactThreshold: 96 });
    // 12 + 2 + 32 + 2 + |q_sum| 13 + 48 = 109
    expect(e.message).toContain('compactThreshold (T_comp) = 96');
    expect(e.message).toContain('summaryMaxTokens 48');
    expect(e.message).toContain('Raise compactThreshold to 109');
    expect(e.message).toContain('by 13');
  });

  it('accepts the threshold exactly at the bound and rejects one below', () => {
    expect(() => resolveRolloutConfig({ tokenizer: source, input: { compactThreshold: 109 } })).not.toThrow();
    expect(() => resolveRolloutConfig({ tokenizer: source, input: { compactThreshold: 108 } })).toThrow(
      RolloutConfigError,
    );
  });

  it('rejects a window too small to start after a compaction', () => {
    const e = errorOf({ contextWindow: 160 });
    expect(e.message).toContain('contextWindow (C) = 160');
    expect(e.message).toMatch(/Raise contextWindow to \d+/);
  });

  it('rejects unknown keys and bad types with their path', () => {
    expect(errorOf({ contextWindw: 300 }).message).toContain('contextWindw');
    expect(errorOf({ resume: { includeTask: 'yes' } }).message).toContain('resume.includeTask');
  });

  it('rejects template words outside the vocabulary', () => {
    expect(errorOf({ templates: { system: 'you are a wizard' } }).message).toContain('wizard');
  });

  describe("overFamilySizes: a family's sizes under the flags", () => {
    const family = {
      contextWindow: 8192,
      compactThreshold: 2048,
      maxActionTokens: 384,
      maxObservationTokens: 1024,
      summaryMaxTokens: 512,
    };

    it('fills the fields the input leaves unset, and given fields win', () => {
      expect(overFamilySizes(family, {})).toEqual(family);
      expect(overFamilySizes(family, { contextWindow: undefined, stepLimit: 9 })).toEqual({ ...family, stepLimit: 9 });
      expect(overFamilySizes(undefined, { contextWindow: 512 })).toEqual({ contextWindow: 512 });
      expect(overFamilySizes(family, { contextWindow: 2048, maxActionTokens: 50 }).maxActionTokens).toBe(50);
    });

    it('a smaller C scales the caps by the ratio and keeps the margin of T_comp over their sum', () => {
      // caps 384 + 1024 + 512 = 1920 under T_comp 2048: a margin of 128 that does not scale.
      expect(overFamilySizes(family, { contextWindow: 2048 })).toEqual({
        contextWindow: 2048,
        maxActionTokens: 96,
        maxObservationTokens: 256,
        summaryMaxTokens: 128,
        compactThreshold: 96 + 256 + 128 + 128,
      });
      // A given T_comp is kept as given; caps never fall below one token.
      const tiny = overFamilySizes(family, { contextWindow: 1, compactThreshold: 5 });
      expect(tiny).toMatchObject({
        maxActionTokens: 1,
        maxObservationTokens: 1,
        summaryMaxTokens: 1,
        compactThreshold: 5,
      });
    });

    it('the scaled sizes resolve to a valid config', () => {
      const input = overFamilySizes(family, { contextWindow: 4096 });
      expect(() => resolveRolloutConfig({ tokenizer: source, input })).not.toThrow();
    });
  });
});
