// Fused causal self-attention over packed ragged sequences: the native twin of
// src/tensor/attention.ts (attentionForward / attentionBackward), same layout and semantics.
// One call covers every sequence and head; (sequence, head) pairs run as pool tasks, each doing
// its blocked products with gemm_serial in the TypeScript path's order, so results are
// bit-identical to it (same FMA chains; docs/decisions/0002-native-kernels.md, batch invariance).
#pragma once
#include <cstdint>

namespace crl {

struct AttentionLayout {
  const int32_t* starts;        // [S] first row of each sequence
  const int32_t* lengths;       // [S]
  const double* prob_starts;    // [S] offset of each sequence's [H, L, L] block in probs
  int64_t nseq, h, d;
  int64_t hkv;  // key/value heads: query head hh reads kv head hh / (h / hkv) (grouped-query attention)
};

// out [N, H D], probs [sum H L^2] (saved for backward), qkv [N, (H + 2 Hkv) D] = [q | k | v] post-RoPE.
void attention_forward(float* out, float* probs, const float* qkv, const AttentionLayout& lay);
// dqkv [N, (H + 2 Hkv) D] accumulated from dout [N, H D], given the forward's qkv and probs. One
// task per (sequence, kv head) runs its G = H / Hkv query heads in order, so dK and dV add up
// deterministically (the TypeScript twin's order).
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const AttentionLayout& lay);

}  // namespace crl
