// Native twin of src/tensor/logprob.ts's logprobForward, bit-identical to it: the same double
// arithmetic in the same order, and exp / log from the running Node itself. JavaScript's Math.exp
// and Math.log are V8's own fdlibm ports (v8::base::ieee754), which the node executable exports;
// calling those (found with dlsym at load) instead of the C library's keeps every rounding equal.
// Without them (another JavaScript engine build, another platform) logprob_available() is false
// and the TypeScript twin runs. src/tensor/native-ops.ts also checks a table of values against
// Math.exp / Math.log before using this.
#include "ops.h"

#include <cmath>
#include <limits>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include "gemm.h"
#include "thread-pool.h"

namespace crl {

namespace {

using MathFn = double (*)(double);

struct V8Math {
  MathFn exp = nullptr;
  MathFn log = nullptr;
  V8Math() {
#if defined(__unix__) || defined(__APPLE__)
    exp = reinterpret_cast<MathFn>(dlsym(RTLD_DEFAULT, "_ZN2v84base7ieee7543expEd"));
    log = reinterpret_cast<MathFn>(dlsym(RTLD_DEFAULT, "_ZN2v84base7ieee7543logEd"));
#endif
  }
};

const V8Math& v8_math() {
  static const V8Math m;
  return m;
}

}  // namespace

bool logprob_available() { return v8_math().exp != nullptr && v8_math().log != nullptr; }

void v8_math_apply(double* x, int64_t n, bool log) {
  const MathFn f = log ? v8_math().log : v8_math().exp;
  for (int64_t i = 0; i < n; ++i) x[i] = f(x[i]);
}

// No fused multiply-adds here: logprob.ts rounds every product before the next add.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

static void logprob_rows(float* probs, const int32_t* targets, float* logprobs, float* entropies, int64_t lo,
                         int64_t hi, int64_t v) {
  const MathFn fexp = v8_math().exp, flog = v8_math().log;
  for (int64_t r = lo; r < hi; ++r) {
    float* z = probs + r * v;
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < v; ++j)
      if (z[j] > mx) mx = z[j];
    double sum = 0;
    for (int64_t j = 0; j < v; ++j) sum += fexp(static_cast<double>(z[j]) - mx);
    const double lse = mx + flog(sum);
    double ent = 0;
    const int32_t t = targets[r];
    logprobs[r] = t >= 0 ? static_cast<float>(static_cast<double>(z[t]) - lse) : 0.f;
    for (int64_t j = 0; j < v; ++j) {
      const double lp = static_cast<double>(z[j]) - lse;
      const double p = fexp(lp);
      const double term = p * lp;
      ent -= term;
      z[j] = static_cast<float>(p);
    }
    entropies[r] = static_cast<float>(ent);
  }
}

// decode-attention.ts maskedSoftmaxRow: softmax over x[0 : len] in double, zeros on [len, width).
static void masked_softmax_row(float* x, int64_t len, int64_t width) {
  const MathFn fexp = v8_math().exp;
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < len; ++j)
    if (x[j] > mx) mx = x[j];
  double sum = 0;
  for (int64_t j = 0; j < len; ++j) {
    const double e = fexp(static_cast<double>(x[j]) - mx);
    x[j] = static_cast<float>(e);
    sum += e;
  }
  const double inv = 1 / sum;
  for (int64_t j = 0; j < len; ++j) x[j] = static_cast<float>(static_cast<double>(x[j]) * inv);
  for (int64_t j = len; j < width; ++j) x[j] = 0.f;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

namespace {

// Eight doubles; GCC lowers the vector to what -march offers (one AVX-512 register, two AVX).
typedef double vd __attribute__((vector_size(64)));
typedef int64_t vl __attribute__((vector_size(64)));
typedef double vdu __attribute__((vector_size(64), aligned(8), may_alias));
typedef float v8f __attribute__((vector_size(32), aligned(4), may_alias));
constexpr int DW = 8;

inline vd splatd(double x) { return vd{} + x; }

// e^x for x <= 0 in double: x = n ln2 + r (|r| <= ln2 / 2, ln2 in two parts), e^r by its Taylor
// series to degree 13 (truncation below 1e-17 relative), 2^n into the exponent bits; 0 below -708
// (a term that small adds nothing to a sum of at least 1). Within a few ulp of exp, not equal to
// V8's bit for bit: the draw only needs the distribution, and a scalar call per logit of V8's own
// exp cost 2.7 ms a row at a 151,936-token vocabulary.
inline vd vexpd(vd x) {
  const vd lo = splatd(-708.0);
  const vd xc = x < lo ? lo : x;
  const vd n = __builtin_convertvector(__builtin_convertvector(xc * splatd(1.4426950408889634) - splatd(0.5), vl), vd);
  // Rounds toward zero above; x <= 0, so n = trunc(x / ln2 - 0.5) is round-half-down of x / ln2.
  const vd r = (xc - n * splatd(6.93147180369123816490e-01)) - n * splatd(1.90821492927058770002e-10);
  vd p = splatd(1.0 / 6227020800.0);  // 1/13!
  const double inv[13] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
                          1.0 / 5040.0,      1.0 / 720.0,       1.0 / 120.0,       1.0 / 24.0,       1.0 / 6.0,
                          0.5,               1.0,               1.0};
  for (int i = 0; i < 13; ++i) p = p * r + splatd(inv[i]);
  const vl bits = (__builtin_convertvector(n, vl) + 1023) << 52;
  const vd out = p * (vd)bits;
  return x < lo ? vd{} : out;
}

inline vd widen8(const float* p) { return __builtin_convertvector(*reinterpret_cast<const v8f*>(p), vd); }
inline double hsumd(vd v) {
  double s = 0;
  for (int l = 0; l < DW; ++l) s += v[l];
  return s;
}

// sampling.ts's drawToken at temperature 1 (u >= 0: the row's uniform) or 0 (u < 0: the argmax),
// top-p 1, with its formulas (sum, H = log(sum) - sum e (z - max) / sum, the draw's scan) but
// vectorized: exp by vexpd, the sums in eight lanes. e[] holds the row's exp terms.
void draw_row(const float* x, int64_t v, double u, double* e, int32_t* token, double* logprob, double* entropy) {
  float mxf = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < v; ++j) mxf = x[j] > mxf ? x[j] : mxf;
  int64_t arg = 0;
  while (arg < v - 1 && !(x[arg] == mxf)) ++arg;  // the first maximum, as drawToken's strict >
  const double mx = mxf;
  vd sum8{}, ez8{};
  int64_t j = 0;
  for (; j + DW <= v; j += DW) {
    const vd d = widen8(x + j) - splatd(mx);
    const vd ej = vexpd(d);
    *reinterpret_cast<vdu*>(e + j) = ej;
    sum8 += ej;
    ez8 += ej > 0 ? ej * d : vd{};  // a masked logit (-inf) adds nothing, not 0 * -inf
  }
  double sum = hsumd(sum8), ez = hsumd(ez8);
  for (; j < v; ++j) {
    const double d = static_cast<double>(x[j]) - mx;
    vd dv = splatd(d);
    const double ej = vexpd(dv)[0];
    e[j] = ej;
    sum += ej;
    if (ej > 0) ez += ej * d;
  }
  const double log_sum = std::log(sum);
  const double lse = mx + log_sum;
  int64_t t = arg;
  if (u >= 0) {
    // Skip whole blocks of 64 terms while the draw lies past them, then scan the block.
    double left = u * sum;
    t = -1;
    int64_t b = 0;
    for (; b + 64 <= v; b += 64) {
      vd s8{};
      for (int k = 0; k < 64; k += DW) s8 += *reinterpret_cast<const vdu*>(e + b + k);
      const double block = hsumd(s8);
      if (left - block >= 0) {
        left -= block;
        continue;
      }
      break;
    }
    for (int64_t k = b; k < v; ++k) {
      left -= e[k];
      if (left < 0) {
        t = k;
        break;
      }
    }
    // Rounding left mass after the last term: the last token with mass (as sampling.ts).
    for (int64_t k = v - 1; t < 0 && k >= 0; --k)
      if (e[k] > 0) t = k;
    if (t < 0) t = 0;
  }
  *token = static_cast<int32_t>(t);
  *logprob = static_cast<double>(x[t]) - lse;
  *entropy = log_sum - ez / sum;
}

}  // namespace

namespace {
struct ExtendJob {
  const float* qkv;
  const int32_t *starts, *prefixes, *slots;
  const float *kc, *vc;
  int64_t s, h, hkv, d;
  float* out;
};

void extend_task(void* ctx, int64_t t) {
  const ExtendJob& j = *static_cast<const ExtendJob*>(ctx);
  const int64_t i = t / j.h, hh = t % j.h, kv = hh / (j.h / j.hkv);
  const int64_t row0 = j.starts[i], u = j.starts[i + 1] - row0, width = j.prefixes[i] + u;
  if (u == 0) return;
  const int64_t d = j.d, c = j.h * d, w = (j.h + 2 * j.hkv) * d;
  const int64_t base = (static_cast<int64_t>(j.slots[i]) * j.hkv + kv) * j.s * d;
  thread_local std::vector<float> scratch;
  if (static_cast<int64_t>(scratch.size()) < u * width) scratch.resize(u * width);
  // scores[t, 0:width] = scale * Q_hh[t] @ K_kv[0:width]^T
  GemmParams p{};
  p.m = u; p.n = width; p.k = d; p.trans_b = true; p.batch = 1;
  p.alpha = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));  // as decode-attention.ts's alpha
  p.lda = w; p.ldb = d; p.ldc = width;
  gemm_serial(j.qkv + row0 * w + hh * d, j.kc + base, scratch.data(), p);
  for (int64_t q = 0; q < u; ++q) masked_softmax_row(scratch.data() + q * width, j.prefixes[i] + q + 1, width);
  // out_hh[t] = p[t] @ V_kv[0:width]
  GemmParams o{};
  o.m = u; o.n = d; o.k = width; o.alpha = 1.f; o.batch = 1;
  o.lda = width; o.ldb = d; o.ldc = c;
  gemm_serial(scratch.data(), j.vc + base, j.out + row0 * c + hh * d, o);
}
}  // namespace

void extend_attention(const float* qkv, const int32_t* starts, const int32_t* prefixes, const int32_t* slots,
                      int64_t r, float* kc, float* vc, int64_t s, int64_t h, int64_t hkv, int64_t d, float* out) {
  const int64_t w = (h + 2 * hkv) * d;
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t row = starts[i]; row < starts[i + 1]; ++row) {
      const int64_t pos = prefixes[i] + row - starts[i];
      for (int64_t kv = 0; kv < hkv; ++kv) {
        const int64_t dst = ((static_cast<int64_t>(slots[i]) * hkv + kv) * s + pos) * d;
        std::memcpy(kc + dst, qkv + row * w + (h + kv) * d, sizeof(float) * d);
        std::memcpy(vc + dst, qkv + row * w + (h + hkv + kv) * d, sizeof(float) * d);
      }
    }
  }
  ExtendJob job{qkv, starts, prefixes, slots, kc, vc, s, h, hkv, d, out};
  pool().run(r * h, extend_task, &job);
}

void logprob_forward(float* probs, const int32_t* targets, float* logprobs, float* entropies, int64_t n, int64_t v) {
  // Rows are independent: both threads, same results.
  const int64_t nt = n * v < (1 << 14) ? 1 : std::min<int64_t>(n, 4 * pool().size());
  struct Ctx {
    float* probs;
    const int32_t* targets;
    float* logprobs;
    float* entropies;
    int64_t n, v, ntasks;
  } ctx{probs, targets, logprobs, entropies, n, v, nt};
  if (nt <= 1) {
    logprob_rows(probs, targets, logprobs, entropies, 0, n, v);
    return;
  }
  pool().run(nt, [](void* p, int64_t t) {
    const Ctx& c = *static_cast<const Ctx*>(p);
    logprob_rows(c.probs, c.targets, c.logprobs, c.entropies, c.n * t / c.ntasks, c.n * (t + 1) / c.ntasks, c.v);
  }, &ctx);
}

void draw_rows(const float* logits, int64_t n, int64_t v, const double* u, int32_t* tokens, double* logprobs,
               double* entropies) {
  struct Ctx {
    const float* logits;
    int64_t v;
    const double* u;
    int32_t* tokens;
    double *logprobs, *entropies;
  } ctx{logits, v, u, tokens, logprobs, entropies};
  // A row per task: each row's sums keep sampling.ts's order (a row split across threads would not).
  pool().run(n, [](void* p, int64_t r) {
    const Ctx& c = *static_cast<const Ctx*>(p);
    thread_local std::vector<double> e;
    if (static_cast<int64_t>(e.size()) < c.v) e.resize(c.v);
    draw_row(c.logits + r * c.v, c.v, c.u[r], e.data(), c.tokens + r, c.logprobs + r, c.entropies + r);
  }, &ctx);
}

}  // namespace crl
