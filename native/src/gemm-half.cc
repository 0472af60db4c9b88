// x @ W^T with W in f16 or bf16, accumulated in f32.
//
// Why a purpose-built kernel: batch-1 decode reads every weight once per token and does two
// FLOPs with it, so its speed is the memory bandwidth divided by the bytes per weight. Halving
// the bytes only pays if the 16-bit values are widened in registers as they stream by; widening
// into an f32 copy first (and running the f32 GEMM) would write and re-read the very bytes we set
// out to save. So the microkernel of gemm.cc is repeated here with its B panel read as 16-bit
// values and widened with one instruction per vector (vcvtph2ps for f16, a zero-extend and a
// 16-bit shift for bf16, which is the top half of an f32). Same panel layout (gemm-pack.h), same
// loop order, same accumulation (f32 FMA chains over K in KC blocks).
#include "gemm-half.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "gemm-pack.h"
#include "simd.h"
#include "small-a.h"
#include "thread-pool.h"

#if defined(__F16C__) && !defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace crl {

namespace {

typedef uint16_t vh __attribute__((vector_size(VW * 2), aligned(2), may_alias));
typedef uint32_t vu __attribute__((vector_size(VW * 4)));

// One f16 bit pattern's f32 bits (exact; used where no conversion instruction exists).
inline uint32_t f16_bits_to_f32(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return sign | 0x7f800000u | (m << 13);
  if (e != 0) return sign | ((e + 112) << 23) | (m << 13);
  if (m == 0) return sign;
  int shift = 0;  // subnormal: normalize the mantissa
  uint32_t mm = m;
  while ((mm & 0x400) == 0) {
    mm <<= 1;
    ++shift;
  }
  return sign | ((113 - shift) << 23) | ((mm & 0x3ff) << 13);
}

// f32 bits rounded to f16 bits, nearest even (the rule of src/tensor/half-float.ts f32BitsToF16).
inline uint16_t f32_bits_to_f16(uint32_t x) {
  const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u);
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a >= 0x38800000u) return sign | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13);
  const uint32_t e = a >> 23;
  if (e < 102) return sign;
  const uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return sign | q;
}

// f32 bits rounded to bf16 bits, nearest even (NaN stays NaN; half-float.ts f32ToBf16).
inline uint16_t f32_bits_to_bf16(uint32_t x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// VW consecutive 16-bit values widened to f32.
template <HalfFormat F>
inline vf widen(const uint16_t* p) {
  if constexpr (F == HalfFormat::BF16) {
    return (vf)(__builtin_convertvector(*reinterpret_cast<const vh*>(p), vu) << 16);
  } else {
#if defined(__AVX512F__)
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif defined(__F16C__) && defined(__AVX__)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
    vu bits;
    for (int l = 0; l < VW; ++l) bits[l] = f16_bits_to_f32(p[l]);
    return (vf)bits;
#endif
  }
}

// micro_rows of gemm.cc with B 16-bit: acc[R, NR] = sum_p a[p, 0:R] (outer) widen(b[p, 0:NR]),
// then C[0:R, 0:nr] (+)= acc. a is packed ([kc, MR], alpha applied by pack_a).
template <int R, HalfFormat F>
void micro_half(int64_t kc, const float* __restrict a, const uint16_t* __restrict b, float* __restrict c, int64_t ldc,
                int nr, bool add) {
  vf acc0[R], acc1[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) acc0[i] = acc1[i] = vf{};
  for (int64_t p = 0; p < kc; ++p) {
    const vf b0 = widen<F>(b);
    const vf b1 = widen<F>(b + VW);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const float ai = a[i];
      acc0[i] += ai * b0;
      acc1[i] += ai * b1;
    }
    a += MR;
    b += NR;
  }
  alignas(64) float tmp[R * NR];
  for (int i = 0; i < R; ++i) {
    store(tmp + i * NR, acc0[i]);
    store(tmp + i * NR + VW, acc1[i]);
  }
  for (int i = 0; i < R; ++i) {
    float* row = c + i * ldc;
    const float* t = tmp + i * NR;
    if (add) {
      for (int j = 0; j < nr; ++j) row[j] += t[j];
    } else {
      for (int j = 0; j < nr; ++j) row[j] = t[j];
    }
  }
}

using MicroHalfFn = void (*)(int64_t, const float*, const uint16_t*, float*, int64_t, int, bool);

template <HalfFormat F, int... Rs>
constexpr std::array<MicroHalfFn, sizeof...(Rs)> micro_half_table(std::integer_sequence<int, Rs...>) {
  return {&micro_half<Rs + 1, F>...};
}
// [format][rows - 1]
const std::array<MicroHalfFn, MR> kMicro[2] = {
    micro_half_table<HalfFormat::F16>(std::make_integer_sequence<int, MR>{}),
    micro_half_table<HalfFormat::BF16>(std::make_integer_sequence<int, MR>{}),
};

struct HalfJob {
  const float* a;
  const uint16_t* packed;
  float* c;
  const GemmParams* p;
  int format;
  int64_t units, ntasks;  // B panels (few rows) or MR-row tiles (many rows)
};

// Few rows (a decode step): A packed once for every task (small-a.h), each task a range of W's
// panels for every row.
void half_panels_task(void* ctx, int64_t t) {
  const HalfJob& job = *static_cast<const HalfJob*>(ctx);
  const GemmParams& p = *job.p;
  const auto& micro = kMicro[job.format];
  const int64_t q0 = job.units * t / job.ntasks, q1 = job.units * (t + 1) / job.ntasks;
  const int64_t mp = small_a_rows(p.m);
  float* c = job.c + p.off_c;
  for (int64_t pc = 0; pc < p.k; pc += KC) {
    const int64_t kc = std::min(KC, p.k - pc);
    const bool add = p.accumulate || pc > 0;
    const uint16_t* block = job.packed + pc * padded_n(p.n);
    const float* ablock = job.a + pc * mp;
    for (int64_t q = q0; q < q1; ++q) {
      const int nr = static_cast<int>(std::min<int64_t>(NR, p.n - q * NR));
      for (int64_t i = 0; i < p.m; i += MR) {
        const int mr = static_cast<int>(std::min<int64_t>(MR, p.m - i));
        micro[mr - 1](kc, ablock + i * kc, block + q * kc * NR, c + i * p.ldc + q * NR, p.ldc, nr, add);
      }
    }
  }
}

// Many rows (a prompt's prefill): each task a range of MR-row tiles, A packed per KC block.
void half_rows_task(void* ctx, int64_t t) {
  const HalfJob& job = *static_cast<const HalfJob*>(ctx);
  const GemmParams& p = *job.p;
  const auto& micro = kMicro[job.format];
  const int64_t r0 = job.units * t / job.ntasks * MR, r1 = std::min(p.m, job.units * (t + 1) / job.ntasks * MR);
  thread_local std::vector<float> apack(static_cast<size_t>(MC * KC));  // heap: large TLS may not load
  const float* a = job.a + p.off_a;
  float* c = job.c + p.off_c;
  const int64_t panels = (p.n + NR - 1) / NR;
  for (int64_t pc = 0; pc < p.k; pc += KC) {
    const int64_t kc = std::min(KC, p.k - pc);
    const bool add = p.accumulate || pc > 0;
    const uint16_t* block = job.packed + pc * padded_n(p.n);
    for (int64_t ic = r0; ic < r1; ic += MC) {
      const int64_t mc = std::min(MC, r1 - ic);
      pack_a(a + ic * p.lda + pc, p.lda, false, p.alpha, mc, kc, apack.data());
      for (int64_t q = 0; q < panels; ++q) {
        const int nr = static_cast<int>(std::min<int64_t>(NR, p.n - q * NR));
        for (int64_t ir = 0; ir < mc; ir += MR) {
          const int mr = static_cast<int>(std::min<int64_t>(MR, mc - ir));
          micro[mr - 1](kc, apack.data() + ir * kc, block + q * kc * NR, c + (ic + ir) * p.ldc + q * NR, p.ldc, nr,
                        add);
        }
      }
    }
  }
}

}  // namespace

void pack_half_weight(const float* w, int64_t ldw, int64_t n, int64_t k, HalfFormat f, uint16_t* dst) {
  const int64_t np = padded_n(n);
  for (int64_t pc = 0; pc < k; pc += KC) {
    const int64_t kc = std::min(KC, k - pc);
    for (int64_t j0 = 0; j0 < n; j0 += NR) {
      uint16_t* d = dst + pc * np + j0 * kc;  // panel j0 / NR of block pc: [kc, NR]
      for (int64_t jj = 0; jj < NR; ++jj) {
        const int64_t j = j0 + jj;
        if (j >= n) {
          for (int64_t p = 0; p < kc; ++p) d[p * NR + jj] = 0;
          continue;
        }
        const float* src = w + j * ldw + pc;
        for (int64_t p = 0; p < kc; ++p) {
          uint32_t bits;
          std::memcpy(&bits, src + p, 4);
          d[p * NR + jj] = f == HalfFormat::F16 ? f32_bits_to_f16(bits) : f32_bits_to_bf16(bits);
        }
      }
    }
  }
}

void gemm_half(const float* a, const uint16_t* packed, float* c, const GemmParams& params, HalfFormat f) {
  GemmParams p = params;
  if (p.m <= 0 || p.n <= 0) return;
  if (p.k == 0 || p.alpha == 0.f) {
    if (!p.accumulate)
      for (int64_t i = 0; i < p.m; ++i) std::memset(c + p.off_c + i * p.ldc, 0, sizeof(float) * p.n);
    return;
  }
  const int format = f == HalfFormat::F16 ? 0 : 1;
  if (p.m <= kDirectMaxM) {
    // Memory-bound: split W's panels between threads once reading it pays for waking them.
    const int64_t panels = (p.n + NR - 1) / NR;
    const int64_t bytes = static_cast<int64_t>(sizeof(uint16_t)) * p.k * panels * NR;
    const int64_t nt = bytes < g_packed_parallel_min_bytes ? 1 : pool().size();
    // job.a: A packed (small-a.h), offset already applied.
    HalfJob job{pack_small_a(a + p.off_a, p), packed, c, &p, format, panels, std::min<int64_t>(panels, nt == 1 ? 1 : 4 * nt)};
    if (job.ntasks <= 1) half_panels_task(&job, 0);
    else pool().run(job.ntasks, half_panels_task, &job);
    return;
  }
  const double flops = 2.0 * p.m * p.n * p.k;
  const int64_t nt = flops < static_cast<double>(g_parallel_min_flops) ? 1 : pool().size();
  const int64_t tiles = (p.m + MR - 1) / MR;
  HalfJob job{a, packed, c, &p, format, tiles, 1};
  if (nt > 1) job.ntasks = std::min(tiles, std::clamp<int64_t>(tiles / 8, nt, 16 * nt));
  if (job.ntasks <= 1) half_rows_task(&job, 0);
  else pool().run(job.ntasks, half_rows_task, &job);
}

}  // namespace crl
