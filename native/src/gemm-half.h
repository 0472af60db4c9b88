// Products with weights stored in 16-bit floats (f16 or bf16) and everything else in f32: the
// sampler's x @ W^T when it keeps half-precision weights (src/tensor/half-weight.ts).
#pragma once
#include <cstdint>

#include "gemm.h"

namespace crl {

enum class HalfFormat : int { F16 = 0, BF16 = 1 };

// W [N, K] f32 (row stride ldw), rounded to the half format (nearest, ties to even) and laid out
// as pack_weight lays out f32: KC-row blocks of NR-column panels, packed_weight_size(n, k) values.
void pack_half_weight(const float* w, int64_t ldw, int64_t n, int64_t k, HalfFormat f, uint16_t* dst);

// C = alpha A W^T (+ C) with W from pack_half_weight: each weight widened to f32 in registers,
// products accumulated in f32 (p.trans_b, ldb, off_b and the batch fields are ignored; batch 1).
// Every element of C is the same FMA chain over K whatever m or the thread split, so a row's
// result does not depend on the other rows of its batch.
void gemm_half(const float* a, const uint16_t* packed, float* c, const GemmParams& p, HalfFormat f);

}  // namespace crl
