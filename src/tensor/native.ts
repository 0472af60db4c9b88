/**
 * Loads the Node-API addon built by scripts/build-native.mjs (native/), or explains why not.
 *
 * The addon is optional by design (docs/decisions/0002-native-kernels.md): when it is missing,
 * failed to build, or CRL_NATIVE=0 is set, every kernel runs its TypeScript twin and ONE warning
 * says why and what it costs. Nothing here throws at import time.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface NativeAddon {
  /** C = alpha op(A) op(B) (+ C); params in GEMM_PARAM_ORDER. Bounds are NOT checked natively. */
  gemm(a: Float32Array, b: Float32Array, c: Float32Array, params: Float64Array): void;
  /** Floats packWeight writes for W [n, k]. */
  packedWeightSize(n: number, k: number): number;
  /** W [n, k] at wOffset, packed once as gemm() packs op(B) = W^T for x @ W^T. */
  packWeight(w: Float32Array, wOffset: number, n: number, k: number, dst: Float32Array): void;
  /** gemm with op(B) = W^T given packed (transA 0, batch 1; params as gemm). Bounds NOT checked natively. */
  gemmPacked(a: Float32Array, packed: Float32Array, c: Float32Array, params: Float64Array): void;
  /** W [n, k] at wOffset rounded to f16 (format 0) or bf16 (1), packed as packWeight packs f32. */
  packHalfWeight(w: Float32Array, wOffset: number, n: number, k: number, format: number, dst: Uint16Array): void;
  /** gemmPacked with W from packHalfWeight, widened in registers, f32 accumulation. Bounds NOT checked natively. */
  gemmHalf(a: Float32Array, packed: Uint16Array, c: Float32Array, params: Float64Array, format: number): void;
  /** Same marshalling as gemm, no work: per-call overhead measurement. */
  noop(a: Float32Array, b: Float32Array, c: Float32Array, params: Float64Array): void;
  info(): { threads: number; isa: string; parallelMinFlops: number; abi?: number };
  // Twins of src/tensor/swiglu.ts and softmax.ts (positional arguments; bounds checked natively).
  swigluForward(out: Float32Array, sig: Float32Array, inp: Float32Array, n: number, f: number): void;
  swigluBackward(
    dinp: Float32Array,
    dout: Float32Array,
    inp: Float32Array,
    sig: Float32Array,
    n: number,
    f: number,
  ): void;
  causalSoftmaxForward(x: Float32Array, offset: number, blocks: number, l: number): void;
  causalSoftmaxBackward(
    grad: Float32Array,
    gradOffset: number,
    probs: Float32Array,
    probsOffset: number,
    blocks: number,
    l: number,
  ): void;
  decodeAttentionStep(
    qkv: Float32Array,
    slotIds: Int32Array,
    positions: Int32Array,
    count: number,
    kc: Float32Array,
    vc: Float32Array,
    s: number,
    h: number,
    hkv: number,
    d: number,
    out: Float32Array,
  ): void;
  logprobForward(
    probs: Float32Array,
    targets: Int32Array,
    logprobs: Float32Array,
    entropies: Float32Array,
    n: number,
    v: number,
  ): void;
  extendAttention(
    qkv: Float32Array,
    starts: Int32Array,
    prefixes: Int32Array,
    slots: Int32Array,
    r: number,
    kc: Float32Array,
    vc: Float32Array,
    s: number,
    h: number,
    hkv: number,
    d: number,
    out: Float32Array,
  ): void;
  /** Absent from an addon built before it. */
  drawRows?(
    logits: Float32Array,
    n: number,
    v: number,
    u: Float64Array,
    tokens: Int32Array,
    logprobs: Float64Array,
    entropies: Float64Array,
  ): void;
  /** x[i] = exp(x[i]) (or log) with logprobForward's functions; false when it has none. */
  v8Math(x: Float64Array, log: boolean): boolean;
  ropeRotate(
    x: Float32Array,
    offset: number,
    n: number,
    heads: number,
    rowStride: number,
    positions: Int32Array,
    cos: Float32Array,
    sin: Float32Array,
    half: number,
    sign: number,
  ): void;
  rmsnormForward(
    out: Float32Array,
    rstd: Float32Array,
    inp: Float32Array,
    weight: Float32Array,
    n: number,
    c: number,
    eps: number,
  ): void;
  rmsnormBackward(
    dinp: Float32Array,
    dweight: Float32Array,
    dout: Float32Array,
    inp: Float32Array,
    weight: Float32Array,
    rstd: Float32Array,
    n: number,
    c: number,
  ): void;
  /**
   * Fused causal attention over packed sequences (twins of attention.ts; layout from
   * attentionLayout). Optional: an addon built before they existed lacks them.
   */
  attentionForward?(
    out: Float32Array,
    probs: Float32Array,
    qkv: Float32Array,
    starts: Int32Array,
    lengths: Int32Array,
    probStarts: Float64Array,
    nseq: number,
    h: number,
    d: number,
    hkv: number,
  ): void;
  attentionBackward?(
    dqkv: Float32Array,
    dout: Float32Array,
    qkv: Float32Array,
    probs: Float32Array,
    starts: Int32Array,
    lengths: Int32Array,
    probStarts: Float64Array,
    nseq: number,
    h: number,
    d: number,
    hkv: number,
  ): void;
  /** Products below this many FLOPs stay on one thread. */
  setParallelMinFlops(flops: number): void;
}

export interface NativeStatus {
  available: boolean;
  reason?: string;
}

/** The addon's interface version (kAbiVersion in native/src/addon.cc); another value is refused. */
export const NATIVE_ABI = 4;

/** Order of the Float64Array passed to NativeAddon.gemm (must match native/src/addon.cc). */
export const GEMM_PARAM_ORDER = [
  'm',
  'n',
  'k',
  'transA',
  'transB',
  'accumulate',
  'alpha',
  'lda',
  'ldb',
  'ldc',
  'offA',
  'offB',
  'offC',
  'batch',
  'strideA',
  'strideB',
  'strideC',
] as const;

const NATIVE_DIR = fileURLToPath(new URL('../../native/', import.meta.url));
// CRL_NATIVE_PATH=/dir/crl_native.node loads another build (kernel development: test a new
// addon without replacing the one other processes use); its cpu.json is read beside it.
const ADDON_PATH = process.env.CRL_NATIVE_PATH || `${NATIVE_DIR}build/Release/crl_native.node`;
/**
 * Written by scripts/build-native.mjs when a build fails and leaves no working addon (none at all, or
 * one that no longer loads or predates the sources); a failed rebuild that keeps a working addon
 * removes it instead.
 */
export const BUILD_FAILURE_PATH = `${NATIVE_DIR}build/BUILD_FAILED.txt`;

/** "; the last build failed: <why>" when BUILD_FAILED.txt says so (the default addon only). */
function lastBuildFailure(): string {
  if (process.env.CRL_NATIVE_PATH || !existsSync(BUILD_FAILURE_PATH)) return '';
  return `; the last build failed: ${readFileSync(BUILD_FAILURE_PATH, 'utf8').trim().split('\n')[0]}`;
}

// Keep in sync with scripts/build-native.mjs.
const ISA_FLAGS = [
  'avx',
  'avx2',
  'fma',
  'f16c',
  'bmi2',
  'avx512f',
  'avx512dq',
  'avx512bw',
  'avx512vl',
  'avx512vnni',
  'avx512_bf16',
];

/** ISA flags that -march=native may use (Linux; elsewhere the CPU model string alone). */
function isaFlags(): string {
  try {
    const line =
      readFileSync('/proc/cpuinfo', 'utf8')
        .split('\n')
        .find((l) => l.startsWith('flags')) ?? '';
    const have = new Set(line.split(':')[1]?.trim().split(/\s+/) ?? []);
    return ISA_FLAGS.filter((f) => have.has(f)).join(' ');
  } catch {
    return '';
  }
}

/** What scripts/build-native.mjs wrote beside the addon (cpu.json): the CPU and flags it was built for. */
interface BuiltCpu {
  march?: string;
  arch?: string;
  model?: string;
  isa?: string;
}

function load(): { addon: NativeAddon | null; status: NativeStatus; built?: BuiltCpu } {
  if (process.env.CRL_NATIVE === '0') {
    return { addon: null, status: { available: false, reason: 'disabled by CRL_NATIVE=0' } };
  }
  if (!existsSync(ADDON_PATH)) {
    const failure = process.env.CRL_NATIVE_PATH
      ? `CRL_NATIVE_PATH=${ADDON_PATH} does not exist`
      : existsSync(BUILD_FAILURE_PATH)
        ? `build failed at install: ${readFileSync(BUILD_FAILURE_PATH, 'utf8').trim().split('\n')[0]}`
        : 'addon not built; run `node scripts/build-native.mjs`';
    return { addon: null, status: { available: false, reason: failure } };
  }
  // Built with -march=native: loading it on a different CPU (a copied node_modules, a container
  // image) could die with SIGILL, which no try/catch can stop. Refuse instead, with the fix.
  const cpuPath = `${dirname(ADDON_PATH)}/cpu.json`;
  const built = existsSync(cpuPath) ? (JSON.parse(readFileSync(cpuPath, 'utf8')) as BuiltCpu) : undefined;
  if (built) {
    const here = { arch: process.arch, model: cpus()[0]?.model ?? 'unknown', isa: isaFlags() };
    const portable = built.march !== undefined && built.march !== 'native'; // CRL_NATIVE_MARCH build
    if (built.arch !== here.arch || (!portable && (built.model !== here.model || (built.isa ?? '') !== here.isa))) {
      const reason =
        `addon was built for another CPU ("${built.model}", ${built.arch}, ${built.isa}), this is "${here.model}" ` +
        `(${here.arch}, ${here.isa}); ` +
        'rebuild with `node scripts/build-native.mjs`';
      return { addon: null, status: { available: false, reason } };
    }
  }
  try {
    const addon = createRequire(import.meta.url)(ADDON_PATH) as NativeAddon;
    const abi = addon.info().abi;
    if (abi !== NATIVE_ABI) {
      const reason = `addon was built from older sources (interface ${abi ?? 1}, these need ${NATIVE_ABI}); rebuild with \`node scripts/build-native.mjs\`${lastBuildFailure()}`;
      return { addon: null, status: { available: false, reason } };
    }
    return { addon, status: { available: true }, built };
  } catch (err) {
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    return {
      addon: null,
      status: { available: false, reason: `cannot load ${ADDON_PATH}: ${msg}${lastBuildFailure()}` },
    };
  }
}

const loaded = load();
if (!loaded.status.available) {
  // One line, once per process: the fallback is correct but much slower, and users should know.
  process.stderr.write(
    `compaction-rl: native kernels unavailable (${loaded.status.reason}); ` +
      'using TypeScript kernels, ~50x slower training\n',
  );
}

/** The addon, or null when the TypeScript twins are in use. */
export const nativeAddon: NativeAddon | null = loaded.addon;

/**
 * Which kernels this process computes with, for provenance: `native (march=native avx avx2 …)` or
 * `typescript`. Results depend on it: another instruction set runs other panel widths and another
 * summation order, so training takes another path from its first iterations.
 */
export function kernelsDescription(): string {
  if (!loaded.addon) return 'typescript';
  const b = loaded.built;
  return b ? `native (${[`march=${b.march ?? 'native'}`, b.isa].filter(Boolean).join(' ')})` : 'native';
}

export function nativeStatus(): NativeStatus {
  return { ...loaded.status };
}
