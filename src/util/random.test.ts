import { describe, expect, it } from 'vitest';
import { mixSeed, mixSeedOf } from './random.ts';

describe('mixSeedOf', () => {
  it('is mixSeed over the seed, the key code units and the values, without spreading them into arguments', () => {
    const tokens = Array.from({ length: 200_000 }, (_, i) => (i * 7919) % 151_936); // longer than an argument list may be
    expect(mixSeedOf(3, 'it2-ep5', [11, 12])).toBe(mixSeed(3, ...[...'it2-ep5'].map((c) => c.charCodeAt(0)), 11, 12));
    expect(mixSeedOf(3, 'it2-ep5', tokens)).not.toBe(mixSeedOf(3, 'it2-ep6', tokens));
    expect(mixSeedOf(3, 'it2-ep5', tokens)).not.toBe(mixSeedOf(4, 'it2-ep5', tokens));
    expect(mixSeedOf(3, 'it2-ep5', tokens)).not.toBe(mixSeedOf(3, 'it2-ep5', tokens.slice(1)));
  });
});
