/**
 * The fused native causal attention (native/src/attention.cc) against its TypeScript twin
 * (attentionForwardTs / attentionBackwardTs) on random packed layouts: odd lengths around the
 * 64-row query block, empty sequences, odd head dims (SIMD tails), 1-3 kv heads with 1-3 query
 * heads each (grouped-query attention). Both run the same
 * products in the same order, so they should agree to float rounding (the GEMM is batch
 * invariant); the tolerance is still explicit.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { attentionBackwardTs, attentionForwardTs, attentionLayout } from './attention.ts';
import { nativeOps } from './native-ops.ts';

import { maxRelDiff, uniformBuffer as buf } from './finite-diff.ts';

const requireNative = process.env.CRL_REQUIRE_NATIVE === '1';

const cases = fc.record({
  lengths: fc.array(fc.oneof(fc.constantFrom(0, 1, 2, 63, 64, 65, 129), fc.integer({ min: 1, max: 140 })), {
    minLength: 1,
    maxLength: 5,
  }),
  nKvHeads: fc.integer({ min: 1, max: 3 }),
  groups: fc.constantFrom(1, 1, 2, 3), // query heads per kv head (1: plain multi-head attention)
  headDim: fc.constantFrom(1, 5, 16, 17, 32, 33),
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
});

describe.skipIf(!nativeOps?.attentionForward && !requireNative)('native fused attention vs TypeScript', () => {
  it('is available', () => expect(nativeOps?.attentionForward).toBeTruthy());

  it('forward (out, probs) and backward (accumulated dqkv) match on random layouts', () => {
    let worst = 0;
    fc.assert(
      fc.property(cases, ({ lengths, nKvHeads, groups, headDim, seed }) => {
        const rng = new Rng(seed);
        const nHeads = nKvHeads * groups;
        const layout = attentionLayout({ lengths, nHeads });
        const n = lengths.reduce((s, l) => s + l, 0);
        const c = nHeads * headDim;
        const w = (nHeads + 2 * nKvHeads) * headDim;
        const qkv = buf(rng, n * w, 3);
        const args = { qkv, layout, nHeads, headDim, nKvHeads };
        // Garbage in the outputs' unused cells must not leak into results.
        const outN = buf(rng, n * c, 9),
          outT = outN.slice();
        const probsN = buf(rng, layout.probSize, 9),
          probsT = probsN.slice();
        nativeOps!.attentionForward!({ ...args, out: outN, probs: probsN });
        attentionForwardTs({ ...args, out: outT, probs: probsT });
        const dout = buf(rng, n * c, 1);
        const dqkvN = buf(rng, n * w, 1),
          dqkvT = dqkvN.slice();
        const scratch = new Float32Array(nHeads * layout.maxLen * layout.maxLen);
        nativeOps!.attentionBackward!({ ...args, dqkv: dqkvN, dout, probs: probsN, scratch });
        attentionBackwardTs({ ...args, dqkv: dqkvT, dout, probs: probsT, scratch });
        const diff = Math.max(maxRelDiff(outN, outT), maxRelDiff(probsN, probsT), maxRelDiff(dqkvN, dqkvT));
        worst = Math.max(worst, diff);
        expect(diff).toBeLessThan(1e-5);
      }),
      { numRuns: 60 },
    );
    console.log(`fused attention native vs TypeScript max rel diff ${worst.toExponential(2)}`);
  });

  it('spreads many sequences over both threads with the same results', () => {
    // ~16 x 256 x 4 heads (the reference training batch): large enough that the pool splits it;
    // one sequence longer than the GEMM's KC = 256 (the large model's ctx 512 takes that path).
    const rng = new Rng(3);
    const lengths = Array.from({ length: 16 }, (_, i) => (i === 0 ? 300 : 256 - 13 * i));
    const nHeads = 4,
      headDim = 32,
      c = nHeads * headDim;
    const layout = attentionLayout({ lengths, nHeads });
    const n = lengths.reduce((s, l) => s + l, 0);
    const qkv = buf(rng, n * 3 * c, 2);
    const outN = new Float32Array(n * c),
      outT = new Float32Array(n * c);
    const probsN = new Float32Array(layout.probSize),
      probsT = new Float32Array(layout.probSize);
    nativeOps!.attentionForward!({ out: outN, probs: probsN, qkv, layout, nHeads, headDim });
    attentionForwardTs({ out: outT, probs: probsT, qkv, layout, nHeads, headDim });
    expect(maxRelDiff(outN, outT)).toBeLessThan(1e-6);
    const dout = buf(rng, n * c, 1);
    const dqkvN = new Float32Array(n * 3 * c),
      dqkvT = new Float32Array(n * 3 * c);
    const scratch = new Float32Array(nHeads * 300 * 300);
    nativeOps!.attentionBackward!({ dqkv: dqkvN, dout, qkv, probs: probsN, scratch, layout, nHeads, headDim });
    attentionBackwardTs({ dqkv: dqkvT, dout, qkv, probs: probsT, scratch, layout, nHeads, headDim });
    expect(maxRelDiff(dqkvN, dqkvT)).toBeLessThan(1e-6);
  });

  it('rejects layouts and buffers that do not fit with a clear error', () => {
    const layout = attentionLayout({ lengths: [3, 2], nHeads: 2 });
    const c = 2 * 4;
    const ok = {
      qkv: new Float32Array(5 * 3 * c),
      out: new Float32Array(5 * c),
      probs: new Float32Array(layout.probSize),
      layout,
      nHeads: 2,
      headDim: 4,
    };
    expect(() => nativeOps!.attentionForward!({ ...ok, probs: new Float32Array(layout.probSize - 1) })).toThrow(
      /too small/,
    );
    expect(() => nativeOps!.attentionForward!({ ...ok, out: new Float32Array(4 * c) })).toThrow(/too small/);
    const overlapping = { ...layout, starts: Int32Array.from([0, 1]) };
    expect(() => nativeOps!.attentionForward!({ ...ok, layout: overlapping })).toThrow(/overlaps/);
  });
});
