/**
 * `npm run bench:half-gemm`: the sampler's x @ W^T with W in f32 (packed once), bf16 and f16
 * (src/tensor/half-weight.ts), on one weight of `--n` x `--k` (default: half of Qwen3-0.6B's LM
 * head, 75,968 x 1024) at `--rows` rows (default 1 and 8, a decode step at batch 1 and 8). Per
 * kernel: the best wall and CPU milliseconds of 7 calls after a warm-up, and the weight bytes read
 * per millisecond of each (GB/s). Run with CRL_THREADS=1 to see one core; on a shared machine the
 * CPU figures are the ones that do not count waiting. The last line is one JSON object.
 */
import { z } from 'zod';
import { gemm } from '../src/tensor/gemm.ts';
import { gemmHalf, halfWeight } from '../src/tensor/half-weight.ts';
import { nativeAddon } from '../src/tensor/native.ts';
import { packWeight } from '../src/tensor/packed-weight.ts';
import { Rng } from '../src/util/random.ts';
import { parseBenchArgs } from './bench-args.ts';

const args = parseBenchArgs(
  'bench:half-gemm',
  z
    .object({
      n: z.coerce.number().int().min(1).default(75968),
      k: z.coerce.number().int().min(1).default(1024),
      rows: z.string().default('1,8'),
    })
    .strict(),
);

const { n, k } = args;
const rows = args.rows.split(',').map(Number);
const maxM = Math.max(...rows);
const rng = new Rng(1);
const w = new Float32Array(n * k); // [N, K]
for (let i = 0; i < w.length; i++) w[i] = (rng.next() - 0.5) * 0.04;
const a = new Float32Array(maxM * k).map(() => rng.next() - 0.5); // [M, K]
const c = new Float32Array(maxM * n); // [M, N]
const packed = packWeight({ weight: w, n, k });
const kernels = {
  f32: { bytes: 4, run: (m: number) => gemm({ a, b: w, c, m, n, k, transB: true, packedB: packed }) },
  bf16: { bytes: 2, run: (m: number) => gemmHalf({ a, w: halfBf16, c, m }) },
  f16: { bytes: 2, run: (m: number) => gemmHalf({ a, w: halfF16, c, m }) },
};
const halfBf16 = halfWeight({ weight: w, n, k, format: 'bf16' });
const halfF16 = halfWeight({ weight: w, n, k, format: 'f16' });

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const results: Record<string, unknown>[] = [];
for (const m of rows) {
  for (const [name, kernel] of Object.entries(kernels)) {
    kernel.run(m);
    let wall = Infinity;
    let cpu = Infinity;
    for (let r = 0; r < 7; r++) {
      const t = performance.now();
      const c0 = cpuMs();
      kernel.run(m);
      wall = Math.min(wall, performance.now() - t);
      cpu = Math.min(cpu, cpuMs() - c0);
    }
    const bytes = n * k * kernel.bytes;
    const r = {
      rows: m,
      weights: name,
      wallMs: round(wall),
      cpuMs: round(cpu),
      gbPerS: round(bytes / wall / 1e6),
      gbPerCpuS: round(bytes / cpu / 1e6),
    };
    console.log(JSON.stringify(r));
    results.push(r);
  }
}
console.log(JSON.stringify({ n, k, threads: nativeAddon ? nativeAddon.info().threads : 'typescript', results }));
