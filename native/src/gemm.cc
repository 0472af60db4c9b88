// Packed, cache-blocked GEMM (Goto/BLIS loop order: jc -> pc -> ic -> jr -> ir) with a register-
// blocked microkernel written in GCC vector extensions, so one source compiles to AVX-512, AVX2,
// SSE or NEON depending on -march=native. See docs/decisions/0002-native-kernels.md.
#include "gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "simd.h"
#include "thread-pool.h"


namespace crl {

#if defined(__AVX512F__)
constexpr int MR = 12;  // 24 zmm accumulators + 2 B vectors of 32 registers
#else
constexpr int MR = 6;  // 12 ymm (AVX) or xmm (SSE2 / NEON) accumulators of 16 registers
#endif
constexpr int NR = 2 * VW;
// KC * NR floats of B (32 KB) stay in L1 while A micro-panels stream from L2 (MC * KC = 192 KB).
constexpr int64_t KC = 256;
constexpr int64_t MC = MR * 16;
constexpr int64_t NC = NR * 128;
// Below this many rows of A, B is read in place (row-major, no transpose) instead of packed: the
// pack would cost as much as the product (the sampler's [batch, d] @ [d, n] calls).
constexpr int64_t kDirectMaxM = 2 * MR;

// Up to this many rows of A, x @ W^T runs as blocked dot products (gemm_dot) instead of packing
// W transposed, which costs more than the product itself when A is short.
constexpr int64_t kDotMaxM = 16;

int64_t g_parallel_min_flops = 1 << 22;


// acc[MR, NR] = sum_p a[p, 0:MR] (outer) b[p, 0:NR]; then C[0:mr, 0:nr] (+)= acc.
// a: packed [kc, MR]; b: [kc, NR] with row stride bs (NR when packed, ldb when read in place).
static inline void micro(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t bs,
                         float* __restrict c, int64_t ldc, int mr, int nr, bool add) {
  vf acc0[MR], acc1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) acc0[i] = acc1[i] = vf{};
  for (int64_t p = 0; p < kc; ++p) {
    const vf b0 = *reinterpret_cast<const vfu*>(b);
    const vf b1 = *reinterpret_cast<const vfu*>(b + VW);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      acc0[i] += a[i] * b0;
      acc1[i] += a[i] * b1;
    }
    a += MR;
    b += bs;
  }
  if (mr == MR && nr == NR) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      vfu* row = reinterpret_cast<vfu*>(c + i * ldc);
      if (add) {
        row[0] += acc0[i];
        row[1] += acc1[i];
      } else {
        row[0] = acc0[i];
        row[1] = acc1[i];
      }
    }
    return;
  }
  alignas(64) float tmp[MR * NR];
  for (int i = 0; i < MR; ++i) {
    *reinterpret_cast<vf*>(tmp + i * NR) = acc0[i];
    *reinterpret_cast<vf*>(tmp + i * NR + VW) = acc1[i];
  }
  for (int i = 0; i < mr; ++i) {
    float* row = c + i * ldc;
    const float* t = tmp + i * NR;
    if (add) {
      for (int j = 0; j < nr; ++j) row[j] += t[j];
    } else {
      for (int j = 0; j < nr; ++j) row[j] = t[j];
    }
  }
}

// Short A times transposed B (the sampler's x @ W^T with W stored [out, in]): C[i, j] is a dot
// product of two contiguous rows, so neither operand is packed or transposed. Blocks of 4 rows
// of A by 4 rows of B share their loads; k is vectorized and reduced once per output.
static void gemm_dot(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                     int64_t m, int64_t n, int64_t k, float alpha, bool add) {
  constexpr int R = 4, Q = 4;  // reduce4 assumes Q == 4
  const int64_t kv = k / VW * VW;
  for (int64_t j0 = 0; j0 < n; j0 += Q) {
    const int q = static_cast<int>(std::min<int64_t>(Q, n - j0));
    for (int64_t i0 = 0; i0 < m; i0 += R) {
      const int r = static_cast<int>(std::min<int64_t>(R, m - i0));
      // Ragged blocks reuse a valid row (the last) so the loop body stays branch-free.
      const float* ar[R];
      const float* br[Q];
      for (int x = 0; x < R; ++x) ar[x] = a + (i0 + std::min(x, r - 1)) * lda;
      for (int y = 0; y < Q; ++y) br[y] = b + (j0 + std::min(y, q - 1)) * ldb;
      vf acc[R][Q];
#pragma GCC unroll 4
      for (int x = 0; x < R; ++x)
#pragma GCC unroll 4
        for (int y = 0; y < Q; ++y) acc[x][y] = vf{};
      const float *a0 = ar[0], *a1 = ar[1], *a2 = ar[2], *a3 = ar[3];
      const float *b0 = br[0], *b1 = br[1], *b2 = br[2], *b3 = br[3];
      for (int64_t p = 0; p < kv; p += VW) {
        const vf w0 = *reinterpret_cast<const vfu*>(b0 + p), w1 = *reinterpret_cast<const vfu*>(b1 + p);
        const vf w2 = *reinterpret_cast<const vfu*>(b2 + p), w3 = *reinterpret_cast<const vfu*>(b3 + p);
        const vf x0 = *reinterpret_cast<const vfu*>(a0 + p), x1 = *reinterpret_cast<const vfu*>(a1 + p);
        const vf x2 = *reinterpret_cast<const vfu*>(a2 + p), x3 = *reinterpret_cast<const vfu*>(a3 + p);
        acc[0][0] += x0 * w0; acc[0][1] += x0 * w1; acc[0][2] += x0 * w2; acc[0][3] += x0 * w3;
        acc[1][0] += x1 * w0; acc[1][1] += x1 * w1; acc[1][2] += x1 * w2; acc[1][3] += x1 * w3;
        acc[2][0] += x2 * w0; acc[2][1] += x2 * w1; acc[2][2] += x2 * w2; acc[2][3] += x2 * w3;
        acc[3][0] += x3 * w0; acc[3][1] += x3 * w1; acc[3][2] += x3 * w2; acc[3][3] += x3 * w3;
      }
      for (int x = 0; x < r; ++x) {
        float* row = c + (i0 + x) * ldc + j0;
        float sums[Q];
        reduce4(acc[x], sums);
        for (int y = 0; y < q; ++y) {
          float s = sums[y];
          for (int64_t p = kv; p < k; ++p) s += ar[x][p] * br[y][p];
          row[y] = add ? row[y] + alpha * s : alpha * s;
        }
      }
    }
  }
}

// Packs alpha * op(A)[0:mc, 0:kc] into MR-row panels [ceil(mc/MR), kc, MR], zero-padding the last.
static void pack_a(const float* a, int64_t lda, bool trans, float alpha, int64_t mc, int64_t kc, float* dst) {
  for (int64_t r = 0; r < mc; r += MR, dst += kc * MR) {
    const int mr = static_cast<int>(std::min<int64_t>(MR, mc - r));
    if (trans) {  // stored [K, M]: a row of op(A)^T is contiguous
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = a + p * lda + r;
        float* d = dst + p * MR;
        int i = 0;
        for (; i < mr; ++i) d[i] = alpha * src[i];
        for (; i < MR; ++i) d[i] = 0.f;
      }
    } else {
      for (int i = 0; i < mr; ++i) {
        const float* src = a + (r + i) * lda;
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + i] = alpha * src[p];
      }
      for (int i = mr; i < MR; ++i)
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + i] = 0.f;
    }
  }
}

// Packs op(B)[0:kc, j0:nc] into NR-column panels [*, kc, NR] (panel q at dst + q*kc*NR).
static void pack_b(const float* b, int64_t ldb, bool trans, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t j = j0; j < nc; j += NR) {
    float* d = dst + (j / NR) * kc * NR;
    const int nr = static_cast<int>(std::min<int64_t>(NR, nc - j));
    if (trans) {  // stored [N, K]
      for (int jj = 0; jj < nr; ++jj) {
        const float* src = b + (j + jj) * ldb;
        for (int64_t p = 0; p < kc; ++p) d[p * NR + jj] = src[p];
      }
      for (int jj = nr; jj < NR; ++jj)
        for (int64_t p = 0; p < kc; ++p) d[p * NR + jj] = 0.f;
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b + p * ldb + j;
        float* dp = d + p * NR;
        std::memcpy(dp, src, sizeof(float) * nr);
        for (int jj = nr; jj < NR; ++jj) dp[jj] = 0.f;
      }
    }
  }
}

struct Workspace {
  float* a = nullptr;  // [MC, KC]
  float* b = nullptr;  // [KC, NC]
  Workspace() {
    a = static_cast<float*>(std::aligned_alloc(64, sizeof(float) * MC * KC));
    b = static_cast<float*>(std::aligned_alloc(64, sizeof(float) * KC * NC));
  }
  ~Workspace() {
    std::free(a);
    std::free(b);
  }
};

static Workspace& workspace() {
  // One per OS thread, created on first use and kept for the thread's life.
  thread_local std::unique_ptr<Workspace> w;
  if (!w) w = std::make_unique<Workspace>();
  return *w;
}

// One thread's share: op(A) rows [i0, i1) times op(B) columns [j0, j1) of one batch element.
static void gemm_block(const float* a, const float* b, float* c, const GemmParams& p, int64_t i0, int64_t i1,
                       int64_t j0, int64_t j1, Workspace& ws) {
  const int64_t m = i1 - i0, n = j1 - j0;
  if (m <= 0 || n <= 0) return;
  c += i0 * p.ldc + j0;
  if (p.k == 0 || p.alpha == 0.f) {
    if (!p.accumulate)
      for (int64_t i = 0; i < m; ++i) std::memset(c + i * p.ldc, 0, sizeof(float) * n);
    return;
  }
  a += p.trans_a ? i0 : i0 * p.lda;
  b += p.trans_b ? j0 * p.ldb : j0;
  if (p.trans_b && !p.trans_a && m <= kDotMaxM) {
    gemm_dot(a, p.lda, b, p.ldb, c, p.ldc, m, n, p.k, p.alpha, p.accumulate);
    return;
  }
  const bool direct = !p.trans_b && m <= kDirectMaxM;
  for (int64_t jc = 0; jc < n; jc += NC) {
    const int64_t nc = std::min(NC, n - jc);
    for (int64_t pc = 0; pc < p.k; pc += KC) {
      const int64_t kc = std::min(KC, p.k - pc);
      const bool add = p.accumulate || pc > 0;
      const float* bsrc = p.trans_b ? b + jc * p.ldb + pc : b + pc * p.ldb + jc;
      // In place, only the ragged last panel needs packing (it would read past column n).
      pack_b(bsrc, p.ldb, p.trans_b, kc, direct ? nc / NR * NR : 0, nc, ws.b);
      for (int64_t ic = 0; ic < m; ic += MC) {
        const int64_t mc = std::min(MC, m - ic);
        const float* asrc = p.trans_a ? a + pc * p.lda + ic : a + ic * p.lda + pc;
        pack_a(asrc, p.lda, p.trans_a, p.alpha, mc, kc, ws.a);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int nr = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          const bool in_place = direct && nr == NR;
          const float* bp = in_place ? bsrc + jr : ws.b + (jr / NR) * kc * NR;
          const int64_t bs = in_place ? p.ldb : NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int mr = static_cast<int>(std::min<int64_t>(MR, mc - ir));
            micro(kc, ws.a + ir * kc, bp, bs, c + (ic + ir) * p.ldc + jc + jr, p.ldc, mr, nr, add);
          }
        }
      }
    }
  }
}

// Work is cut into tasks the pool's threads claim dynamically (see thread-pool.h): whole batch
// elements when there are enough, else slices of the longer of M and N in whole micro-tiles.
struct Job {
  const float* a;
  const float* b;
  float* c;
  const GemmParams* p;
  bool split_batches;
  bool by_rows;
  int64_t units;   // batch elements, or micro-tiles along the split dimension
  int64_t ntasks;
};

// Slices smaller than this many micro-tiles would repack op(B) too often (each slice packs it).
constexpr int64_t kMinTilesPerTask = 24;

static void run_task(void* ctx, int64_t t) {
  const Job& job = *static_cast<const Job*>(ctx);
  const GemmParams& p = *job.p;
  Workspace& ws = workspace();
  const int64_t lo = job.units * t / job.ntasks, hi = job.units * (t + 1) / job.ntasks;
  auto one = [&](int64_t bt, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gemm_block(job.a + p.off_a + bt * p.stride_a, job.b + p.off_b + bt * p.stride_b,
               job.c + p.off_c + bt * p.stride_c, p, i0, i1, j0, j1, ws);
  };
  if (job.split_batches) {
    for (int64_t bt = lo; bt < hi; ++bt) one(bt, 0, p.m, 0, p.n);
    return;
  }
  for (int64_t bt = 0; bt < p.batch; ++bt) {
    if (job.by_rows) one(bt, lo * MR, std::min(p.m, hi * MR), 0, p.n);
    else one(bt, 0, p.m, lo * NR, std::min(p.n, hi * NR));
  }
}

void gemm(const float* a, const float* b, float* c, const GemmParams& p) {
  if (p.m <= 0 || p.n <= 0 || p.batch <= 0) return;
  const double flops = 2.0 * p.m * p.n * p.k * p.batch;
  const int64_t nt = flops < static_cast<double>(g_parallel_min_flops) ? 1 : pool().size();
  Job job{a, b, c, &p, false, p.m >= p.n, 0, 1};
  if (nt > 1 && p.batch >= 2 * nt) {
    job.split_batches = true;
    job.units = p.batch;
    job.ntasks = std::min<int64_t>(p.batch, 1024);
  } else {
    job.units = job.by_rows ? (p.m + MR - 1) / MR : (p.n + NR - 1) / NR;
    job.ntasks = nt == 1 ? 1 : std::clamp<int64_t>(job.units / kMinTilesPerTask, nt, 4 * nt);
    job.ntasks = std::min(job.ntasks, job.units);
  }
  if (job.ntasks <= 1) {
    run_task(&job, 0);
    return;
  }
  pool().run(job.ntasks, run_task, &job);
}

}  // namespace crl
