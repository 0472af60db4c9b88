/** The issue-3 contract is reachable through src/index.ts with its exact option names. */
import { describe, expect, it } from 'vitest';
import { aggregateLoss, computeSegmentAdvantages, type SegmentAdvantageInput } from '../index.ts';

describe('rl public API (src/index.ts)', () => {
  it('computeSegmentAdvantages and aggregateLoss work through the index', () => {
    const segments: SegmentAdvantageInput[] = [
      { kind: 'execution', values: Float32Array.from([0, 0.25]), lossMask: Uint8Array.from([0, 1]) },
      { kind: 'summary', values: Float32Array.from([0, 0.5]), lossMask: Uint8Array.from([0, 1]) },
    ];
    const { advantages, returns } = computeSegmentAdvantages({
      segments,
      reward: 1,
      gamma: 1,
      lambda: 0.5,
      lambdaCritic: 1,
      crossTrajectory: true,
    });
    expect(advantages[0]![1]).toBeCloseTo(0.75 * 0.5, 6); // (R - V) * (gamma*lambda)^1
    expect(returns[0]![1]).toBeCloseTo(1, 6);
    expect(
      aggregateLoss({ perToken: advantages, masks: segments.map((s) => s.lossMask), mode: 'token-mean' }),
    ).toBeCloseTo((0.375 + 0.5) / 2, 6);
  });
});
