// Blocking constants and operand packing for gemm.cc (see that file for the loop structure).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "gemm.h"
#include "simd.h"

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

#if defined(__AVX512F__)
// One full MR = 12 row panel of an untransposed A: 16-column slabs transposed in registers (as
// pack_b_trans_panel, with 4 zero rows) and written as 12-lane masked stores, instead of one
// strided scalar store per element. Same values (alpha * a) as the scalar loop. Why: perf on the
// fused attention put the scalar pack at ~70% of the microkernel's time (n = head dim 32 gives
// only 64 FLOPs per packed element), and it is the A pack of every x @ W^T too.
static void pack_a_panel(const float* a, int64_t lda, float alpha, int64_t kc, float* dst) {
  static_assert(MR == 12, "pack_a_panel transposes 12 rows");
  const int64_t kv = kc / 16 * 16;
  const __m512 al = _mm512_set1_ps(alpha);
  for (int64_t p0 = 0; p0 < kv; p0 += 16) {
    __m512 r[16], t[16], u[16];
    for (int i = 0; i < MR; ++i) r[i] = _mm512_mul_ps(al, _mm512_loadu_ps(a + i * lda + p0));
    for (int i = MR; i < 16; ++i) r[i] = _mm512_setzero_ps();
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {
      const __m512d a0 = _mm512_castps_pd(t[g]), a1 = _mm512_castps_pd(t[g + 1]);
      const __m512d a2 = _mm512_castps_pd(t[g + 2]), a3 = _mm512_castps_pd(t[g + 3]);
      u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
      u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
      u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
      u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    const __mmask16 m = 0x0FFF;
    for (int e = 0; e < 4; ++e) {  // lanes 0..11 = the panel's 12 rows at column p
      const __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x44);
      const __m512 v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xEE);
      const __m512 w0 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x44);
      const __m512 w1 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xEE);
      _mm512_mask_storeu_ps(dst + (p0 + e) * MR, m, _mm512_shuffle_f32x4(v0, w0, 0x88));
      _mm512_mask_storeu_ps(dst + (p0 + 4 + e) * MR, m, _mm512_shuffle_f32x4(v0, w0, 0xDD));
      _mm512_mask_storeu_ps(dst + (p0 + 8 + e) * MR, m, _mm512_shuffle_f32x4(v1, w1, 0x88));
      _mm512_mask_storeu_ps(dst + (p0 + 12 + e) * MR, m, _mm512_shuffle_f32x4(v1, w1, 0xDD));
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int64_t p = kv; p < kc; ++p) dst[p * MR + i] = alpha * a[i * lda + p];
}
#endif

// Packs alpha * op(A)[0:mc, 0:kc] into MR-row panels [ceil(mc/MR), kc, MR], zero-padding the last.
static void pack_a(const float* a, int64_t lda, bool trans, float alpha, int64_t mc, int64_t kc, float* dst) {
  for (int64_t r = 0; r < mc; r += MR, dst += kc * MR) {
    const int mr = static_cast<int>(std::min<int64_t>(MR, mc - r));
#if defined(__AVX512F__)
    if (!trans && mr == MR) {
      pack_a_panel(a + r * lda, lda, alpha, kc, dst);
      continue;
    }
#endif
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

#if defined(__AVX512F__)
// One full NR = 32 panel of a transposed B (stored [N, K]): 16 x 16 blocks transposed in
// registers (unpack, then 64-bit unpack, then 128-bit lane shuffles) instead of one scalar store
// per element; the scalar version cost as much as the product for the sampler's x @ W^T.
static void pack_b_trans_panel(const float* b, int64_t ldb, int64_t kc, float* d) {
  const int64_t kv = kc / 16 * 16;
  for (int half = 0; half < 2; ++half) {
    const float* src = b + half * 16 * ldb;
    float* dst = d + half * 16;
    for (int64_t p0 = 0; p0 < kv; p0 += 16) {
      __m512 r[16], t[16], u[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * ldb + p0);
      for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
      }
      for (int g = 0; g < 16; g += 4) {  // rows g..g+3: u[g + e] holds element e of each lane
        const __m512d a0 = _mm512_castps_pd(t[g]), a1 = _mm512_castps_pd(t[g + 1]);
        const __m512d a2 = _mm512_castps_pd(t[g + 2]), a3 = _mm512_castps_pd(t[g + 3]);
        u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
      }
      for (int e = 0; e < 4; ++e) {  // p = 4 * lane + e gathers lane `lane` of the 4 row groups
        const __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x44);
        const __m512 v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xEE);
        const __m512 w0 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x44);
        const __m512 w1 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xEE);
        _mm512_storeu_ps(dst + (p0 + e) * NR, _mm512_shuffle_f32x4(v0, w0, 0x88));
        _mm512_storeu_ps(dst + (p0 + 4 + e) * NR, _mm512_shuffle_f32x4(v0, w0, 0xDD));
        _mm512_storeu_ps(dst + (p0 + 8 + e) * NR, _mm512_shuffle_f32x4(v1, w1, 0x88));
        _mm512_storeu_ps(dst + (p0 + 12 + e) * NR, _mm512_shuffle_f32x4(v1, w1, 0xDD));
      }
    }
    for (int jj = 0; jj < 16; ++jj)
      for (int64_t p = kv; p < kc; ++p) dst[p * NR + jj] = src[jj * ldb + p];
  }
}
#endif

// Packs op(B)[0:kc, j0:nc] into NR-column panels [*, kc, NR] (panel q at dst + q*kc*NR).
static void pack_b(const float* b, int64_t ldb, bool trans, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t j = j0; j < nc; j += NR) {
    float* d = dst + (j / NR) * kc * NR;
    const int nr = static_cast<int>(std::min<int64_t>(NR, nc - j));
    if (trans) {  // stored [N, K]
#if defined(__AVX512F__)
      static_assert(NR == 32, "pack_b_trans_panel packs two 16-column halves");
      if (nr == NR) {
        pack_b_trans_panel(b + j * ldb, ldb, kc, d);
        continue;
      }
#endif
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

static inline int64_t padded_n(int64_t n) { return (n + NR - 1) / NR * NR; }

// All of op(B) [K, N] (N <= NC) packed as pack_b does per KC block, block pc at pc * padded_n(N).
static void pack_all_b(const float* b, const GemmParams& p, float* dst) {
  for (int64_t pc = 0; pc < p.k; pc += KC) {
    const int64_t kc = std::min(KC, p.k - pc);
    pack_b(p.trans_b ? b + pc : b + pc * p.ldb, p.ldb, p.trans_b, kc, 0, p.n, dst + pc * padded_n(p.n));
  }
}

}  // namespace crl
