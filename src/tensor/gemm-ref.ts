/**
 * Pure-TypeScript GEMM: the fallback when the native addon is missing and the oracle in tests.
 *
 * Row-major. op(A) is [M, K], op(B) is [K, N], C is [M, N]:
 *   C = alpha * op(A) @ op(B) + (accumulate ? C : 0)
 * With transA, A is stored as [K, M]; with transB, B is stored as [N, K].
 * Leading dimensions (lda, ldb, ldc) default to the packed row length of the stored matrix,
 * which lets callers address one head inside an interleaved [T, H, D] buffer.
 * Strided batches: batch b uses offsets offX + b * strideX.
 */
export interface GemmArgs {
  a: Float32Array;
  b: Float32Array;
  c: Float32Array;
  m: number;
  n: number;
  k: number;
  transA?: boolean;
  transB?: boolean;
  /** C += alpha * op(A) op(B) instead of C = ... */
  accumulate?: boolean;
  alpha?: number;
  lda?: number;
  ldb?: number;
  ldc?: number;
  offA?: number;
  offB?: number;
  offC?: number;
  batch?: number;
  strideA?: number;
  strideB?: number;
  strideC?: number;
}

export interface ResolvedGemm {
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  accumulate: boolean;
  alpha: number;
  lda: number;
  ldb: number;
  ldc: number;
  offA: number;
  offB: number;
  offC: number;
  batch: number;
  strideA: number;
  strideB: number;
  strideC: number;
}

/** Fills defaults and checks every access stays inside its buffer (a clear error, not a segfault). */
export function resolveGemm(g: GemmArgs): ResolvedGemm {
  const transA = g.transA ?? false;
  const transB = g.transB ?? false;
  const r: ResolvedGemm = {
    m: g.m,
    n: g.n,
    k: g.k,
    transA,
    transB,
    accumulate: g.accumulate ?? false,
    alpha: g.alpha ?? 1,
    lda: g.lda ?? (transA ? g.m : g.k),
    ldb: g.ldb ?? (transB ? g.k : g.n),
    ldc: g.ldc ?? g.n,
    offA: g.offA ?? 0,
    offB: g.offB ?? 0,
    offC: g.offC ?? 0,
    batch: g.batch ?? 1,
    strideA: g.strideA ?? 0,
    strideB: g.strideB ?? 0,
    strideC: g.strideC ?? 0,
  };
  for (const [name, v] of Object.entries({ m: r.m, n: r.n, k: r.k, batch: r.batch })) {
    if (!Number.isInteger(v) || v < 0) throw new Error(`gemm: ${name} must be a non-negative integer, got ${v}`);
  }
  const lastA = r.offA + (r.batch - 1) * r.strideA + (transA ? (r.k - 1) * r.lda + r.m : (r.m - 1) * r.lda + r.k);
  const lastB = r.offB + (r.batch - 1) * r.strideB + (transB ? (r.n - 1) * r.ldb + r.k : (r.k - 1) * r.ldb + r.n);
  const lastC = r.offC + (r.batch - 1) * r.strideC + (r.m - 1) * r.ldc + r.n;
  if (r.m > 0 && r.n > 0 && r.batch > 0) {
    if (r.k > 0 && lastA > g.a.length) throw new Error(`gemm: A too small (${g.a.length} < ${lastA})`);
    if (r.k > 0 && lastB > g.b.length) throw new Error(`gemm: B too small (${g.b.length} < ${lastB})`);
    if (lastC > g.c.length) throw new Error(`gemm: C too small (${g.c.length} < ${lastC})`);
  }
  return r;
}

export function gemmRef(g: GemmArgs): void {
  const r = resolveGemm(g);
  const { a, b, c } = g;
  for (let bt = 0; bt < r.batch; bt++) {
    const oA = r.offA + bt * r.strideA;
    const oB = r.offB + bt * r.strideB;
    const oC = r.offC + bt * r.strideC;
    for (let i = 0; i < r.m; i++) {
      const rowC = oC + i * r.ldc;
      if (!r.accumulate) for (let j = 0; j < r.n; j++) c[rowC + j] = 0;
      for (let p = 0; p < r.k; p++) {
        const av = r.alpha * (r.transA ? a[oA + p * r.lda + i]! : a[oA + i * r.lda + p]!);
        if (av === 0) continue;
        if (r.transB) {
          for (let j = 0; j < r.n; j++) c[rowC + j]! += av * b[oB + j * r.ldb + p]!;
        } else {
          const rowB = oB + p * r.ldb;
          for (let j = 0; j < r.n; j++) c[rowC + j]! += av * b[rowB + j]!;
        }
      }
    }
  }
}
