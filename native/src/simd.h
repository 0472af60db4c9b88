// Portable SIMD vocabulary shared by the kernels: GCC vector extensions sized to the widest
// vector -march=native offers (AVX-512: 16 floats, AVX: 8, else 4).
#pragma once
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace crl {

#if defined(__AVX512F__)
constexpr int VW = 16;
#elif defined(__AVX__)
constexpr int VW = 8;
#else
constexpr int VW = 4;
#endif

typedef float vf __attribute__((vector_size(VW * 4)));
typedef int32_t vi __attribute__((vector_size(VW * 4)));
typedef float vfu __attribute__((vector_size(VW * 4), aligned(4), may_alias));

inline vf load(const float* p) { return *reinterpret_cast<const vfu*>(p); }
inline void store(float* p, vf v) { *reinterpret_cast<vfu*>(p) = v; }
inline vf splat(float x) { return vf{} + x; }

// e^x, Cephes expf scheme (range reduction by ln 2, degree-6 polynomial): ~1-2 ulp over the
// float range, 0 below -87.3 (softmax subtracts the row max, so large negatives are common).
inline vf vexp(vf x) {
  const vf lo = splat(-87.33654f), hi = splat(88.72283f);
  vf xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  // Round x / ln2 to the nearest integer with the 1.5 * 2^23 trick (no rounding instruction).
  const vf magic = splat(12582912.0f);
  const vf t = xc * splat(1.44269504088896341f) + magic;
  const vf n = t - magic;
  vf r = xc - n * splat(0.693359375f);
  r = r - n * splat(-2.12194440e-4f);
  vf p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  const vf y = p * r * r + r + splat(1.0f);
  // 2^n from the integer bits of t (n = bits(t) - bits(magic)), placed into the exponent.
  const vi ni = (vi)t - 0x4B400000;  // same-size vector casts reinterpret the bits
  const vi bits = (ni + 127) << 23;
  const vf result = y * (vf)bits;
  return x < lo ? vf{} : result;
}

inline float hsum(vf v) {
  float s = 0.f;
  for (int l = 0; l < VW; ++l) s += v[l];
  return s;
}

// out[y] = sum of the lanes of v[y], y < 4 (four dot products at once).
inline void reduce4(const vf* v, float* out) {
#if defined(__AVX512F__)
  // Transpose-and-add inside each 128-bit lane, then fold the four lanes: 11 ops, not 4 x 10.
  const __m512 t01 = _mm512_add_ps(_mm512_unpacklo_ps(v[0], v[1]), _mm512_unpackhi_ps(v[0], v[1]));
  const __m512 t23 = _mm512_add_ps(_mm512_unpacklo_ps(v[2], v[3]), _mm512_unpackhi_ps(v[2], v[3]));
  const __m512 u = _mm512_add_ps(_mm512_shuffle_ps(t01, t23, 0x44), _mm512_shuffle_ps(t01, t23, 0xEE));
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(u), 1));  // AVX512F only
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(u), hi);
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
#else
  for (int y = 0; y < 4; ++y) out[y] = hsum(v[y]);
#endif
}

inline float hmax(vf v) {
  float m = v[0];
  for (int l = 1; l < VW; ++l) m = v[l] > m ? v[l] : m;
  return m;
}

}  // namespace crl
