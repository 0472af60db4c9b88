import { gemmRef, resolveGemm, type GemmArgs } from './gemm-ref.ts';
import { nativeAddon } from './native.ts';
import type { PackedWeight } from './packed-weight.ts';

export type { GemmArgs } from './gemm-ref.ts';

// Reused for every call: the scalar arguments cross into C++ as one typed array (no allocation,
// no per-field property lookups), which keeps the sampler's many small calls cheap.
const params = new Float64Array(17);

/**
 * The GEMM every layer calls. Dispatches to the native addon when it is built and to the
 * TypeScript twin otherwise (see gemm-ref.ts for the argument convention). Bounds are checked
 * here for both paths, so a bad call is a clear error rather than a segfault.
 */
export function gemm(args: GemmArgs & { packedB?: PackedWeight | null | undefined }): void {
  if (profile !== null) {
    profiledGemm(args);
    return;
  }
  if (nativeAddon === null) {
    gemmRef(args);
    return;
  }
  const r = resolveGemm(args);
  // args.b packed once (packed-weight.ts): same products, none of the per-call packing.
  const packed = args.packedB;
  const usePacked = packed && r.transB && !r.transA && r.batch === 1 && packed.n === r.n && packed.k === r.k;
  params[0] = r.m;
  params[1] = r.n;
  params[2] = r.k;
  params[3] = r.transA ? 1 : 0;
  params[4] = r.transB ? 1 : 0;
  params[5] = r.accumulate ? 1 : 0;
  params[6] = r.alpha;
  params[7] = r.lda;
  params[8] = r.ldb;
  params[9] = r.ldc;
  params[10] = r.offA;
  params[11] = r.offB;
  params[12] = r.offC;
  params[13] = r.batch;
  params[14] = r.strideA;
  params[15] = r.strideB;
  params[16] = r.strideC;
  if (usePacked) nativeAddon.gemmPacked(args.a, packed.data, args.c, params);
  else nativeAddon.gemm(args.a, args.b, args.c, params);
}

/** Which implementation gemm() runs: 'native' (the addon) or 'typescript' (gemmRef). */
export function gemmBackend(): 'native' | 'typescript' {
  return nativeAddon === null ? 'typescript' : 'native';
}

export interface GemmShapeStats {
  calls: number;
  ms: number;
  flops: number;
}

// Off by default (one null check per call). The engine benchmark turns it on for one step to
// report time per GEMM shape ("m x n x k NT xbatch" keys).
let profile: Map<string, GemmShapeStats> | null = null;

function profiledGemm(args: GemmArgs & { packedB?: PackedWeight | null | undefined }): void {
  const p = profile!;
  profile = null;
  const t = performance.now();
  gemm(args);
  const ms = performance.now() - t;
  profile = p;
  const r = resolveGemm(args);
  const key = `${r.m}x${r.n}x${r.k} ${r.transA ? 'T' : 'N'}${r.transB ? 'T' : 'N'}${r.batch > 1 ? ` x${r.batch}` : ''}`;
  const s = p.get(key) ?? { calls: 0, ms: 0, flops: 0 };
  s.calls++;
  s.ms += ms;
  s.flops += 2 * r.m * r.n * r.k * r.batch;
  p.set(key, s);
}

/** Starts recording time per GEMM shape (replacing any previous recording). */
export function startGemmProfile(): void {
  profile = new Map();
}

/** Stops recording and returns the per-shape totals, most expensive first. */
export function stopGemmProfile(): Array<[string, GemmShapeStats]> {
  const p = profile ?? new Map<string, GemmShapeStats>();
  profile = null;
  return [...p.entries()].sort((a, b) => b[1].ms - a[1].ms);
}
