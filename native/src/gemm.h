// Float32 GEMM with the convention of src/tensor/gemm-ref.ts:
//   C = alpha * op(A) @ op(B) + (accumulate ? C : 0), row-major, strided batches.
// Bounds are checked by the TypeScript caller (resolveGemm) before this is reached.
#pragma once
#include <cstdint>

namespace crl {

struct GemmParams {
  int64_t m, n, k;
  bool trans_a, trans_b, accumulate;
  float alpha;
  int64_t lda, ldb, ldc;
  int64_t off_a, off_b, off_c;
  int64_t batch, stride_a, stride_b, stride_c;
};

void gemm(const float* a, const float* b, float* c, const GemmParams& p);
// The same product on the calling thread only (same FMA chains, so bit-identical to gemm()). For
// kernels that are themselves run as pool tasks (attention.cc): never re-enters the pool.
void gemm_serial(const float* a, const float* b, float* c, const GemmParams& p);

// Products below this many FLOPs (2*m*n*k*batch) run on the calling thread only: waking the
// second core costs more than it saves (measured with bench/gemm.ts, see docs/decisions/0002).
extern int64_t g_parallel_min_flops;

// A weight W [N, K] (row stride ldw) packed once as op(B) = W^T, the way gemm() packs it for
// x @ W^T: KC-row blocks of NR-column panels. packed_weight_size floats.
int64_t packed_weight_size(int64_t n, int64_t k);
void pack_weight(const float* w, int64_t ldw, int64_t n, int64_t k, float* dst);
// C = alpha A W^T (+ C) with W given packed (p.trans_b, ldb, off_b, batch are ignored; A not
// transposed; batch 1). Same FMA chains as gemm(), so bit-identical to it. Few rows (a decode
// step) read A in place and split W's panels across threads once W is at least
// g_packed_parallel_min_bytes; more rows split by rows.
void gemm_packed(const float* a, const float* packed, float* c, const GemmParams& p);
extern int64_t g_packed_parallel_min_bytes;

}  // namespace crl
