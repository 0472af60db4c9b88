/**
 * Each native op against its TypeScript twin, on random shapes with odd sizes (SIMD
 * tails), offsets and values wide enough to reach exp's clamps. Prints the max difference.
 * One file over 300 lines on purpose: every op's check shares the same shape generators and
 * tolerance helper, and reading the ops side by side shows which one is tested how.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { nativeOps } from './native-ops.ts';
import { logprobForwardTs } from './logprob.ts';
import type { LogprobForwardArgs } from './op-args.ts';
import { rmsnormBackwardTs, rmsnormForwardTs } from './rmsnorm.ts';
import { ropeRotateTs, ropeTable } from './rope.ts';
import {
  causalSoftmaxBackwardTs as causalSoftmaxBackward,
  causalSoftmaxForwardTs as causalSoftmaxForward,
} from './softmax.ts';
import { swigluBackwardTs as swigluBackward, swigluForwardTs as swigluForward } from './swiglu.ts';

import { maxRelDiff, uniformBuffer as buf } from './finite-diff.ts';

const requireNative = process.env.CRL_REQUIRE_NATIVE === '1';

const dims = fc.record({
  n: fc.oneof(fc.constantFrom(1, 3, 17), fc.integer({ min: 1, max: 40 })),
  f: fc.oneof(fc.constantFrom(1, 15, 16, 17, 33), fc.integer({ min: 1, max: 100 })),
  scale: fc.constantFrom(0.5, 4, 30, 120),
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
});

describe.skipIf(!nativeOps && !requireNative)('native ops vs TypeScript twins', () => {
  const ops = nativeOps!;

  it('is available', () => expect(nativeOps).not.toBeNull());

  it('swiglu forward and backward', () => {
    let worst = 0;
    fc.assert(
      fc.property(dims, ({ n, f, scale, seed }) => {
        const rng = new Rng(seed);
        const inp = buf(rng, n * 2 * f, scale);
        const [outT, sigT, outN, sigN] = [0, 0, 0, 0].map(() => new Float32Array(n * f));
        swigluForward({ out: outT!, sig: sigT!, inp, n, f });
        ops.swigluForward({ out: outN!, sig: sigN!, inp, n, f });
        const dout = buf(rng, n * f, 1);
        const dinpT = buf(rng, n * 2 * f, 1);
        const dinpN = dinpT.slice();
        swigluBackward({ dinp: dinpT, dout, inp, sig: sigT!, n, f });
        ops.swigluBackward({ dinp: dinpN, dout, inp, sig: sigT!, n, f });
        const d = Math.max(maxRelDiff(outN!, outT!), maxRelDiff(sigN!, sigT!), maxRelDiff(dinpN, dinpT));
        worst = Math.max(worst, d);
        expect(d).toBeLessThan(2e-6);
      }),
      { numRuns: 150 },
    );
    console.log(`swiglu native vs TS max rel diff ${worst.toExponential(2)}`);
  });

  it('causal softmax forward and backward, at an offset, with the mask zeroed', () => {
    let worst = 0;
    fc.assert(
      fc.property(
        fc.record({
          blocks: fc.integer({ min: 1, max: 5 }),
          l: fc.oneof(fc.constantFrom(1, 2, 16, 17, 33), fc.integer({ min: 1, max: 70 })),
          off: fc.constantFrom(0, 5),
          scale: fc.constantFrom(1, 10, 100),
          seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        }),
        ({ blocks, l, off, scale, seed }) => {
          const rng = new Rng(seed);
          const size = off + blocks * l * l + 3; // 3 trailing guard floats must stay untouched
          const xT = buf(rng, size, scale);
          const xN = xT.slice();
          causalSoftmaxForward({ x: xT, offset: off, blocks, l });
          ops.causalSoftmaxForward({ x: xN, offset: off, blocks, l });
          const gT = buf(rng, size, 1);
          const gN = gT.slice();
          causalSoftmaxBackward({ grad: gT, gradOffset: off, probs: xT, probsOffset: off, blocks, l });
          ops.causalSoftmaxBackward({ grad: gN, gradOffset: off, probs: xT, probsOffset: off, blocks, l });
          const d = Math.max(maxRelDiff(xN, xT), maxRelDiff(gN, gT));
          worst = Math.max(worst, d);
          expect(d).toBeLessThan(2e-6);
        },
      ),
      { numRuns: 150 },
    );
    console.log(`causal softmax native vs TS max rel diff ${worst.toExponential(2)}`);
  });

  it('runs the multi-threaded path on large inputs with the same results', () => {
    const rng = new Rng(5);
    const n = 600,
      f = 257; // > 64K elements: split across the pool
    const inp = buf(rng, n * 2 * f, 8);
    const [outT, sigT, outN, sigN] = [0, 0, 0, 0].map(() => new Float32Array(n * f));
    swigluForward({ out: outT!, sig: sigT!, inp, n, f });
    ops.swigluForward({ out: outN!, sig: sigN!, inp, n, f });
    expect(maxRelDiff(outN!, outT!)).toBeLessThan(2e-6);
    const blocks = 4,
      l = 256;
    const xT = buf(rng, blocks * l * l, 20);
    const xN = xT.slice();
    causalSoftmaxForward({ x: xT, offset: 0, blocks, l });
    ops.causalSoftmaxForward({ x: xN, offset: 0, blocks, l });
    expect(maxRelDiff(xN, xT)).toBeLessThan(2e-6);
  });

  it('rmsnorm forward and backward', () => {
    let worst = 0;
    fc.assert(
      fc.property(dims, ({ n, f: c, scale, seed }) => {
        const rng = new Rng(seed);
        const inp = buf(rng, n * c, scale);
        const weight = buf(rng, c, 2);
        const [outT, outN] = [new Float32Array(n * c), new Float32Array(n * c)];
        const [rstdT, rstdN] = [new Float32Array(n), new Float32Array(n)];
        rmsnormForwardTs({ out: outT, rstd: rstdT, inp, weight, n, c, eps: 1e-5 });
        ops.rmsnormForward({ out: outN, rstd: rstdN, inp, weight, n, c, eps: 1e-5 });
        const dout = buf(rng, n * c, 1);
        const dinpT = buf(rng, n * c, 1),
          dwT = buf(rng, c, 1);
        const dinpN = dinpT.slice(),
          dwN = dwT.slice();
        rmsnormBackwardTs({ dinp: dinpT, dweight: dwT, dout, inp, weight, rstd: rstdT, n, c });
        ops.rmsnormBackward({ dinp: dinpN, dweight: dwN, dout, inp, weight, rstd: rstdT, n, c });
        // rstd scales like 1 / scale, so compare it relative to itself.
        const rstdRel = Math.max(...Array.from(rstdN, (v, i) => Math.abs(v - rstdT[i]!) / rstdT[i]!));
        const d = Math.max(maxRelDiff(outN, outT), rstdRel, maxRelDiff(dinpN, dinpT), maxRelDiff(dwN, dwT));
        worst = Math.max(worst, d);
        expect(d).toBeLessThan(1e-5);
      }),
      { numRuns: 150 },
    );
    console.log(`rmsnorm native vs TS max rel diff ${worst.toExponential(2)}`);
  });

  it('log-prob head matches its TypeScript twin bit for bit (the same exp and log as Math.exp / Math.log)', () => {
    expect(ops.logprobForward).not.toBeNull(); // this Node exports V8's exp / log (checked at load)
    fc.assert(
      fc.property(dims, ({ n, f: v, scale, seed }) => {
        const rng = new Rng(seed);
        const logits = buf(rng, n * v, scale);
        const targets = Int32Array.from({ length: n }, (_, r) => (r % 5 === 4 ? -1 : rng.int(v)));
        const run = (fn: (a: LogprobForwardArgs) => void) => {
          const a = {
            probs: logits.slice(),
            targets,
            logprobs: new Float32Array(n),
            entropies: new Float32Array(n),
            n,
            v,
          };
          fn(a);
          return [...a.probs, ...a.logprobs, ...a.entropies];
        };
        expect(run(ops.logprobForward!)).toEqual(run(logprobForwardTs));
      }),
      { numRuns: 120 },
    );
    // Enough rows to split across both threads.
    const rng = new Rng(4);
    const n = 700,
      v = 128;
    const logits = buf(rng, n * v, 8);
    const targets = Int32Array.from({ length: n }, () => rng.int(v));
    const a = { probs: logits.slice(), targets, logprobs: new Float32Array(n), entropies: new Float32Array(n), n, v };
    const b = { ...a, probs: logits.slice(), logprobs: new Float32Array(n), entropies: new Float32Array(n) };
    ops.logprobForward!(a);
    logprobForwardTs(b);
    expect([...a.probs, ...a.logprobs, ...a.entropies]).toEqual([...b.probs, ...b.logprobs, ...b.entropies]);
  });

  it('rope matches its TypeScript twin bit for bit (both compute in double), forward and inverse', () => {
    fc.assert(
      fc.property(
        fc.record({
          n: fc.integer({ min: 1, max: 40 }),
          heads: fc.integer({ min: 1, max: 6 }),
          half: fc.constantFrom(1, 4, 16, 17),
          pad: fc.constantFrom(0, 5),
          offset: fc.constantFrom(0, 3),
          seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        }),
        ({ n, heads, half, pad, offset, seed }) => {
          const rng = new Rng(seed);
          const table = ropeTable({ maxPositions: 300, headDim: 2 * half, theta: 10000 });
          const rowStride = heads * 2 * half + pad;
          const x = buf(rng, offset + n * rowStride, 3);
          const positions = Int32Array.from({ length: n }, () => rng.int(300));
          for (const sign of [1, -1]) {
            const xn = x.slice(),
              xt = x.slice();
            const args = { n, nHeads: heads, rowStride, offset, positions, table };
            ops.ropeRotate({ ...args, x: xn }, sign);
            ropeRotateTs({ ...args, x: xt }, sign);
            expect(Array.from(xn)).toEqual(Array.from(xt));
          }
        },
      ),
      { numRuns: 100 },
    );
    const table = ropeTable({ maxPositions: 4, headDim: 8, theta: 10000 });
    const x = new Float32Array(8);
    expect(() =>
      ops.ropeRotate({ x, n: 1, nHeads: 1, rowStride: 8, offset: 0, positions: Int32Array.from([4]), table }, 1),
    ).toThrow(/outside the table/);
  });

  // Oracle: one decode row in float64. Query head hh reads kv head hh / (h / hkv) of its slot.
  function decodeRef(a: {
    q: Float32Array;
    qOffset: number;
    kc: Float32Array;
    vc: Float32Array;
    cacheBase: number; // the slot's [Hkv, S, D] block
    len: number;
    s: number;
    h: number;
    hkv: number;
    d: number;
    out: Float32Array;
    outOffset: number;
  }): void {
    const scale = 1 / Math.sqrt(a.d);
    for (let hh = 0; hh < a.h; hh++) {
      const base = a.cacheBase + Math.floor(hh / (a.h / a.hkv)) * a.s * a.d;
      const sc: number[] = [];
      for (let j = 0; j < a.len; j++) {
        let dot = 0;
        for (let e = 0; e < a.d; e++) dot += a.q[a.qOffset + hh * a.d + e]! * a.kc[base + j * a.d + e]!;
        sc.push(dot * scale);
      }
      const mx = Math.max(...sc);
      const ex = sc.map((x) => Math.exp(x - mx));
      const sum = ex.reduce((x, y) => x + y, 0);
      for (let e = 0; e < a.d; e++) {
        let o = 0;
        for (let j = 0; j < a.len; j++) o += (ex[j]! / sum) * a.vc[base + j * a.d + e]!;
        a.out[a.outOffset + hh * a.d + e] = o;
      }
    }
  }

  function decodeCase(o: { h: number; hkv: number; d: number; s: number; slots: number; rows: number; seed: number }) {
    const { h, hkv, d, s, slots, rows } = o;
    const rng = new Rng(o.seed);
    const w = (h + 2 * hkv) * d;
    const kc = buf(rng, slots * hkv * s * d, 1);
    const vc = buf(rng, slots * hkv * s * d, 1);
    const slotIds = Int32Array.from(rng.shuffle(Array.from({ length: slots }, (_, i) => i)).slice(0, rows));
    const positions = Int32Array.from(slotIds, () => rng.int(s));
    const qkv = buf(rng, rows * w, 2);
    return { kc, vc, slotIds, positions, qkv, count: rows, s, h, hkv, d };
  }

  it('decode step writes the caches and attends every row like the float64 oracle (GQA included)', () => {
    let worst = 0;
    fc.assert(
      fc.property(
        fc.record({
          hkv: fc.integer({ min: 1, max: 3 }),
          groups: fc.constantFrom(1, 1, 2, 4),
          d: fc.constantFrom(1, 8, 16, 17, 32, 40),
          s: fc.integer({ min: 1, max: 40 }),
          slots: fc.integer({ min: 1, max: 5 }),
          seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        }),
        ({ hkv, groups, d, s, slots, seed }) => {
          const c0 = decodeCase({ h: hkv * groups, hkv, d, s, slots, rows: Math.max(1, slots - 1), seed });
          const { h, kc, vc, slotIds, positions, qkv, count } = c0;
          const w = (h + 2 * hkv) * d;
          const kc2 = kc.slice(),
            vc2 = vc.slice();
          const out = new Float32Array(count * h * d);
          ops.decodeAttentionStep({ ...c0, out });
          for (let i = 0; i < count; i++) {
            for (let j = 0; j < hkv; j++) {
              const dst = ((slotIds[i]! * hkv + j) * s + positions[i]!) * d;
              for (let e = 0; e < d; e++) {
                kc2[dst + e] = qkv[i * w + (h + j) * d + e]!;
                vc2[dst + e] = qkv[i * w + (h + hkv + j) * d + e]!;
              }
            }
          }
          expect(Array.from(kc)).toEqual(Array.from(kc2));
          expect(Array.from(vc)).toEqual(Array.from(vc2));
          const ref = new Float32Array(count * h * d);
          for (let i = 0; i < count; i++) {
            const cacheBase = slotIds[i]! * hkv * s * d;
            const one = { q: qkv, qOffset: i * w, kc, vc, cacheBase, len: positions[i]! + 1, s, h, hkv, d };
            decodeRef({ ...one, out: ref, outOffset: i * h * d });
          }
          const diff = maxRelDiff(out, ref);
          worst = Math.max(worst, diff);
          expect(diff).toBeLessThan(1e-5);
        },
      ),
      { numRuns: 150 },
    );
    console.log(`decode step native vs float64 max rel diff ${worst.toExponential(2)}`);
  });

  it('decode step spreads rows over both threads and rejects repeated slots and positions outside the cache', () => {
    // 14 rows of 4 heads x 32 at cache length 40 cross the parallel threshold.
    const c0 = decodeCase({ h: 4, hkv: 4, d: 32, s: 40, slots: 16, rows: 14, seed: 9 });
    const { kc, vc, slotIds, positions, qkv, count, h, d, s } = c0;
    const out = new Float32Array(count * h * d);
    ops.decodeAttentionStep({ ...c0, out });
    const ref = new Float32Array(count * h * d);
    for (let i = 0; i < count; i++) {
      const one = {
        q: qkv,
        qOffset: i * 3 * h * d,
        kc,
        vc,
        cacheBase: slotIds[i]! * h * s * d,
        len: positions[i]! + 1,
      };
      decodeRef({ ...one, s, h, hkv: h, d, out: ref, outOffset: i * h * d });
    }
    expect(maxRelDiff(out, ref)).toBeLessThan(1e-5);
    expect(() => ops.decodeAttentionStep({ ...c0, slotIds: Int32Array.from([1, 1, 2, 3]), count: 4, out })).toThrow(
      /appears twice/,
    );
    expect(() => ops.decodeAttentionStep({ ...c0, positions: Int32Array.from([0, 0, 40, 0]), count: 4, out })).toThrow(
      /outside the cache/,
    );
  });

  it('rejects undersized buffers with a clear error', () => {
    const small = new Float32Array(4);
    expect(() => ops.swigluForward({ out: small, sig: small, inp: small, n: 2, f: 2 })).toThrow(
      /inp|argument 2 too small/,
    );
    expect(() => ops.causalSoftmaxForward({ x: small, offset: 1, blocks: 1, l: 2 })).toThrow(/too small/);
  });
});
