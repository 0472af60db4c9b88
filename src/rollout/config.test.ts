import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/load-tokenizer.ts';
import { budgetTerms, resolveRolloutConfig, RolloutConfigError } from './config.ts';

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
});
