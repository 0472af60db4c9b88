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

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

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

}  // namespace crl
