// Node-API entry points. Typed arrays are passed zero-copy (their data pointers); the scalar
// arguments arrive packed in one Float64Array so a call costs a handful of napi calls, not one
// property lookup per field (the sampler makes many small calls; see bench/gemm.ts).
#include <napi.h>

#include "addon-args.h"
#include "gemm.h"
#include "gemm-half.h"
#include "thread-pool.h"

namespace crl_napi {
void register_ops(Napi::Env env, Napi::Object exports);
void register_attention(Napi::Env env, Napi::Object exports);
}  // namespace crl_napi

namespace {

using crl_napi::is_f32;

constexpr size_t kParamCount = 17;
// Bumped whenever an entry point's arguments change; src/tensor/native.ts refuses another value
// (an addon built from older sources would misread the new arguments).
constexpr int kAbiVersion = 4;

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

// packedWeightSize(n, k): floats packWeight writes.
Napi::Value PackedWeightSize(const Napi::CallbackInfo& info) {
  const int64_t n = crl_napi::int_arg(info, 0, "packedWeightSize");
  const int64_t k = n < 0 ? -1 : crl_napi::int_arg(info, 1, "packedWeightSize");
  if (k < 0) return info.Env().Undefined();
  return Napi::Number::New(info.Env(), static_cast<double>(crl::packed_weight_size(n, k)));
}

// packWeight(w, wOffset, n, k, dst): W [N, K] at wOffset packed into dst (packedWeightSize floats).
Napi::Value PackWeight(const Napi::CallbackInfo& info) {
  const char* fn = "packWeight";
  const int64_t off = crl_napi::int_arg(info, 1, fn), n = off < 0 ? -1 : crl_napi::int_arg(info, 2, fn);
  const int64_t k = n < 0 ? -1 : crl_napi::int_arg(info, 3, fn);
  if (k < 0) return info.Env().Undefined();
  const float* w = crl_napi::f32_arg(info, 0, off + n * k, fn);
  float* dst = w ? crl_napi::f32_arg(info, 4, crl::packed_weight_size(n, k), fn) : nullptr;
  if (dst) crl::pack_weight(w + off, k, n, k, dst);
  return info.Env().Undefined();
}

// gemmPacked(a, packed, c, params): C = alpha A W^T (+ C) with W from packWeight; params as gemm
// (transA 0; transB, ldb, offB and the batch fields are ignored). Bounds are checked by the caller.
Napi::Value GemmPacked(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 4 || !is_f32(info[0]) || !is_f32(info[1]) || !is_f32(info[2]) ||
      !info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[3].As<Napi::Float64Array>().ElementLength() < kParamCount) {
    Napi::TypeError::New(env, "gemmPacked(a, packed, c, params): three Float32Arrays and a Float64Array(17)")
        .ThrowAsJavaScriptException();
    return env.Undefined();
  }
  crl::gemm_packed(info[0].As<Napi::Float32Array>().Data(), info[1].As<Napi::Float32Array>().Data(),
                   info[2].As<Napi::Float32Array>().Data(), unpack(info[3].As<Napi::Float64Array>().Data()));
  return env.Undefined();
}

// packHalfWeight(w, wOffset, n, k, format, dst): W [N, K] at wOffset rounded to f16 (format 0)
// or bf16 (1) and packed into dst (a Uint16Array of packedWeightSize values).
Napi::Value PackHalfWeight(const Napi::CallbackInfo& info) {
  const char* fn = "packHalfWeight";
  const int64_t off = crl_napi::int_arg(info, 1, fn), n = off < 0 ? -1 : crl_napi::int_arg(info, 2, fn);
  const int64_t k = n < 0 ? -1 : crl_napi::int_arg(info, 3, fn);
  const int64_t format = k < 0 ? -1 : crl_napi::int_arg(info, 4, fn);
  if (format < 0) return info.Env().Undefined();
  if (format > 1) {
    Napi::RangeError::New(info.Env(), "packHalfWeight: format must be 0 (f16) or 1 (bf16)").ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  const float* w = crl_napi::f32_arg(info, 0, off + n * k, fn);
  uint16_t* dst = w ? crl_napi::u16_arg(info, 5, crl::packed_weight_size(n, k), fn) : nullptr;
  if (dst) crl::pack_half_weight(w + off, k, n, k, static_cast<crl::HalfFormat>(format), dst);
  return info.Env().Undefined();
}

// gemmHalf(a, packed, c, params, format): gemmPacked with W from packHalfWeight (a Uint16Array).
// Bounds are checked by the caller (src/tensor/half-weight.ts).
Napi::Value GemmHalf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 5 || !is_f32(info[0]) || !crl_napi::is_u16(info[1]) || !is_f32(info[2]) ||
      !info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[3].As<Napi::Float64Array>().ElementLength() < kParamCount || !info[4].IsNumber()) {
    Napi::TypeError::New(env, "gemmHalf(a, packed, c, params, format): Float32Array, Uint16Array, Float32Array, Float64Array(17), 0 | 1")
        .ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int format = info[4].As<Napi::Number>().Int32Value() == 0 ? 0 : 1;
  crl::gemm_half(info[0].As<Napi::Float32Array>().Data(), info[1].As<Napi::Uint16Array>().Data(),
                 info[2].As<Napi::Float32Array>().Data(), unpack(info[3].As<Napi::Float64Array>().Data()),
                 static_cast<crl::HalfFormat>(format));
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
  o.Set("abi", kAbiVersion);
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

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("gemm", Napi::Function::New(env, Gemm, "gemm"));
  exports.Set("noop", Napi::Function::New(env, Noop, "noop"));
  exports.Set("packedWeightSize", Napi::Function::New(env, PackedWeightSize, "packedWeightSize"));
  exports.Set("packWeight", Napi::Function::New(env, PackWeight, "packWeight"));
  exports.Set("gemmPacked", Napi::Function::New(env, GemmPacked, "gemmPacked"));
  exports.Set("packHalfWeight", Napi::Function::New(env, PackHalfWeight, "packHalfWeight"));
  exports.Set("gemmHalf", Napi::Function::New(env, GemmHalf, "gemmHalf"));
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  crl_napi::register_ops(env, exports);
  crl_napi::register_attention(env, exports);
  exports.Set("setParallelMinFlops", Napi::Function::New(env, SetParallelMinFlops, "setParallelMinFlops"));
  return exports;
}

}  // namespace

NODE_API_MODULE(crl_native, Init)
