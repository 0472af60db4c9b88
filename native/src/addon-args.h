// Argument checking shared by the Node-API bindings: a wrong argument is a JS TypeError or
// RangeError with the function's name, never a crash.
#pragma once
#include <napi.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace crl_napi {

inline bool is_f32(const Napi::Value& v) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_float32_array;
}

inline bool is_u16(const Napi::Value& v) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_uint16_array;
}

// Uint16Array argument i with at least `need` elements, or a thrown error (returns nullptr).
inline uint16_t* u16_arg(const Napi::CallbackInfo& info, size_t i, int64_t need, const char* fn) {
  if (i >= info.Length() || !is_u16(info[i])) {
    Napi::TypeError::New(info.Env(), std::string(fn) + ": argument " + std::to_string(i) + " must be a Uint16Array")
        .ThrowAsJavaScriptException();
    return nullptr;
  }
  auto arr = info[i].As<Napi::Uint16Array>();
  if (need < 0 || static_cast<int64_t>(arr.ElementLength()) < need) {
    Napi::RangeError::New(info.Env(), std::string(fn) + ": argument " + std::to_string(i) + " too small (" +
                                          std::to_string(arr.ElementLength()) + " < " + std::to_string(need) + ")")
        .ThrowAsJavaScriptException();
    return nullptr;
  }
  return arr.Data();
}

// Float32Array argument i with at least `need` elements, or a thrown error (returns nullptr).
inline float* f32_arg(const Napi::CallbackInfo& info, size_t i, int64_t need, const char* fn) {
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
inline int64_t int_arg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (i < info.Length() && info[i].IsNumber()) {
    const double v = info[i].As<Napi::Number>().DoubleValue();
    if (v >= 0 && v == static_cast<double>(static_cast<int64_t>(v))) return static_cast<int64_t>(v);
  }
  Napi::TypeError::New(info.Env(), std::string(fn) + ": argument " + std::to_string(i) + " must be a non-negative integer")
      .ThrowAsJavaScriptException();
  return -1;
}

// Finite number argument i, or NaN after throwing.
inline double num_arg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (i < info.Length() && info[i].IsNumber()) return info[i].As<Napi::Number>().DoubleValue();
  Napi::TypeError::New(info.Env(), std::string(fn) + ": argument " + std::to_string(i) + " must be a number")
      .ThrowAsJavaScriptException();
  return std::nan("");
}

}  // namespace crl_napi
