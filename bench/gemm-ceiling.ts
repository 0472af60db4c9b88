/**
 * The machine's float32 GEMM ceiling on a 1024^3 product: the built-in kernel (src/tensor/gemm.ts)
 * and, where installed, OpenBLAS. Reused by bench/engine.ts (ratio = train / ceiling).
 *
 * OpenBLAS runs in a python3 subprocess through ctypes (no compiler or numpy needed) with
 * OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from ITS environment only: this machine exports
 * them on purpose for older builds, and they cap OpenBLAS at ~140-180 GFLOP/s. Never change them
 * anywhere else.
 */
import { spawnSync } from 'node:child_process';
import { gemm, gemmBackend } from '../src/tensor/gemm.ts';

export interface GemmCeiling {
  builtinGflops: number;
  openblasGflops: number | null;
  /** 'builtin-native', 'builtin-typescript' or 'openblas' */
  winner: string;
}

const SIZE = 1024;

/** Best-of-`reps` GFLOP/s of the built-in gemm on [size, size] x [size, size]. */
export function measureBuiltinGflops(size = SIZE, reps = 8): number {
  const a = new Float32Array(size * size).map((_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
  const b = a.slice().reverse();
  const c = new Float32Array(size * size);
  const flops = 2 * size ** 3;
  gemm({ a, b, c, m: size, n: size, k: size }); // warm-up: workspaces, pool, caches
  let best = Infinity;
  const deadline = performance.now() + 3000;
  for (let r = 0; r < reps && performance.now() < deadline; r++) {
    const t = performance.now();
    gemm({ a, b, c, m: size, n: size, k: size });
    best = Math.min(best, performance.now() - t);
  }
  return flops / (best * 1e6);
}

const PY_OPENBLAS = `
import ctypes, ctypes.util, sys, time, json
name = ctypes.util.find_library('openblas')
cands = [name] if name else []
cands += ['libopenblas.so.0', 'libopenblas.so', 'libopenblas.dylib']
lib = None
for c in cands:
    try:
        lib = ctypes.CDLL(c); break
    except OSError:
        pass
if lib is None or not hasattr(lib, 'cblas_sgemm'):
    print(json.dumps({'gflops': None, 'reason': 'libopenblas not found'})); sys.exit(0)
n = ${SIZE}
F = ctypes.c_float * (n * n)
a = F(*[((i * 7919) % 1000) / 1000 - 0.5 for i in range(n * n)])
b = F(*[0.25] * (n * n))
c = F()
sg = lib.cblas_sgemm
sg.restype = None
sg.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, F, ctypes.c_int, F, ctypes.c_int, ctypes.c_float, F, ctypes.c_int]
def run():
    sg(101, 111, 111, n, n, n, 1.0, a, n, b, n, 0.0, c, n)  # RowMajor, NoTrans, NoTrans
run()
best = 1e9
deadline = time.perf_counter() + 3
for _ in range(8):
    t = time.perf_counter(); run(); best = min(best, time.perf_counter() - t)
    if time.perf_counter() > deadline: break
print(json.dumps({'gflops': 2 * n ** 3 / best / 1e9}))
`;

/** OpenBLAS sgemm GFLOP/s on 1024^3, or null when python3 or libopenblas is missing. */
export function measureOpenblasGflops(): number | null {
  const env = { ...process.env };
  delete env.OPENBLAS_CORETYPE;
  delete env.OPENBLAS_L2_SIZE;
  const res = spawnSync('python3', ['-c', PY_OPENBLAS], { env, encoding: 'utf8', timeout: 60_000 });
  if (res.status !== 0 || !res.stdout) return null;
  try {
    const out = JSON.parse(res.stdout.trim().split('\n').at(-1)!) as { gflops: number | null };
    return typeof out.gflops === 'number' && Number.isFinite(out.gflops) ? out.gflops : null;
  } catch {
    return null;
  }
}

export function measureGemmCeiling(): GemmCeiling {
  const builtinGflops = measureBuiltinGflops();
  const openblasGflops = measureOpenblasGflops();
  const builtinName = `builtin-${gemmBackend()}`;
  const winner = openblasGflops !== null && openblasGflops > builtinGflops ? 'openblas' : builtinName;
  return { builtinGflops, openblasGflops, winner };
}
