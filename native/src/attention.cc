// Fused causal attention (see attention.h). Why: bench:engine's breakdown had attention at ~30%
// of a training step as a JS loop over sequences issuing ~4-6 small batched GEMMs each (inner
// dim = head dim 32), most under the 4 MFLOP threshold and so on one core. Here the whole batch
// is one call and the (sequence, head) pairs are independent tasks for both cores.
#include "attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gemm.h"
#include "ops.h"
#include "thread-pool.h"

namespace crl {

// Query rows per causal block: must match QUERY_BLOCK in src/tensor/attention.ts (same products,
// so the same results).
constexpr int64_t kQueryBlock = 64;

namespace {

struct Task {
  const AttentionLayout* lay;
  float* out;          // forward: out; backward: dqkv
  float* probs;        // forward: written
  const float* probs_in;
  const float* qkv;
  const float* dout;
};

GemmParams product(int64_t m, int64_t n, int64_t k) {
  GemmParams p{};
  p.m = m; p.n = n; p.k = k; p.alpha = 1.f; p.batch = 1;
  return p;
}

void forward_task(void* ctx, int64_t t) {
  const Task& tk = *static_cast<const Task*>(ctx);
  const AttentionLayout& lay = *tk.lay;
  const int64_t seq = t / lay.h, hh = t % lay.h, l = lay.lengths[seq];
  if (l == 0) return;
  const int64_t d = lay.d, c = lay.h * d, row = lay.starts[seq];
  const float* qkv = tk.qkv + row * 3 * c;
  float* probs = tk.probs + static_cast<int64_t>(lay.prob_starts[seq]) + hh * l * l;  // [L, L] of this head
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));  // as TS's alpha
  for (int64_t r0 = 0; r0 < l; r0 += kQueryBlock) {
    const int64_t r1 = std::min(l, r0 + kQueryBlock);
    // scores[r0:r1, 0:r1] = scale * Q[r0:r1] @ K[0:r1]^T, then the causal softmax of those rows
    GemmParams p = product(r1 - r0, r1, d);
    p.trans_b = true; p.alpha = scale; p.lda = p.ldb = 3 * c; p.ldc = l;
    gemm_serial(qkv + r0 * 3 * c + hh * d, qkv + c + hh * d, probs + r0 * l, p);
    for (int64_t r = r0; r < r1; ++r) softmax_row(probs + r * l, r + 1, l);
    // out[r0:r1] = P[r0:r1, 0:r1] @ V[0:r1]
    p = product(r1 - r0, d, r1);
    p.lda = l; p.ldb = 3 * c; p.ldc = c;
    gemm_serial(probs + r0 * l, qkv + 2 * c + hh * d, tk.out + (row + r0) * c + hh * d, p);
  }
}

void backward_task(void* ctx, int64_t t) {
  const Task& tk = *static_cast<const Task*>(ctx);
  const AttentionLayout& lay = *tk.lay;
  const int64_t seq = t / lay.h, hh = t % lay.h, l = lay.lengths[seq];
  if (l == 0) return;
  const int64_t d = lay.d, c = lay.h * d, row = lay.starts[seq];
  const float* qkv = tk.qkv + row * 3 * c + hh * d;  // this head's q columns; k at + c, v at + 2c
  float* dqkv = tk.out + row * 3 * c + hh * d;
  const float* dout = tk.dout + row * c + hh * d;
  const float* probs = tk.probs_in + static_cast<int64_t>(lay.prob_starts[seq]) + hh * l * l;
  thread_local std::vector<float> scratch_buf;
  if (static_cast<int64_t>(scratch_buf.size()) < l * l) scratch_buf.resize(l * l);
  float* ds = scratch_buf.data();  // [L, L] dP, then dS
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));  // as TS's alpha
  for (int64_t r0 = 0; r0 < l; r0 += kQueryBlock) {
    const int64_t r1 = std::min(l, r0 + kQueryBlock);
    // dP[r0:r1, 0:r1] = dO[r0:r1] @ V[0:r1]^T
    GemmParams p = product(r1 - r0, r1, d);
    p.trans_b = true; p.lda = c; p.ldb = 3 * c; p.ldc = l;
    gemm_serial(dout + r0 * c, qkv + 2 * c, ds + r0 * l, p);
    // dV[0:r1] += P[r0:r1, 0:r1]^T @ dO[r0:r1]
    p = product(r1, d, r1 - r0);
    p.trans_a = true; p.accumulate = true; p.lda = l; p.ldb = c; p.ldc = 3 * c;
    gemm_serial(probs + r0 * l, dout + r0 * c, dqkv + 2 * c, p);
  }
  for (int64_t r = 0; r < l; ++r) softmax_backward_row(ds + r * l, probs + r * l, r + 1, l);
  for (int64_t r0 = 0; r0 < l; r0 += kQueryBlock) {
    const int64_t r1 = std::min(l, r0 + kQueryBlock);
    // dQ[r0:r1] += scale * dS[r0:r1, 0:r1] @ K[0:r1]
    GemmParams p = product(r1 - r0, d, r1);
    p.accumulate = true; p.alpha = scale; p.lda = l; p.ldb = 3 * c; p.ldc = 3 * c;
    gemm_serial(ds + r0 * l, qkv + c, dqkv + r0 * 3 * c, p);
    // dK[0:r1] += scale * dS[r0:r1, 0:r1]^T @ Q[r0:r1]
    p = product(r1, d, r1 - r0);
    p.trans_a = true; p.accumulate = true; p.alpha = scale; p.lda = l; p.ldb = 3 * c; p.ldc = 3 * c;
    gemm_serial(ds + r0 * l, qkv + r0 * 3 * c, dqkv + c, p);
  }
}

}  // namespace

void attention_forward(float* out, float* probs, const float* qkv, const AttentionLayout& lay) {
  Task tk{&lay, out, probs, nullptr, qkv, nullptr};
  pool().run(lay.nseq * lay.h, forward_task, &tk);
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const AttentionLayout& lay) {
  Task tk{&lay, dqkv, nullptr, probs, qkv, dout};
  pool().run(lay.nseq * lay.h, backward_task, &tk);
}

}  // namespace crl
