import { describe, expect, it } from 'vitest';
import { whitenAdvantages, whiteningMode, WHITENING_MODES, type WhitenSegment } from './whitening.ts';
import { maskedWhiten } from './whiten.ts';

// Generated values: exec [1, 3] (2 segments follow), summary [10] (1 follows), exec [2, 4, 6] (last).
const values = [Float32Array.from([0, 1, 3]), Float32Array.from([0, 10]), Float32Array.from([2, 4, 0, 6])];
const masks = [Uint8Array.from([0, 1, 1]), Uint8Array.from([0, 1]), Uint8Array.from([1, 1, 0, 1])];
const segments: WhitenSegment[] = [
  { kind: 'execution', segmentsAfter: 2 },
  { kind: 'summary', segmentsAfter: 1 },
  { kind: 'execution', segmentsAfter: 0 },
];
const run = (mode: string) =>
  whitenAdvantages({ values, masks, segments, mode: whiteningMode(mode) }).map((x) => Array.from(x));
const near = (got: number[][], want: number[][]) =>
  want.forEach((row, s) => row.forEach((x, t) => expect(got[s]![t]).toBeCloseTo(x, 5)));

describe('whitenAdvantages', () => {
  it("'none' returns the advantages untouched; 'batch' is method §4's maskedWhiten over everything", () => {
    expect(run('none')).toEqual(values.map((x) => Array.from(x)));
    expect(run('batch')).toEqual(maskedWhiten({ values, masks }).map((x) => Array.from(x)));
    expect(whiteningMode(true)).toBe('batch');
    expect(whiteningMode(false)).toBe('none');
  });

  it("'per-kind': execution tokens [1, 3, 2, 4, 6] (mean 3.2, std sqrt(3.7)) apart from the lone summary token", () => {
    const sd = Math.sqrt(3.7);
    near(run('per-kind'), [
      [0, -2.2 / sd, -0.2 / sd],
      [0, 0],
      [-1.2 / sd, 0.8 / sd, 0, 2.8 / sd],
    ]);
  });

  it("'per-position': groups by segments after; [1, 3] -> -+1/sqrt2, [2, 4, 6] -> -1, 0, 1", () => {
    near(run('per-position'), [
      [0, -Math.SQRT1_2, Math.SQRT1_2],
      [0, 0],
      [-1, 0, 0, 1],
    ]);
    expect(() =>
      whitenAdvantages({ values, masks, segments: segments.map((s) => ({ kind: s.kind })), mode: 'per-position' }),
    ).toThrow(/segments\[0\]\.segmentsAfter/);
  });

  it('rejects an unknown mode with the valid list', () => {
    expect(WHITENING_MODES).toEqual(['none', 'batch', 'per-kind', 'per-position']);
    expect(() => whiteningMode('per-episode')).toThrow(
      /unknown whitening 'per-episode'; valid: true, false, none, batch, per-kind, per-position/,
    );
  });
});
