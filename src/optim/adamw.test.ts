import { describe, expect, it } from 'vitest';
import { AdamW } from './adamw.ts';
import { clipGradNorm, gradNorm } from './clip.ts';
import { DEFAULT_OPTIMIZER, parseOptimizerConfig } from './config.ts';
import { learningRate } from './schedule.ts';

describe('learning-rate schedule', () => {
  const cfg = { lr: 1, warmupSteps: 4, totalSteps: 14, minLrRatio: 0.1 };
  it('warms up linearly, then follows a cosine down to lr * minLrRatio', () => {
    expect(learningRate(cfg, 0)).toBeCloseTo(0.25, 12);
    expect(learningRate(cfg, 3)).toBeCloseTo(1, 12);
    expect(learningRate(cfg, 4)).toBeCloseTo(1, 12);
    expect(learningRate(cfg, 9)).toBeCloseTo(0.55, 12);
    expect(learningRate(cfg, 14)).toBeCloseTo(0.1, 12);
    expect(learningRate(cfg, 100)).toBeCloseTo(0.1, 12);
  });
});

describe('gradient clipping', () => {
  it('scales to the max norm and reports the norm before clipping', () => {
    const g = new Float32Array([3, 4]);
    expect(clipGradNorm(g, 1)).toBeCloseTo(5, 6);
    expect(gradNorm(g)).toBeCloseTo(1, 5);
    const h = new Float32Array([0.3, 0.4]);
    clipGradNorm(h, 1);
    expect(Array.from(h)).toEqual([Math.fround(0.3), Math.fround(0.4)]);
  });
});

describe('AdamW', () => {
  it('first step moves each parameter by lr * sign(grad); decay only where marked', () => {
    const cfg = { ...DEFAULT_OPTIMIZER, lr: 0.1, warmupSteps: 0, gradClip: 0, weightDecay: 0.5 };
    const opt = new AdamW({
      cfg,
      size: 4,
      ranges: [
        { offset: 0, size: 2, decay: true },
        { offset: 2, size: 2, decay: false },
      ],
    });
    const p = new Float32Array([1, 1, 1, 1]);
    const g = new Float32Array([2, -3, 2, -3]);
    const { lr } = opt.step(p, g);
    expect(lr).toBeCloseTo(0.1, 12);
    // decoupled decay: p *= 1 - lr * wd, then the Adam step of size lr (|m_hat / sqrt(v_hat)| = 1).
    expect(p[0]).toBeCloseTo(1 * (1 - 0.05) - 0.1, 5);
    expect(p[1]).toBeCloseTo(1 * (1 - 0.05) + 0.1, 5);
    expect(p[2]).toBeCloseTo(0.9, 5);
    expect(p[3]).toBeCloseTo(1.1, 5);
    expect(Array.from(g)).toEqual([0, 0, 0, 0]);
    expect(opt.state.step).toBe(1);
  });

  it('decays exactly the parameters some decay range covers: unsorted, overlapping, with gaps', () => {
    const cfg = { ...DEFAULT_OPTIMIZER, lr: 0.1, warmupSteps: 0, gradClip: 0, weightDecay: 0.5 };
    const ranges = [
      { offset: 6, size: 3, decay: true },
      { offset: 1, size: 2, decay: true },
      { offset: 2, size: 2, decay: true },
      { offset: 4, size: 1, decay: false },
    ];
    const decayed = new Set([1, 2, 3, 6, 7, 8]);
    const opt = new AdamW({ cfg, size: 10, ranges });
    const p = new Float32Array(10).fill(1);
    opt.step(p, new Float32Array(10).fill(2));
    // Without decay: 1 - 0.1; with it: 1 * (1 - 0.05) - 0.1.
    const want = Array.from({ length: 10 }, (_, i) => (decayed.has(i) ? 0.85 : 0.9));
    Array.from(p).forEach((x, i) => expect(x).toBeCloseTo(want[i]!, 6));
  });

  it('minimises a quadratic', () => {
    const cfg = { ...DEFAULT_OPTIMIZER, lr: 0.05, warmupSteps: 0, totalSteps: 500, gradClip: 0, weightDecay: 0 };
    const opt = new AdamW({ cfg, size: 3, ranges: [] });
    const p = new Float32Array([3, -2, 0.5]);
    const g = new Float32Array(3);
    for (let i = 0; i < 400; i++) {
      for (let j = 0; j < 3; j++) g[j] = 2 * (p[j]! - j);
      opt.step(p, g);
    }
    for (let j = 0; j < 3; j++) expect(Math.abs(p[j]! - j)).toBeLessThan(1e-2);
  });

  it('skips the update on a non-finite gradient and zeroes the gradient', () => {
    const opt = new AdamW({ cfg: { ...DEFAULT_OPTIMIZER, warmupSteps: 0 }, size: 2, ranges: [] });
    const p = new Float32Array([1, 2]);
    const g = new Float32Array([NaN, 1]);
    expect(Number.isNaN(opt.step(p, g).gradNorm)).toBe(true);
    expect(Array.from(p)).toEqual([1, 2]);
    expect(Array.from(g)).toEqual([0, 0]);
    expect(opt.state.step).toBe(0);
  });

  it('rejects unknown config keys with a clear message', () => {
    expect(() => parseOptimizerConfig({ ...DEFAULT_OPTIMIZER, lrr: 1 })).toThrow(/invalid optimizer config/);
  });

  it('leaves a frozen range untouched in params, grads and moments, and clips as clipGradNorm does, bit for bit', () => {
    const cfg = { ...DEFAULT_OPTIMIZER, lr: 0.1, warmupSteps: 0, gradClip: 0.5, weightDecay: 0.1 };
    const ranges = [{ offset: 0, size: 6, decay: true }];
    const frozen = new AdamW({ cfg, size: 6, ranges: [...ranges, { offset: 2, size: 2, decay: false, frozen: true }] });
    const plain = new AdamW({ cfg: { ...cfg, gradClip: 0 }, size: 6, ranges });
    const p = new Float32Array([0.5, -0.25, 7, 8, 1.5, -2]);
    const q = Float32Array.from(p);
    const g = new Float32Array([0.3, -1.7, 0, 0, 2.9, 0.11]); // no gradient reaches the frozen range
    const clipped = Float32Array.from(g);
    const norm = clipGradNorm(clipped, 0.5);
    expect(frozen.step(p, g).gradNorm).toBe(norm);
    plain.step(q, clipped);
    expect(Array.from(p.subarray(2, 4))).toEqual([7, 8]);
    expect(Array.from(frozen.state.m.subarray(2, 4))).toEqual([0, 0]);
    for (const k of [0, 1, 4, 5]) expect(p[k]).toBe(q[k]);
  });
});
