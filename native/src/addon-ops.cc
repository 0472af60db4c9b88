// Node-API bindings of the non-GEMM kernels (ops.h); mirrored by NativeAddon in
// src/tensor/native.ts and wrapped with the TypeScript signatures in src/tensor/native-ops.ts.
#include <napi.h>

#include <algorithm>
#include <string>
#include <vector>

#include "addon-args.h"
#include "ops.h"

namespace crl_napi {
namespace {

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

// decodeAttentionStep(qkv, slotIds, positions, count, kc, vc, s, h, hkv, d, out)
Napi::Value DecodeAttentionStep(const Napi::CallbackInfo& info) {
  const char* fn = "decodeAttentionStep";
  Napi::Env env = info.Env();
  int64_t iv[5];  // count, s, h, hkv, d
  const size_t idx[5] = {3, 6, 7, 8, 9};
  for (int i = 0; i < 5; ++i)
    if ((iv[i] = int_arg(info, idx[i], fn)) < 0) return env.Undefined();
  const int64_t count = iv[0], s = iv[1], h = iv[2], hkv = iv[3], d = iv[4], c = h * d, w = (h + 2 * hkv) * d;
  if (hkv == 0 || h % hkv != 0) {
    Napi::RangeError::New(env, std::string(fn) + ": h must be a multiple of hkv (>= 1)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array ||
        static_cast<int64_t>(info[i].As<Napi::TypedArray>().ElementLength()) < count) {
      Napi::TypeError::New(env, std::string(fn) + ": argument " + std::to_string(i) + " must be an Int32Array of >= count")
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  const int32_t* slots = info[1].As<Napi::Int32Array>().Data();
  const int32_t* pos = info[2].As<Napi::Int32Array>().Data();
  const float* qkv = f32_arg(info, 0, count * w, fn);
  float* kc = qkv ? f32_arg(info, 4, 0, fn) : nullptr;
  float* vc = kc ? f32_arg(info, 5, 0, fn) : nullptr;
  float* out = vc ? f32_arg(info, 10, count * c, fn) : nullptr;
  if (!out) return env.Undefined();
  const int64_t cache_len = std::min(info[4].As<Napi::Float32Array>().ElementLength(), info[5].As<Napi::Float32Array>().ElementLength());
  for (int64_t i = 0; i < count; ++i) {
    if (slots[i] < 0 || pos[i] < 0 || pos[i] >= s || (slots[i] + 1) * hkv * s * d > cache_len) {
      Napi::RangeError::New(env, std::string(fn) + ": row " + std::to_string(i) + " has slot " + std::to_string(slots[i]) +
                                     ", position " + std::to_string(pos[i]) + " outside the cache")
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  std::vector<char> seen(static_cast<size_t>(cache_len / std::max<int64_t>(1, hkv * s * d)) + 1, 0);
  for (int64_t i = 0; i < count; ++i) {
    if (seen[slots[i]]++) {
      Napi::RangeError::New(env, std::string(fn) + ": slot " + std::to_string(slots[i]) + " appears twice in one step")
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  crl::decode_step(qkv, slots, pos, count, kc, vc, s, h, hkv, d, out);
  return env.Undefined();
}

// ropeRotate(x, offset, n, heads, rowStride, positions, cos, sin, half, sign)
Napi::Value RopeRotate(const Napi::CallbackInfo& info) {
  const char* fn = "ropeRotate";
  Napi::Env env = info.Env();
  int64_t iv[5];  // offset, n, heads, rowStride, half
  const size_t idx[5] = {1, 2, 3, 4, 8};
  for (int i = 0; i < 5; ++i)
    if ((iv[i] = int_arg(info, idx[i], fn)) < 0) return env.Undefined();
  const int64_t off = iv[0], n = iv[1], heads = iv[2], stride = iv[3], half = iv[4];
  const double sign = num_arg(info, 9, fn);
  if (std::isnan(sign)) return env.Undefined();
  if (!info[5].IsTypedArray() || info[5].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array ||
      static_cast<int64_t>(info[5].As<Napi::TypedArray>().ElementLength()) < n) {
    Napi::TypeError::New(env, "ropeRotate: argument 5 must be an Int32Array of >= n positions").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int32_t* pos = info[5].As<Napi::Int32Array>().Data();
  float* x = f32_arg(info, 0, n == 0 ? 0 : off + (n - 1) * stride + heads * 2 * half, fn);
  const float* cs = x ? f32_arg(info, 6, 0, fn) : nullptr;
  const float* sn = cs ? f32_arg(info, 7, 0, fn) : nullptr;
  if (!sn) return env.Undefined();
  const int64_t table = std::min(info[6].As<Napi::Float32Array>().ElementLength(), info[7].As<Napi::Float32Array>().ElementLength());
  for (int64_t r = 0; r < n; ++r) {
    if (pos[r] < 0 || (static_cast<int64_t>(pos[r]) + 1) * half > table) {
      Napi::RangeError::New(env, std::string(fn) + ": position " + std::to_string(pos[r]) + " of row " +
                                     std::to_string(r) + " is outside the table")
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  crl::rope_rotate(x + off, n, heads, stride, pos, cs, sn, half, sign);
  return env.Undefined();
}

// logprobForward(probs, targets, logprobs, entropies, n, v); only when logprobAvailable().
Napi::Value LogprobForward(const Napi::CallbackInfo& info) {
  const char* fn = "logprobForward";
  Napi::Env env = info.Env();
  if (!crl::logprob_available()) {
    Napi::Error::New(env, "logprobForward: this Node exports no v8 ieee754 exp/log").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int64_t n = int_arg(info, 4, fn), v = n < 0 ? -1 : int_arg(info, 5, fn);
  if (v < 0) return env.Undefined();
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array ||
      static_cast<int64_t>(info[1].As<Napi::TypedArray>().ElementLength()) < n) {
    Napi::TypeError::New(env, "logprobForward: argument 1 must be an Int32Array of >= n targets").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int32_t* targets = info[1].As<Napi::Int32Array>().Data();
  for (int64_t r = 0; r < n; ++r) {
    if (targets[r] >= v) {
      Napi::RangeError::New(env, "logprobForward: a target is outside the vocabulary").ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  float* probs = f32_arg(info, 0, n * v, fn);
  float* lp = probs ? f32_arg(info, 2, n, fn) : nullptr;
  float* ent = lp ? f32_arg(info, 3, n, fn) : nullptr;
  if (ent) crl::logprob_forward(probs, targets, lp, ent, n, v);
  return env.Undefined();
}

// drawRows(logits, n, v, u, tokens, logprobs, entropies)
Napi::Value DrawRows(const Napi::CallbackInfo& info) {
  const char* fn = "drawRows";
  Napi::Env env = info.Env();
  const int64_t n = int_arg(info, 1, fn), v = n < 0 ? -1 : int_arg(info, 2, fn);
  if (v < 0) return env.Undefined();
  if (v == 0) {
    Napi::Error::New(env, "drawRows: needs v >= 1").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const float* logits = f32_arg(info, 0, n * v, fn);
  if (!logits) return env.Undefined();
  const napi_typedarray_type want[4] = {napi_float64_array, napi_int32_array, napi_float64_array, napi_float64_array};
  for (size_t a = 3; a <= 6; ++a) {
    if (!info[a].IsTypedArray() || info[a].As<Napi::TypedArray>().TypedArrayType() != want[a - 3] ||
        static_cast<int64_t>(info[a].As<Napi::TypedArray>().ElementLength()) < n) {
      Napi::TypeError::New(env, std::string(fn) + ": argument " + std::to_string(a) + " must be a " +
                                    (a == 4 ? "Int32Array" : "Float64Array") + " of >= n elements")
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  crl::draw_rows(logits, n, v, info[3].As<Napi::Float64Array>().Data(), info[4].As<Napi::Int32Array>().Data(),
                 info[5].As<Napi::Float64Array>().Data(), info[6].As<Napi::Float64Array>().Data());
  return env.Undefined();
}

// extendAttention(qkv, starts, prefixes, slots, r, kc, vc, s, h, hkv, d, out); only when logprobAvailable().
Napi::Value ExtendAttention(const Napi::CallbackInfo& info) {
  const char* fn = "extendAttention";
  Napi::Env env = info.Env();
  if (!crl::logprob_available()) {
    Napi::Error::New(env, "extendAttention: this Node exports no v8 ieee754 exp").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int64_t iv[5];  // r, s, h, hkv, d
  const size_t idx[5] = {4, 7, 8, 9, 10};
  for (int i = 0; i < 5; ++i)
    if ((iv[i] = int_arg(info, idx[i], fn)) < 0) return env.Undefined();
  const int64_t r = iv[0], s = iv[1], h = iv[2], hkv = iv[3], d = iv[4];
  if (hkv == 0 || h % hkv != 0) {
    Napi::RangeError::New(env, std::string(fn) + ": h must be a multiple of hkv (>= 1)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int32_t* ints[3];
  const int64_t need[3] = {r + 1, r, r};
  for (size_t a = 1; a <= 3; ++a) {
    if (!info[a].IsTypedArray() || info[a].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array ||
        static_cast<int64_t>(info[a].As<Napi::TypedArray>().ElementLength()) < need[a - 1]) {
      Napi::TypeError::New(env, std::string(fn) + ": argument " + std::to_string(a) + " must be an Int32Array of >= " +
                                    std::to_string(need[a - 1]))
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
    ints[a - 1] = info[a].As<Napi::Int32Array>().Data();
  }
  const int32_t *starts = ints[0], *prefixes = ints[1], *slots = ints[2];
  const int64_t rows = r == 0 ? 0 : starts[r];
  const float* qkv = f32_arg(info, 0, rows * (h + 2 * hkv) * d, fn);
  float* kc = qkv ? f32_arg(info, 5, 0, fn) : nullptr;
  float* vc = kc ? f32_arg(info, 6, 0, fn) : nullptr;
  float* out = vc ? f32_arg(info, 11, rows * h * d, fn) : nullptr;
  if (!out) return env.Undefined();
  const int64_t cache_len = std::min(info[5].As<Napi::Float32Array>().ElementLength(), info[6].As<Napi::Float32Array>().ElementLength());
  std::vector<char> seen(static_cast<size_t>(cache_len / std::max<int64_t>(1, hkv * s * d)) + 1, 0);
  for (int64_t i = 0; i < r; ++i) {
    const int64_t u = starts[i + 1] - starts[i];
    if (starts[i] < 0 || u < 0 || prefixes[i] < 0 || prefixes[i] + u > s || slots[i] < 0 ||
        (static_cast<int64_t>(slots[i]) + 1) * hkv * s * d > cache_len || seen[slots[i]]++) {
      Napi::RangeError::New(env, std::string(fn) + ": request " + std::to_string(i) +
                                     " has rows, prefix or slot outside the cache (or a slot used twice)")
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  crl::extend_attention(qkv, starts, prefixes, slots, r, kc, vc, s, h, hkv, d, out);
  return env.Undefined();
}

// v8Math(x: Float64Array, log: boolean): x[i] = exp(x[i]) (or log) with the functions logprobForward
// uses; false when they are missing. For the loader's check against Math.exp / Math.log.
Napi::Value V8Math(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!crl::logprob_available()) return Napi::Boolean::New(env, false);
  if (info.Length() < 2 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    Napi::TypeError::New(env, "v8Math(x: Float64Array, log: boolean)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto x = info[0].As<Napi::Float64Array>();
  crl::v8_math_apply(x.Data(), static_cast<int64_t>(x.ElementLength()), info[1].ToBoolean().Value());
  return Napi::Boolean::New(env, true);
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

}  // namespace

void register_ops(Napi::Env env, Napi::Object exports) {
  exports.Set("swigluForward", Napi::Function::New(env, SwigluForward, "swigluForward"));
  exports.Set("swigluBackward", Napi::Function::New(env, SwigluBackward, "swigluBackward"));
  exports.Set("causalSoftmaxForward", Napi::Function::New(env, CausalSoftmaxForward, "causalSoftmaxForward"));
  exports.Set("causalSoftmaxBackward", Napi::Function::New(env, CausalSoftmaxBackward, "causalSoftmaxBackward"));
  exports.Set("decodeAttentionStep", Napi::Function::New(env, DecodeAttentionStep, "decodeAttentionStep"));
  exports.Set("logprobForward", Napi::Function::New(env, LogprobForward, "logprobForward"));
  exports.Set("drawRows", Napi::Function::New(env, DrawRows, "drawRows"));
  exports.Set("extendAttention", Napi::Function::New(env, ExtendAttention, "extendAttention"));
  exports.Set("v8Math", Napi::Function::New(env, V8Math, "v8Math"));
  exports.Set("ropeRotate", Napi::Function::New(env, RopeRotate, "ropeRotate"));
  exports.Set("rmsnormForward", Napi::Function::New(env, RmsnormForward, "rmsnormForward"));
  exports.Set("rmsnormBackward", Napi::Function::New(env, RmsnormBackward, "rmsnormBackward"));
}

}  // namespace crl_napi
