// The few rows of A of a decode step (m <= kDirectMaxM), packed once per product for every task.
//
// Why: read in place, each row costs the microkernel a scalar load, a multiply by alpha and a
// broadcast per step of K, next to only two FMAs per row. At batch 8 that bookkeeping, not the
// weight's bytes, set the speed of decode (f32 and 16-bit weights alike). Packed, the rows are
// contiguous [kc, MR] tiles that the microkernel reads as broadcast operands. pack_a applies alpha
// exactly as the in-place read did and the FMA chains over K are unchanged, so the products are
// bit-identical. The copy is m x K floats, small next to the N x K weight every task reads.
#pragma once
#include <cstdint>
#include <vector>

#include "gemm-pack.h"
#include "gemm.h"

namespace crl {

// Rows of one packed KC block of A: m rounded up to whole MR tiles.
inline int64_t small_a_rows(int64_t m) { return (m + MR - 1) / MR * MR; }

// alpha * A [m, k] (row stride p.lda, not transposed) packed per KC block: block pc starts at
// pc * small_a_rows(m) and holds MR-row tiles of [kc, MR] (pack_a's layout). The buffer is the
// calling thread's and lives until its next call; the pool's tasks read it while the caller waits.
inline const float* pack_small_a(const float* a, const GemmParams& p) {
  thread_local std::vector<float> buf;
  const int64_t mp = small_a_rows(p.m);
  buf.resize(static_cast<size_t>(mp * p.k));
  for (int64_t pc = 0; pc < p.k; pc += KC)
    pack_a(a + pc, p.lda, false, p.alpha, p.m, std::min(KC, p.k - pc), buf.data() + pc * mp);
  return buf.data();
}

}  // namespace crl
