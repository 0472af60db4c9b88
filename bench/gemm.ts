/**
 * `npm run bench:gemm`: GFLOP/s of the GEMM on 1024^3 and on the reference model's shapes,
 * native vs TypeScript; per-call overhead on the sampler's small products; the GEMM ceiling
 * (bench/gemm-ceiling.ts); the non-GEMM native twins vs TypeScript. `--sweep` also measures the one-thread/two-thread crossover that sets
 * the addon's parallel cutoff. The last line is one JSON object.
 *
 * Shapes are m x n x k as gemm() takes them. Reference model: d 128, MLP 512, 16 x 256 = 4096
 * tokens; weights are stored [out, in] (src/tensor/linear.ts), so forward is NT, the input
 * gradient NN, the weight gradient TN with k = tokens; attention runs 4 heads as a strided batch.
 */
import { parseArgs } from 'node:util';
import { gemmRef, type GemmArgs } from '../src/tensor/gemm-ref.ts';
import { gemm } from '../src/tensor/gemm.ts';
import { nativeOps } from '../src/tensor/native-ops.ts';
import { nativeAddon, nativeStatus } from '../src/tensor/native.ts';
import { rmsnormBackwardTs, rmsnormForwardTs } from '../src/tensor/rmsnorm.ts';
import { causalSoftmaxBackwardTs, causalSoftmaxForwardTs } from '../src/tensor/softmax.ts';
import { swigluBackwardTs, swigluForwardTs } from '../src/tensor/swiglu.ts';
import { measureGemmCeiling } from './gemm-ceiling.ts';

type Kernel = (g: GemmArgs) => void;

interface Shape {
  name: string;
  m: number;
  n: number;
  k: number;
  transA?: boolean;
  transB?: boolean;
  batch?: number;
  /** also time the TypeScript twin (slow: only a few shapes) */
  ts?: boolean;
}

const BIG: Shape[] = [
  { name: '1024^3', m: 1024, n: 1024, k: 1024, ts: true },
  { name: 'fwd qkv/o (NT)', m: 4096, n: 128, k: 128, transB: true, ts: true },
  { name: 'fwd up/gate (NT)', m: 4096, n: 512, k: 128, transB: true, ts: true },
  { name: 'fwd down (NT)', m: 4096, n: 128, k: 512, transB: true, ts: true },
  { name: 'bwd dx 4096x128x512 (NN)', m: 4096, n: 128, k: 512 },
  { name: 'bwd dx 4096x512x128 (NN)', m: 4096, n: 512, k: 128 },
  { name: 'bwd dx 4096x128x128 (NN)', m: 4096, n: 128, k: 128 },
  { name: 'bwd dW 512x128x4096 (TN)', m: 512, n: 128, k: 4096, transA: true },
  { name: 'bwd dW 128x512x4096 (TN)', m: 128, n: 512, k: 4096, transA: true },
  { name: 'bwd dW 128x128x4096 (TN)', m: 128, n: 128, k: 4096, transA: true },
  { name: 'attn QK^T 4 heads (NT)', m: 256, n: 256, k: 32, transB: true, batch: 4 },
  { name: 'attn PV 4 heads (NN)', m: 256, n: 32, k: 256, batch: 4 },
  { name: 'attn dK 4 heads (TN)', m: 256, n: 32, k: 256, transA: true, batch: 4 },
];

// The sampler's products: [batch, d] rows against [out, in] weights (NT), one token per step.
const SMALL: Shape[] = [
  { name: 'tiny 1x1x1', m: 1, n: 1, k: 1 },
  { name: 'sample 1x128x128', m: 1, n: 128, k: 128, transB: true },
  { name: 'sample 16x128x128', m: 16, n: 128, k: 128, transB: true },
  { name: 'sample 16x384x128', m: 16, n: 384, k: 128, transB: true },
  { name: 'sample 16x512x128', m: 16, n: 512, k: 128, transB: true },
  { name: 'sample 16x128x512', m: 16, n: 128, k: 512, transB: true },
  { name: 'sample 64x512x128', m: 64, n: 512, k: 128, transB: true },
  { name: 'sample 64x128x512', m: 64, n: 128, k: 512, transB: true },
];

function argsFor(s: Shape): GemmArgs {
  const batch = s.batch ?? 1;
  const a = new Float32Array(s.m * s.k * batch).map((_, i) => ((i * 31) % 17) / 17 - 0.5);
  const b = new Float32Array(s.k * s.n * batch).map((_, i) => ((i * 13) % 19) / 19 - 0.5);
  const c = new Float32Array(s.m * s.n * batch);
  return {
    a,
    b,
    c,
    m: s.m,
    n: s.n,
    k: s.k,
    transA: s.transA,
    transB: s.transB,
    batch,
    strideA: s.m * s.k,
    strideB: s.k * s.n,
    strideC: s.m * s.n,
  };
}

/** Best time per call (ms) over `rounds` rounds of enough calls to fill ~budgetMs each. */
function bestMs(fn: () => void, budgetMs = 40, rounds = 5): number {
  fn();
  const t0 = performance.now();
  fn();
  const once = Math.max(performance.now() - t0, 1e-4);
  const reps = Math.max(1, Math.min(100_000, Math.floor(budgetMs / once)));
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    for (let i = 0; i < reps; i++) fn();
    best = Math.min(best, (performance.now() - t) / reps);
  }
  return best;
}

const flopsOf = (s: Shape) => 2 * s.m * s.n * s.k * (s.batch ?? 1);
const gflops = (s: Shape, ms: number) => flopsOf(s) / (ms * 1e6);
const pad = (v: string | number, w: number) => String(v).padStart(w);

function benchBig(): Record<string, number> {
  console.log('\n' + 'shape'.padEnd(28) + pad('native GFLOP/s', 16) + pad('TS GFLOP/s', 12) + pad('ms', 9));
  const out: Record<string, number> = {};
  for (const s of BIG) {
    const g = argsFor(s);
    const native: Kernel = gemm;
    const ms = bestMs(() => native(g), 60, 5);
    // One call of the TS twin is enough: it is ~100x slower and its timing is stable.
    const tsMs = s.ts ? bestMs(() => gemmRef(g), 0, 1) : NaN;
    out[s.name] = gflops(s, ms);
    console.log(
      s.name.padEnd(28) +
        pad(gflops(s, ms).toFixed(1), 16) +
        pad(s.ts ? gflops(s, tsMs).toFixed(2) : '-', 12) +
        pad(ms.toFixed(3), 9),
    );
  }
  return out;
}

function benchSmall(): Record<string, number> {
  console.log('\n' + 'per call'.padEnd(28) + pad('us/call', 10) + pad('GFLOP/s', 10));
  const out: Record<string, number> = {};
  if (nativeAddon) {
    const g = argsFor(SMALL[0]!);
    const params = new Float64Array(17);
    const addon = nativeAddon;
    const us = bestMs(() => addon.noop(g.a, g.b, g.c, params)) * 1000;
    out['napi noop'] = us;
    console.log('napi call, no work'.padEnd(28) + pad(us.toFixed(3), 10));
  }
  for (const s of SMALL) {
    const g = argsFor(s);
    const us = bestMs(() => gemm(g)) * 1000;
    out[s.name] = us;
    console.log(s.name.padEnd(28) + pad(us.toFixed(3), 10) + pad(gflops(s, us / 1000).toFixed(1), 10));
  }
  return out;
}

/** The non-GEMM native twins vs their TypeScript originals, at the reference model's sizes. */
function benchOps(): Record<string, number> {
  const out: Record<string, number> = {};
  if (!nativeOps) return out;
  const ops = nativeOps;
  const n = 4096,
    f = 512,
    c = 128,
    l = 256,
    blocks = 4;
  const fill = (len: number) => new Float32Array(len).map((_, i) => ((i * 37) % 101) / 101 - 0.5);
  const inp = fill(n * 2 * f),
    act = fill(n * f),
    sig = fill(n * f),
    dinp = fill(n * 2 * f);
  const x = fill(n * c),
    y = fill(n * c),
    w = fill(c),
    dw = fill(c),
    rstd = fill(n);
  const probs = fill(blocks * l * l),
    grad = fill(blocks * l * l);
  const cases: Array<[string, () => void, () => void]> = [
    [
      'swiglu fwd 4096x512',
      () => swigluForwardTs({ out: act, sig, inp, n, f }),
      () => ops.swigluForward({ out: act, sig, inp, n, f }),
    ],
    [
      'swiglu bwd 4096x512',
      () => swigluBackwardTs({ dinp, dout: act, inp, sig, n, f }),
      () => ops.swigluBackward({ dinp, dout: act, inp, sig, n, f }),
    ],
    [
      'rmsnorm fwd 4096x128',
      () => rmsnormForwardTs({ out: y, rstd, inp: x, weight: w, n, c, eps: 1e-5 }),
      () => ops.rmsnormForward({ out: y, rstd, inp: x, weight: w, n, c, eps: 1e-5 }),
    ],
    [
      'rmsnorm bwd 4096x128',
      () => rmsnormBackwardTs({ dinp: y, dweight: dw, dout: x, inp: x, weight: w, rstd, n, c }),
      () => ops.rmsnormBackward({ dinp: y, dweight: dw, dout: x, inp: x, weight: w, rstd, n, c }),
    ],
    [
      'causal softmax fwd 4x256^2',
      () => causalSoftmaxForwardTs({ x: probs, offset: 0, blocks, l }),
      () => ops.causalSoftmaxForward({ x: probs, offset: 0, blocks, l }),
    ],
    [
      'causal softmax bwd 4x256^2',
      () => causalSoftmaxBackwardTs({ grad, gradOffset: 0, probs, probsOffset: 0, blocks, l }),
      () => ops.causalSoftmaxBackward({ grad, gradOffset: 0, probs, probsOffset: 0, blocks, l }),
    ],
  ];
  console.log(
    '\n' + 'op (reference model size)'.padEnd(28) + pad('TS ms', 10) + pad('native ms', 11) + pad('speed-up', 10),
  );
  for (const [name, ts, native] of cases) {
    const tsMs = bestMs(ts, 30, 3);
    const nMs = bestMs(native, 30, 5);
    out[name] = tsMs / nMs;
    console.log(
      name.padEnd(28) + pad(tsMs.toFixed(3), 10) + pad(nMs.toFixed(3), 11) + pad(`${(tsMs / nMs).toFixed(1)}x`, 10),
    );
  }
  return out;
}

/** One thread vs all threads around the cutoff, to pick g_parallel_min_flops by measurement. */
function sweep(): void {
  if (!nativeAddon) return;
  const addon = nativeAddon;
  const saved = addon.info().parallelMinFlops;
  console.log('\n' + 'cutoff sweep'.padEnd(28) + pad('MFLOP', 8) + pad('1 thread us', 13) + pad('all us', 10));
  for (const [m, n, k] of [
    [16, 128, 128],
    [32, 128, 128],
    [64, 128, 128],
    [128, 128, 128],
    [64, 512, 128],
    [256, 128, 128],
    [128, 512, 128],
    [256, 256, 128],
    [512, 128, 128],
    [256, 512, 128],
  ] as const) {
    const s: Shape = { name: `${m}x${n}x${k}`, m, n, k, transB: true };
    const g = argsFor(s);
    addon.setParallelMinFlops(Number.MAX_SAFE_INTEGER);
    const one = bestMs(() => gemm(g)) * 1000;
    addon.setParallelMinFlops(0);
    const all = bestMs(() => gemm(g)) * 1000;
    console.log(
      s.name.padEnd(28) + pad((flopsOf(s) / 1e6).toFixed(2), 8) + pad(one.toFixed(2), 13) + pad(all.toFixed(2), 10),
    );
  }
  addon.setParallelMinFlops(saved);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { sweep: { type: 'boolean', default: false } }, strict: true });
  const status = nativeStatus();
  const info = nativeAddon?.info();
  console.log(
    `native: ${status.available ? `yes (${info!.isa}, ${info!.threads} threads, parallel above ${info!.parallelMinFlops} FLOP)` : `no (${status.reason})`}`,
  );
  const big = benchBig();
  const small = benchSmall();
  const opsSpeedup = benchOps();
  if (values.sweep) sweep();
  const ceiling = measureGemmCeiling();
  console.log(
    `\nGEMM ceiling 1024^3: built-in ${ceiling.builtinGflops.toFixed(1)} GFLOP/s, OpenBLAS ${ceiling.openblasGflops?.toFixed(1) ?? 'not installed'}; winner ${ceiling.winner}`,
  );
  const modelShapes = Object.entries(big)
    .filter(([name]) => name !== '1024^3')
    .map(([, v]) => v);
  console.log(
    JSON.stringify({
      native: status.available,
      gflops1024: big['1024^3'],
      modelShapesMinGflops: Math.min(...modelShapes),
      smallCallUs: small['sample 16x128x128'],
      napiNoopUs: small['napi noop'] ?? null,
      opsSpeedup,
      ceiling,
    }),
  );
}

main().catch((err: unknown) => {
  console.error(`bench:gemm: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
