/**
 * The native GEMM against its TypeScript twin (gemmRef): every native kernel is checked
 * against its TypeScript twin on random shapes including odd sizes, transposes and batches.
 * Skipped when the addon is unavailable unless CRL_REQUIRE_NATIVE=1 (CI's native leg sets it,
 * so a silently failed build cannot pass as green).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { gemm, gemmBackend, startGemmProfile, stopGemmProfile } from './gemm.ts';
import { gemmRef, type GemmArgs } from './gemm-ref.ts';
import { nativeStatus } from './native.ts';
import { packWeight } from './packed-weight.ts';

const requireNative = process.env.CRL_REQUIRE_NATIVE === '1';
const native = nativeStatus().available;

function filled(len: number, rng: Rng): Float32Array {
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) out[i] = rng.next() * 2 - 1;
  return out;
}

interface Case {
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  accumulate: boolean;
  alpha: number;
  padA: number;
  padB: number;
  padC: number;
  offA: number;
  offB: number;
  offC: number;
  batch: number;
  seed: number;
}

/** Builds buffers with padding, offsets and batch gaps, so out-of-region writes are visible. */
function build(cs: Case): GemmArgs {
  const rng = new Rng(cs.seed);
  const lda = (cs.transA ? cs.m : cs.k) + cs.padA;
  const ldb = (cs.transB ? cs.k : cs.n) + cs.padB;
  const ldc = cs.n + cs.padC;
  const sizeA = (cs.transA ? cs.k : cs.m) * lda;
  const sizeB = (cs.transB ? cs.n : cs.k) * ldb;
  const sizeC = cs.m * ldc;
  // Batch strides leave a gap of 3 floats so a write past one batch element lands in the gap.
  const strideA = sizeA + 3,
    strideB = sizeB + 3,
    strideC = sizeC + 3;
  return {
    a: filled(cs.offA + cs.batch * strideA, rng),
    b: filled(cs.offB + cs.batch * strideB, rng),
    c: filled(cs.offC + cs.batch * strideC, rng),
    m: cs.m,
    n: cs.n,
    k: cs.k,
    transA: cs.transA,
    transB: cs.transB,
    accumulate: cs.accumulate,
    alpha: cs.alpha,
    lda,
    ldb,
    ldc,
    offA: cs.offA,
    offB: cs.offB,
    offC: cs.offC,
    batch: cs.batch,
    strideA,
    strideB,
    strideC,
  };
}

/** Max |native - ref| over all of C (padding included) and the tolerance it must meet. */
function compare(cs: Case): { maxDiff: number; tol: number } {
  const args = build(cs);
  const expected = args.c.slice();
  gemmRef({ ...args, c: expected });
  gemm(args);
  let maxDiff = 0;
  for (let i = 0; i < expected.length; i++) maxDiff = Math.max(maxDiff, Math.abs(args.c[i]! - expected[i]!));
  // Inputs lie in [-1, 1]: each output is a k-term float32 sum of terms <= |alpha|, plus C.
  return { maxDiff, tol: 1e-5 * Math.max(1, cs.k) * Math.max(1, Math.abs(cs.alpha)) };
}

const base: Case = {
  m: 1,
  n: 1,
  k: 1,
  transA: false,
  transB: false,
  accumulate: false,
  alpha: 1,
  padA: 0,
  padB: 0,
  padC: 0,
  offA: 0,
  offB: 0,
  offC: 0,
  batch: 1,
  seed: 1,
};

const oddSize = fc.oneof(fc.constantFrom(1, 3, 17, 31, 33, 65), fc.integer({ min: 1, max: 80 }));
const caseArb: fc.Arbitrary<Case> = fc.record({
  m: oddSize,
  n: oddSize,
  k: fc.oneof(fc.constant(0), oddSize),
  transA: fc.boolean(),
  transB: fc.boolean(),
  accumulate: fc.boolean(),
  alpha: fc.constantFrom(1, -0.5, 2, 0),
  padA: fc.constantFrom(0, 0, 5),
  padB: fc.constantFrom(0, 0, 7),
  padC: fc.constantFrom(0, 0, 3),
  offA: fc.constantFrom(0, 11),
  offB: fc.constantFrom(0, 13),
  offC: fc.constantFrom(0, 2),
  batch: fc.integer({ min: 1, max: 3 }),
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
});

describe.skipIf(!native && !requireNative)('native gemm vs gemmRef', () => {
  it('is the backend in use', () => {
    expect(nativeStatus()).toEqual({ available: true });
    expect(gemmBackend()).toBe('native');
  });

  it('agrees on random shapes, transposes, strides, offsets, alpha, accumulate and batches', () => {
    fc.assert(
      fc.property(caseArb, (cs) => {
        const { maxDiff, tol } = compare(cs);
        expect(maxDiff).toBeLessThanOrEqual(tol);
      }),
      { numRuns: 300 },
    );
  });

  // Shapes chosen to cross every blocking boundary (MR 12, NR 32, KC 256, MC 192, NC 4096), the
  // in-place-B path for short A, and the two-thread splits (by rows, by columns, by batch).
  const named: Array<[string, Partial<Case>]> = [
    ['k across two KC blocks', { m: 30, n: 40, k: 600 }],
    ['m across MC blocks, 2 threads by rows', { m: 500, n: 70, k: 90 }],
    ['n across NC blocks', { m: 5, n: 4200, k: 9 }],
    ['2 threads by columns, transposed', { m: 50, n: 700, k: 100, transA: true, transB: true }],
    ['2 threads by batch, accumulate', { m: 64, n: 64, k: 64, batch: 8, accumulate: true, alpha: 0.25 }],
    ['odd batch split inside each element', { m: 97, n: 129, k: 130, batch: 3, padC: 4, offC: 5 }],
    ['short A reads B in place (full panels)', { m: 7, n: 96, k: 50, padB: 3 }],
    ['short A reads B in place (ragged panel)', { m: 24, n: 100, k: 257, accumulate: true, padB: 1 }],
    ['attention-like strided heads', { m: 64, n: 64, k: 32, transB: true, padA: 96, padB: 96, batch: 4 }],
  ];
  for (const [name, over] of named) {
    it(name, () => {
      const { maxDiff, tol } = compare({ ...base, ...over, seed: 7 });
      expect(maxDiff).toBeLessThanOrEqual(tol);
    });
  }

  it('is batch invariant: a row gives bit-identical results alone and inside any larger product', () => {
    // x @ W^T as the model calls it (weights [out, in]); k > KC and m across every path/split.
    const rng = new Rng(11);
    const k = 300,
      n = 200;
    const w = filled(n * k, rng);
    const x = filled(700 * k, rng);
    const row = 5;
    const alone = new Float32Array(n);
    gemm({ a: x, b: w, c: alone, m: 1, n, k, transB: true, offA: row * k });
    for (const m of [6, 13, 24, 25, 200, 700]) {
      const c = new Float32Array(m * n);
      gemm({ a: x, b: w, c, m, n, k, transB: true });
      expect(Array.from(c.subarray(row * n, row * n + n))).toEqual(Array.from(alone));
    }
  });

  it('with a pre-packed weight gives bit-identical results on every path (few rows, many, wide, K > KC)', () => {
    const rng = new Rng(12);
    fc.assert(
      fc.property(
        fc.record({
          m: fc.oneof(fc.constantFrom(1, 2, 12, 13, 24, 25, 64), fc.integer({ min: 1, max: 90 })),
          n: fc.oneof(fc.constantFrom(1, 31, 32, 33, 768), fc.integer({ min: 1, max: 200 })),
          k: fc.constantFrom(1, 7, 128, 256, 257, 300),
          accumulate: fc.boolean(),
          alpha: fc.constantFrom(1, -0.5),
          lda: fc.constantFrom(0, 3),
        }),
        ({ m, n, k, accumulate, alpha, lda }) => {
          const w = filled(n * k, rng);
          const x = filled(m * (k + lda) + 5, rng);
          const c0 = filled(m * n + 4, rng);
          const args = { a: x, b: w, m, n, k, transB: true, accumulate, alpha, lda: k + lda, offA: 5, offC: 4 };
          const plain = c0.slice();
          gemm({ ...args, c: plain });
          const viaPacked = c0.slice();
          gemm({ ...args, c: viaPacked, packedB: packWeight({ weight: w, n, k }) });
          expect(Array.from(viaPacked)).toEqual(Array.from(plain));
        },
      ),
      { numRuns: 80 },
    );
    // Wider than one NC column block (4096 on AVX-512), so the packed panels of a later block are addressed.
    const n = 4200,
      k = 9,
      m = 40;
    const w = filled(n * k, rng);
    const x = filled(m * k, rng);
    const plain = new Float32Array(m * n);
    const viaPacked = new Float32Array(m * n);
    gemm({ a: x, b: w, c: plain, m, n, k, transB: true });
    gemm({ a: x, b: w, c: viaPacked, m, n, k, transB: true, packedB: packWeight({ weight: w, n, k }) });
    expect(Array.from(viaPacked)).toEqual(Array.from(plain));
  });

  it('reads subarray views at their byte offset (zero-copy)', () => {
    const rng = new Rng(3);
    const store = filled(1000, rng);
    const a = store.subarray(17, 17 + 6 * 5);
    const b = store.subarray(301, 301 + 5 * 4);
    const c = new Float32Array(64).subarray(9, 9 + 24);
    const expected = new Float32Array(24);
    gemmRef({ a, b, c: expected, m: 6, n: 4, k: 5 });
    gemm({ a, b, c, m: 6, n: 4, k: 5 });
    for (let i = 0; i < 24; i++) expect(Math.abs(c[i]! - expected[i]!)).toBeLessThanOrEqual(1e-5 * 5);
  });

  it('rejects buffers that are too small with a clear error instead of crashing', () => {
    const a = new Float32Array(10),
      b = new Float32Array(100),
      c = new Float32Array(100);
    expect(() => gemm({ a, b, c, m: 4, n: 4, k: 4 })).toThrow(/A too small/);
    expect(() => gemm({ a: b, b: a, c, m: 4, n: 4, k: 4 })).toThrow(/B too small/);
    expect(() => gemm({ a: b, b, c: a, m: 4, n: 4, k: 4 })).toThrow(/C too small/);
  });
});

describe('gemm profile', () => {
  it('records calls, FLOPs and time per shape while on, nothing once stopped', () => {
    const a = new Float32Array(6),
      b = new Float32Array(12),
      c = new Float32Array(8);
    startGemmProfile();
    gemm({ a, b, c, m: 2, n: 4, k: 3 });
    gemm({ a, b, c, m: 2, n: 4, k: 3 });
    gemm({ a: b, b: a, c, m: 4, n: 2, k: 3, transA: true, transB: true });
    const rows = new Map(stopGemmProfile());
    expect(rows.get('2x4x3 NN')).toMatchObject({ calls: 2, flops: 2 * 2 * 2 * 4 * 3 });
    expect(rows.get('4x2x3 TT')).toMatchObject({ calls: 1, flops: 2 * 4 * 2 * 3 });
    expect(rows.get('2x4x3 NN')!.ms).toBeGreaterThanOrEqual(0);
    gemm({ a, b, c, m: 2, n: 4, k: 3 });
    expect(stopGemmProfile()).toEqual([]);
  });
});
