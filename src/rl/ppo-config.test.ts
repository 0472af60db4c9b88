import { describe, expect, it } from 'vitest';
import { parsePpoConfig } from './ppo-config.ts';

describe('PpoConfig (method §5-6 defaults)', () => {
  it('parse({}) gives the paper defaults: KL and entropy 0, token-mean, summaries on, whitening on, 2 critic updates; warm-up 2 (sized for short runs)', () => {
    expect(parsePpoConfig({})).toEqual({
      epochs: 1,
      minibatchTokens: 4096,
      clipLow: 0.2,
      clipHigh: 0.2,
      valueClip: 0.2,
      klCoef: 0,
      entropyCoef: 0,
      lossAggregation: 'token-mean',
      trainSummaries: true,
      criticWarmupIterations: 2,
      criticUpdatesPerPolicyUpdate: 2,
      whitenAdvantages: true,
      targetKl: null,
      mergePrefixes: true,
    });
  });
  it('rejects unknown keys and bad values with a readable message', () => {
    expect(() => parsePpoConfig({ lr: 1 })).toThrow(/invalid PPO config[\s\S]*lr/);
    expect(() => parsePpoConfig({ epochs: 0 })).toThrow(/epochs/);
    expect(() => parsePpoConfig({ lossAggregation: 'sum' })).toThrow(/lossAggregation/);
  });
});
