import { Rng } from '../util/random.ts';

/**
 * Test helper: central finite differences of a scalar loss with respect to one buffer, compared
 * with an analytic gradient. Float32 buffers, so a largish step and a relative tolerance; a wrong
 * backward is off by O(1), a right one by ~1e-3.
 */
export function randomBuffer(rng: Rng, n: number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = rng.normal() * scale;
  return out;
}

/** Uniform in [-scale, scale): the native-vs-TypeScript kernel tests' inputs. */
export function uniformBuffer(rng: Rng, n: number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (rng.next() * 2 - 1) * scale;
  return out;
}

/** max |x - y| / (1 + |y|): relative for large values, absolute near zero. */
export function maxRelDiff(x: Float32Array, y: Float32Array): number {
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]! - y[i]!) / (1 + Math.abs(y[i]!)));
  return m;
}

/** Sum of out * w in float64: the probe loss whose dL/dout is w. */
export function dot64(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

export interface FdCheck {
  maxAbsDiff: number;
  maxAbsGrad: number;
  /** maxAbsDiff / max(1e-3, maxAbsGrad) */
  relError: number;
}

export function finiteDiffCheck({
  x,
  analytic,
  loss,
  eps = 1e-2,
  maxProbes = 64,
  rng,
}: {
  x: Float32Array;
  analytic: Float32Array;
  loss: () => number;
  eps?: number;
  maxProbes?: number;
  rng: Rng;
}): FdCheck {
  let maxAbsDiff = 0;
  let maxAbsGrad = 0;
  for (let i = 0; i < analytic.length; i++) maxAbsGrad = Math.max(maxAbsGrad, Math.abs(analytic[i]!));
  const idx =
    x.length <= maxProbes
      ? Array.from({ length: x.length }, (_, i) => i)
      : Array.from({ length: maxProbes }, () => rng.int(x.length));
  for (const i of idx) {
    const orig = x[i]!;
    x[i] = orig + eps;
    const lp = loss();
    x[i] = orig - eps;
    const lm = loss();
    x[i] = orig;
    const num = (lp - lm) / (2 * eps);
    maxAbsDiff = Math.max(maxAbsDiff, Math.abs(num - analytic[i]!));
  }
  return { maxAbsDiff, maxAbsGrad, relError: maxAbsDiff / Math.max(1e-3, maxAbsGrad) };
}
