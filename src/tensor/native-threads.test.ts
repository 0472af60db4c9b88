/**
 * The addon's thread pool is process-wide; Node worker threads that load the addon share it.
 * Concurrent calls must stay correct (a second caller runs its tasks inline, each OS thread has
 * its own packing workspace). Workers run plain JS against the addon, so no TS loader is needed.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { gemm } from './gemm.ts';
import { gemmRef } from './gemm-ref.ts';
import { nativeStatus } from './native.ts';

const addonPath = createRequire(import.meta.url).resolve('../../native/build/Release/crl_native.node');

// Each worker runs `reps` parallel-sized products (m=n=k=160: above the 1-thread cutoff) and
// returns the max difference against a plain float64 triple loop.
const workerCode = `
const { parentPort, workerData } = require('node:worker_threads');
const addon = require(workerData.addonPath);
const m = 160, n = 160, k = 160;
const a = new Float32Array(m * k), b = new Float32Array(k * n), c = new Float32Array(m * n);
for (let i = 0; i < a.length; i++) a[i] = ((i * 7 + workerData.seed) % 13) / 13 - 0.5;
for (let i = 0; i < b.length; i++) b[i] = ((i * 5 + workerData.seed) % 11) / 11 - 0.5;
const ref = new Float64Array(m * n);
for (let i = 0; i < m; i++) for (let p = 0; p < k; p++) for (let j = 0; j < n; j++) ref[i * n + j] += a[i * k + p] * b[p * n + j];
const params = new Float64Array([m, n, k, 0, 0, 0, 1, k, n, n, 0, 0, 0, 1, 0, 0, 0]);
let maxDiff = 0;
for (let r = 0; r < workerData.reps; r++) {
  c.fill(NaN);
  addon.gemm(a, b, c, params);
  for (let i = 0; i < c.length; i++) maxDiff = Math.max(maxDiff, Math.abs(c[i] - ref[i]));
}
parentPort.postMessage(maxDiff);
`;

describe.skipIf(!nativeStatus().available)('native pool under concurrent callers', () => {
  it('worker threads and the main thread get correct results at the same time', async () => {
    const runs = [1, 2, 3].map(
      (seed) =>
        new Promise<number>((resolve, reject) => {
          const w = new Worker(workerCode, { eval: true, workerData: { addonPath, seed, reps: 60 } });
          w.once('message', resolve);
          w.once('error', reject);
        }),
    );
    // Meanwhile the main thread keeps the pool busy with its own products.
    const m = 200,
      k = 300,
      n = 150;
    const a = new Float32Array(m * k).map((_, i) => (i % 17) / 17 - 0.5);
    const b = new Float32Array(k * n).map((_, i) => (i % 19) / 19 - 0.5);
    const expected = new Float32Array(m * n);
    gemmRef({ a, b, c: expected, m, n, k });
    let mainDiff = 0;
    for (let r = 0; r < 40; r++) {
      const c = new Float32Array(m * n);
      gemm({ a, b, c, m, n, k });
      for (let i = 0; i < c.length; i++) mainDiff = Math.max(mainDiff, Math.abs(c[i]! - expected[i]!));
      await new Promise((r2) => setImmediate(r2));
    }
    const diffs = await Promise.all(runs);
    expect(mainDiff).toBeLessThanOrEqual(1e-5 * k);
    for (const d of diffs) expect(d).toBeLessThanOrEqual(1e-5 * 160);
  });
});
