import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { uniformBuffer as buf } from '../../tensor/finite-diff.ts';
import { nativeOps } from '../../tensor/native-ops.ts';
import { Rng } from '../../util/random.ts';
import { extendAttention, writeKv } from './decode-attention.ts';

const requireNative = process.env.CRL_REQUIRE_NATIVE === '1';

/**
 * The prefill's native attention (every request of a kv-extend.ts call in one call) against the
 * TypeScript loop it replaces: writeKv + extendAttention per request. Same products and the same
 * double-precision softmax, so the caches and outputs must be equal bit for bit.
 */
describe.skipIf(!nativeOps && !requireNative)('native extend attention vs the TypeScript loop', () => {
  it('writes the same caches and attends to the same outputs, grouped-query attention included', () => {
    fc.assert(
      fc.property(
        fc.record({
          hkv: fc.integer({ min: 1, max: 3 }),
          groups: fc.constantFrom(1, 2, 4),
          d: fc.constantFrom(2, 8, 16, 17, 32),
          s: fc.integer({ min: 8, max: 90 }),
          requests: fc.integer({ min: 1, max: 4 }),
          seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        }),
        ({ hkv, groups, d, s, requests, seed }) => {
          const step = nativeOps!.extendAttentionStep;
          expect(step).not.toBeNull();
          const rng = new Rng(seed);
          const h = hkv * groups;
          const w = (h + 2 * hkv) * d;
          const slotsTotal = requests + 1;
          const slots = Int32Array.from(
            rng.shuffle(Array.from({ length: slotsTotal }, (_, i) => i)).slice(0, requests),
          );
          const prefixes = Int32Array.from(slots, () => rng.int(s - 1));
          const starts = new Int32Array(requests + 1);
          for (let i = 0; i < requests; i++) starts[i + 1] = starts[i]! + 1 + rng.int(Math.min(30, s - prefixes[i]!));
          const n = starts[requests]!;
          const qkv = buf(rng, n * w, 2);
          const kc = buf(rng, slotsTotal * hkv * s * d, 1);
          const vc = buf(rng, slotsTotal * hkv * s * d, 1);
          const ref = { kc: kc.slice(), vc: vc.slice(), out: new Float32Array(n * h * d) };
          let maxU = 0;
          for (let i = 0; i < requests; i++) maxU = Math.max(maxU, starts[i + 1]! - starts[i]!);
          const scratch = new Float32Array(h * maxU * s);
          for (let i = 0; i < requests; i++) {
            const u = starts[i + 1]! - starts[i]!;
            for (let t = 0; t < u; t++) {
              const one = { row: qkv, rowOffset: (starts[i]! + t) * w, slot: slots[i]!, pos: prefixes[i]! + t };
              writeKv({ kc: ref.kc, vc: ref.vc, ...one, s, h, hkv, d });
            }
            const req = { row0: starts[i]!, u, prefix: prefixes[i]!, slot: slots[i]! };
            extendAttention({ qkv, ...req, kc: ref.kc, vc: ref.vc, s, h, hkv, d, scratch, out: ref.out });
          }
          const out = new Float32Array(n * h * d);
          step!({ qkv, starts, prefixes, slots, r: requests, kc, vc, s, h, hkv, d, out });
          expect(Array.from(kc)).toEqual(Array.from(ref.kc));
          expect(Array.from(vc)).toEqual(Array.from(ref.vc));
          expect(Array.from(out)).toEqual(Array.from(ref.out));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('rejects a request that would write past its slot', () => {
    const step = nativeOps!.extendAttentionStep!;
    const args = {
      qkv: new Float32Array(4 * 3 * 8),
      starts: Int32Array.from([0, 4]),
      prefixes: Int32Array.from([6]),
      slots: Int32Array.from([0]),
      r: 1,
      kc: new Float32Array(8 * 8),
      vc: new Float32Array(8 * 8),
      s: 8,
      h: 1,
      hkv: 1,
      d: 8,
      out: new Float32Array(4 * 8),
    };
    expect(() => step(args)).toThrow(/outside the cache/);
  });
});
