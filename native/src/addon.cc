// Node-API entry points. Typed arrays are passed zero-copy (their data pointers); the scalar
// arguments arrive packed in one Float64Array so a call costs a handful of napi calls, not one
// property lookup per field (the sampler makes many small calls; see bench/gemm.ts).
#include <napi.h>

#include <cmath>
#include <string>

#include "gemm.h"
#include "ops.h"
#include "thread-pool.h"

namespace {

constexpr size_t kParamCount = 17;

// Order must match GEMM_PARAM_ORDER in src/tensor/native.ts.
crl::GemmParams unpack(const double* v) {
  crl::GemmParams p;
  p.m = static_cast<int64_t>(v[0]);
  p.n = static_cast<int64_t>(v[1]);
  p.k = static_cast<int64_t>(v[2]);
  p.trans_a = v[3] != 0;
  p.trans_b = v[4] != 0;
  p.accumulate = v[5] != 0;
  p.alpha = static_cast<float>(v[6]);
  p.lda = static_cast<int64_t>(v[7]);
  p.ldb = static_cast<int64_t>(v[8]);
  p.ldc = static_cast<int64_t>(v[9]);
  p.off_a = static_cast<int64_t>(v[10]);
  p.off_b = static_cast<int64_t>(v[11]);
  p.off_c = static_cast<int64_t>(v[12]);
  p.batch = static_cast<int64_t>(v[13]);
  p.stride_a = static_cast<int64_t>(v[14]);
  p.stride_b = static_cast<int64_t>(v[15]);
  p.stride_c = static_cast<int64_t>(v[16]);
  return p;
}

bool is_f32(const Napi::Value& v) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_float32_array;
}

// gemm(a: Float32Array, b: Float32Array, c: Float32Array, params: Float64Array(17)): undefined
Napi::Value Gemm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 4 || !is_f32(info[0]) || !is_f32(info[1]) || !is_f32(info[2]) ||
      !info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    Napi::TypeError::New(env, "gemm(a, b, c, params): three Float32Arrays and a Float64Array").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto params = info[3].As<Napi::Float64Array>();
  if (params.ElementLength() < kParamCount) {
    Napi::TypeError::New(env, "gemm: params must hold 17 numbers").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const float* a = info[0].As<Napi::Float32Array>().Data();
  const float* b = info[1].As<Napi::Float32Array>().Data();
  float* c = info[2].As<Napi::Float32Array>().Data();
  crl::gemm(a, b, c, unpack(params.Data()));
  return env.Undefined();
}

// A no-op with the same argument marshalling as gemm: the bench subtracts it to get kernel time.
Napi::Value Noop(const Napi::CallbackInfo& info) {
  if (info.Length() == 4 && is_f32(info[0]) && is_f32(info[1]) && is_f32(info[2])) {
    volatile const float* c = info[2].As<Napi::Float32Array>().Data();
    (void)c;
  }
  return info.Env().Undefined();
}

Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("threads", crl::pool().size());
#if defined(__AVX512F__)
  o.Set("isa", "avx512");
#elif defined(__AVX2__)
  o.Set("isa", "avx2");
#elif defined(__AVX__)
  o.Set("isa", "avx");
#elif defined(__aarch64__)
  o.Set("isa", "neon");
#else
  o.Set("isa", "generic");
#endif
  o.Set("parallelMinFlops", static_cast<double>(crl::g_parallel_min_flops));
  return o;
}

// Tuning hook for bench/gemm.ts (the cutoff below which one thread is used).
Napi::Value SetParallelMinFlops(const Napi::CallbackInfo& info) {
  if (info.Length() == 1 && info[0].IsNumber()) {
    const double v = info[0].As<Napi::Number>().DoubleValue();
    if (v >= 0) crl::g_parallel_min_flops = static_cast<int64_t>(v);
  }
  return info.Env().Undefined();
}

// Float32Array argument i with at least `need` elements, or a thrown error (returns nullptr).
float* f32_arg(const Napi::CallbackInfo& info, size_t i, int64_t need, const char* fn) {
  if (i >= info.Length() || !is_f32(info[i])) {
    Napi::TypeError::New(info.Env(), std::string(fn) + ": argument " + std::to_string(i) + " must be a Float32Array")
        .ThrowAsJavaScriptException();
    return nullptr;
  }
  auto arr = info[i].As<Napi::Float32Array>();
  if (need < 0 || static_cast<int64_t>(arr.ElementLength()) < need) {
    Napi::RangeError::New(info.Env(), std::string(fn) + ": argument " + std::to_string(i) + " too small (" +
                                          std::to_string(arr.ElementLength()) + " < " + std::to_string(need) + ")")
        .ThrowAsJavaScriptException();
    return nullptr;
  }
  return arr.Data();
}

// Non-negative integer argument i, or -1 after throwing.
int64_t int_arg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (i < info.Length() && info[i].IsNumber()) {
    const double v = info[i].As<Napi::Number>().DoubleValue();
    if (v >= 0 && v == static_cast<double>(static_cast<int64_t>(v))) return static_cast<int64_t>(v);
  }
  Napi::TypeError::New(info.Env(), std::string(fn) + ": argument " + std::to_string(i) + " must be a non-negative integer")
      .ThrowAsJavaScriptException();
  return -1;
}

// swigluForward(out, sig, inp, n, f)
Napi::Value SwigluForward(const Napi::CallbackInfo& info) {
  const char* fn = "swigluForward";
  const int64_t n = int_arg(info, 3, fn), f = n < 0 ? -1 : int_arg(info, 4, fn);
  if (f < 0) return info.Env().Undefined();
  float* out = f32_arg(info, 0, n * f, fn);
  float* sig = out ? f32_arg(info, 1, n * f, fn) : nullptr;
  float* inp = sig ? f32_arg(info, 2, n * 2 * f, fn) : nullptr;
  if (inp) crl::swiglu_forward(out, sig, inp, n, f);
  return info.Env().Undefined();
}

// swigluBackward(dinp, dout, inp, sig, n, f)
Napi::Value SwigluBackward(const Napi::CallbackInfo& info) {
  const char* fn = "swigluBackward";
  const int64_t n = int_arg(info, 4, fn), f = n < 0 ? -1 : int_arg(info, 5, fn);
  if (f < 0) return info.Env().Undefined();
  float* dinp = f32_arg(info, 0, n * 2 * f, fn);
  float* dout = dinp ? f32_arg(info, 1, n * f, fn) : nullptr;
  float* inp = dout ? f32_arg(info, 2, n * 2 * f, fn) : nullptr;
  float* sig = inp ? f32_arg(info, 3, n * f, fn) : nullptr;
  if (sig) crl::swiglu_backward(dinp, dout, inp, sig, n, f);
  return info.Env().Undefined();
}

// causalSoftmaxForward(x, offset, blocks, l)
Napi::Value CausalSoftmaxForward(const Napi::CallbackInfo& info) {
  const char* fn = "causalSoftmaxForward";
  const int64_t off = int_arg(info, 1, fn), blocks = off < 0 ? -1 : int_arg(info, 2, fn);
  const int64_t l = blocks < 0 ? -1 : int_arg(info, 3, fn);
  if (l < 0) return info.Env().Undefined();
  float* x = f32_arg(info, 0, off + blocks * l * l, fn);
  if (x) crl::causal_softmax_forward(x + off, blocks, l);
  return info.Env().Undefined();
}

// causalSoftmaxBackward(grad, gradOffset, probs, probsOffset, blocks, l)
Napi::Value CausalSoftmaxBackward(const Napi::CallbackInfo& info) {
  const char* fn = "causalSoftmaxBackward";
  const int64_t goff = int_arg(info, 1, fn), poff = goff < 0 ? -1 : int_arg(info, 3, fn);
  const int64_t blocks = poff < 0 ? -1 : int_arg(info, 4, fn), l = blocks < 0 ? -1 : int_arg(info, 5, fn);
  if (l < 0) return info.Env().Undefined();
  float* g = f32_arg(info, 0, goff + blocks * l * l, fn);
  float* p = g ? f32_arg(info, 2, poff + blocks * l * l, fn) : nullptr;
  if (p) crl::causal_softmax_backward(g + goff, p + poff, blocks, l);
  return info.Env().Undefined();
}

// decodeAttention(q, qOffset, kc, vc, cacheBase, len, s, h, d, scale, out, outOffset)
Napi::Value DecodeAttention(const Napi::CallbackInfo& info) {
  const char* fn = "decodeAttention";
  int64_t iv[6];  // qOffset, cacheBase, len, s, h, d
  const size_t idx[6] = {1, 4, 5, 6, 7, 8};
  for (int i = 0; i < 6; ++i)
    if ((iv[i] = int_arg(info, idx[i], fn)) < 0) return info.Env().Undefined();
  const int64_t q_off = iv[0], base = iv[1], len = iv[2], s = iv[3], h = iv[4], d = iv[5];
  const int64_t out_off = int_arg(info, 11, fn);
  if (out_off < 0 || info.Length() < 11 || !info[9].IsNumber()) {
    if (out_off >= 0) Napi::TypeError::New(info.Env(), "decodeAttention: scale must be a number").ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  if (len < 1 || len > s) {
    Napi::RangeError::New(info.Env(), "decodeAttention: need 1 <= len <= s").ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  const float scale = static_cast<float>(info[9].As<Napi::Number>().DoubleValue());
  const int64_t cache_need = h == 0 ? 0 : base + (h - 1) * s * d + len * d;
  const float* q = f32_arg(info, 0, q_off + h * d, fn);
  const float* kc = q ? f32_arg(info, 2, cache_need, fn) : nullptr;
  const float* vc = kc ? f32_arg(info, 3, cache_need, fn) : nullptr;
  float* out = vc ? f32_arg(info, 10, out_off + h * d, fn) : nullptr;
  if (out) crl::decode_attention(q + q_off, kc + base, vc + base, out + out_off, len, s, h, d, scale);
  return info.Env().Undefined();
}

// Finite number argument i, or NaN after throwing.
double num_arg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (i < info.Length() && info[i].IsNumber()) return info[i].As<Napi::Number>().DoubleValue();
  Napi::TypeError::New(info.Env(), std::string(fn) + ": argument " + std::to_string(i) + " must be a number")
      .ThrowAsJavaScriptException();
  return std::nan("");
}

// rmsnormForward(out, rstd, inp, weight, n, c, eps)
Napi::Value RmsnormForward(const Napi::CallbackInfo& info) {
  const char* fn = "rmsnormForward";
  const int64_t n = int_arg(info, 4, fn), c = n < 0 ? -1 : int_arg(info, 5, fn);
  const double eps = c < 0 ? std::nan("") : num_arg(info, 6, fn);
  if (std::isnan(eps)) return info.Env().Undefined();
  float* out = f32_arg(info, 0, n * c, fn);
  float* rstd = out ? f32_arg(info, 1, n, fn) : nullptr;
  float* inp = rstd ? f32_arg(info, 2, n * c, fn) : nullptr;
  float* w = inp ? f32_arg(info, 3, c, fn) : nullptr;
  if (w) crl::rmsnorm_forward(out, rstd, inp, w, n, c, static_cast<float>(eps));
  return info.Env().Undefined();
}

// rmsnormBackward(dinp, dweight, dout, inp, weight, rstd, n, c)
Napi::Value RmsnormBackward(const Napi::CallbackInfo& info) {
  const char* fn = "rmsnormBackward";
  const int64_t n = int_arg(info, 6, fn), c = n < 0 ? -1 : int_arg(info, 7, fn);
  if (c < 0) return info.Env().Undefined();
  float* dinp = f32_arg(info, 0, n * c, fn);
  float* dw = dinp ? f32_arg(info, 1, c, fn) : nullptr;
  float* dout = dw ? f32_arg(info, 2, n * c, fn) : nullptr;
  float* inp = dout ? f32_arg(info, 3, n * c, fn) : nullptr;
  float* w = inp ? f32_arg(info, 4, c, fn) : nullptr;
  float* rstd = w ? f32_arg(info, 5, n, fn) : nullptr;
  if (rstd) crl::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, n, c);
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("gemm", Napi::Function::New(env, Gemm, "gemm"));
  exports.Set("noop", Napi::Function::New(env, Noop, "noop"));
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  exports.Set("swigluForward", Napi::Function::New(env, SwigluForward, "swigluForward"));
  exports.Set("swigluBackward", Napi::Function::New(env, SwigluBackward, "swigluBackward"));
  exports.Set("causalSoftmaxForward", Napi::Function::New(env, CausalSoftmaxForward, "causalSoftmaxForward"));
  exports.Set("causalSoftmaxBackward", Napi::Function::New(env, CausalSoftmaxBackward, "causalSoftmaxBackward"));
  exports.Set("decodeAttention", Napi::Function::New(env, DecodeAttention, "decodeAttention"));
  exports.Set("rmsnormForward", Napi::Function::New(env, RmsnormForward, "rmsnormForward"));
  exports.Set("rmsnormBackward", Napi::Function::New(env, RmsnormBackward, "rmsnormBackward"));
  exports.Set("setParallelMinFlops", Napi::Function::New(env, SetParallelMinFlops, "setParallelMinFlops"));
  return exports;
}

}  // namespace

NODE_API_MODULE(crl_native, Init)
