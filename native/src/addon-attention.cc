// Node-API bindings of the fused causal attention (attention.h), mirrored by NativeAddon in
// src/tensor/native.ts. The layout arrays are validated here, so a bad layout is a RangeError,
// never an out-of-bounds write.
#include <napi.h>

#include <string>

#include "addon-args.h"
#include "attention.h"

namespace crl_napi {
namespace {

template <typename T>
const T* typed_arg(const Napi::CallbackInfo& info, size_t i, napi_typedarray_type type,
                                          int64_t need, const char* fn, const char* what) {
  if (i < info.Length() && info[i].IsTypedArray() && info[i].As<Napi::TypedArray>().TypedArrayType() == type &&
      static_cast<int64_t>(info[i].As<Napi::TypedArray>().ElementLength()) >= need)
    return info[i].As<Napi::TypedArrayOf<T>>().Data();
  Napi::TypeError::New(info.Env(), std::string(fn) + ": argument " + std::to_string(i) + " must be " + what +
                                       " of >= " + std::to_string(need) + " elements")
      .ThrowAsJavaScriptException();
  return nullptr;
}

// Reads (starts, lengths, probStarts, nseq, h, d, hkv) at argument `first` and checks that sequences
// and their [H, L, L] blocks are in order without overlap and inside rows / prob_len floats.
// Returns false after throwing.
bool layout_arg(const Napi::CallbackInfo& info, size_t first, const char* fn, crl::AttentionLayout* lay, int64_t* rows) {
  const int64_t nseq = int_arg(info, first + 3, fn), h = nseq < 0 ? -1 : int_arg(info, first + 4, fn);
  const int64_t d = h < 0 ? -1 : int_arg(info, first + 5, fn);
  const int64_t hkv = d < 0 ? -1 : int_arg(info, first + 6, fn);
  if (hkv < 0) return false;
  if (hkv == 0 || h % hkv != 0) {
    Napi::RangeError::New(info.Env(), std::string(fn) + ": nHeads must be a multiple of nKvHeads (>= 1)")
        .ThrowAsJavaScriptException();
    return false;
  }
  lay->starts = typed_arg<int32_t>(info, first, napi_int32_array, nseq, fn, "an Int32Array");
  lay->lengths = lay->starts ? typed_arg<int32_t>(info, first + 1, napi_int32_array, nseq, fn, "an Int32Array") : nullptr;
  lay->prob_starts = lay->lengths ? typed_arg<double>(info, first + 2, napi_float64_array, nseq, fn, "a Float64Array") : nullptr;
  if (!lay->prob_starts) return false;
  lay->nseq = nseq; lay->h = h; lay->hkv = hkv; lay->d = d;
  int64_t row = 0;
  double prob = 0;
  for (int64_t i = 0; i < nseq; ++i) {
    const int64_t st = lay->starts[i], l = lay->lengths[i];
    const double ps = lay->prob_starts[i];
    if (st < row || l < 0 || ps < prob || ps != static_cast<double>(static_cast<int64_t>(ps))) {
      Napi::RangeError::New(info.Env(), std::string(fn) + ": sequence " + std::to_string(i) +
                                            " overlaps the previous one (layouts come from attentionLayout)")
          .ThrowAsJavaScriptException();
      return false;
    }
    row = st + l;
    prob = ps + static_cast<double>(h * l * l);
  }
  rows[0] = row;
  rows[1] = static_cast<int64_t>(prob);
  return true;
}

// attentionForward(out, probs, qkv, starts, lengths, probStarts, nseq, h, d, hkv)
Napi::Value AttentionForward(const Napi::CallbackInfo& info) {
  const char* fn = "attentionForward";
  crl::AttentionLayout lay{};
  int64_t need[2];  // rows, probs
  if (!layout_arg(info, 3, fn, &lay, need)) return info.Env().Undefined();
  const int64_t c = lay.h * lay.d, w = (lay.h + 2 * lay.hkv) * lay.d;
  float* out = f32_arg(info, 0, need[0] * c, fn);
  float* probs = out ? f32_arg(info, 1, need[1], fn) : nullptr;
  float* qkv = probs ? f32_arg(info, 2, need[0] * w, fn) : nullptr;
  if (qkv) crl::attention_forward(out, probs, qkv, lay);
  return info.Env().Undefined();
}

// attentionBackward(dqkv, dout, qkv, probs, starts, lengths, probStarts, nseq, h, d, hkv)
Napi::Value AttentionBackward(const Napi::CallbackInfo& info) {
  const char* fn = "attentionBackward";
  crl::AttentionLayout lay{};
  int64_t need[2];
  if (!layout_arg(info, 4, fn, &lay, need)) return info.Env().Undefined();
  const int64_t c = lay.h * lay.d, w = (lay.h + 2 * lay.hkv) * lay.d;
  float* dqkv = f32_arg(info, 0, need[0] * w, fn);
  float* dout = dqkv ? f32_arg(info, 1, need[0] * c, fn) : nullptr;
  float* qkv = dout ? f32_arg(info, 2, need[0] * w, fn) : nullptr;
  float* probs = qkv ? f32_arg(info, 3, need[1], fn) : nullptr;
  if (probs) crl::attention_backward(dqkv, dout, qkv, probs, lay);
  return info.Env().Undefined();
}

}  // namespace

void register_attention(Napi::Env env, Napi::Object exports) {
  exports.Set("attentionForward", Napi::Function::New(env, AttentionForward, "attentionForward"));
  exports.Set("attentionBackward", Napi::Function::New(env, AttentionBackward, "attentionBackward"));
}

}  // namespace crl_napi
