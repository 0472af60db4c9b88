import { describe, expect, it } from 'vitest';
import { configDifferences } from './config-diff.ts';

describe('configDifferences', () => {
  it('names each differing leaf with both values, and nothing when equal', () => {
    const stored = { env: { name: 'kv-ledger', knobs: { chunks: 4 } }, seed: 0, lr: 1e-3 };
    expect(configDifferences(stored, structuredClone(stored))).toEqual([]);
    expect(configDifferences(stored, { env: { name: 'nope', knobs: {} }, seed: 0, lr: 1e-3, epochs: 2 })).toEqual([
      'env.knobs.chunks: stored 4, now (unset)',
      'env.name: stored "kv-ledger", now "nope"',
      'epochs: stored (unset), now 2',
    ]);
    expect(configDifferences({ xs: [1, 2] }, { xs: [1, 3] })).toEqual(['xs: stored [1,2], now [1,3]']);
  });
});
