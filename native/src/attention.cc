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

// Row widths and column offsets of the packed q | k | v rows.
struct Geometry {
  int64_t d, c, w, k_col, v_col, groups;  // c = H D (out rows), w = (H + 2 Hkv) D (qkv rows)
  explicit Geometry(const AttentionLayout& lay)
      : d(lay.d), c(lay.h * lay.d), w((lay.h + 2 * lay.hkv) * lay.d), k_col(lay.h * lay.d),
        v_col((lay.h + lay.hkv) * lay.d), groups(lay.h / lay.hkv) {}
};

void forward_task(void* ctx, int64_t t) {
  const Task& tk = *static_cast<const Task*>(ctx);
  const AttentionLayout& lay = *tk.lay;
  const int64_t seq = t / lay.h, hh = t % lay.h, l = lay.lengths[seq];
  if (l == 0) return;
  const Geometry g(lay);
  const int64_t d = g.d, w = g.w, kv = hh / g.groups, row = lay.starts[seq];
  const float* qkv = tk.qkv + row * w;
  float* probs = tk.probs + static_cast<int64_t>(lay.prob_starts[seq]) + hh * l * l;  // [L, L] of this head
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));  // as TS's alpha
  for (int64_t r0 = 0; r0 < l; r0 += kQueryBlock) {
    const int64_t r1 = std::min(l, r0 + kQueryBlock);
    // scores[r0:r1, 0:r1] = scale * Q[r0:r1] @ K[0:r1]^T, then the causal softmax of those rows
    GemmParams p = product(r1 - r0, r1, d);
    p.trans_b = true; p.alpha = scale; p.lda = p.ldb = w; p.ldc = l;
    gemm_serial(qkv + r0 * w + hh * d, qkv + g.k_col + kv * d, probs + r0 * l, p);
    for (int64_t r = r0; r < r1; ++r) softmax_row(probs + r * l, r + 1, l);
    // out[r0:r1] = P[r0:r1, 0:r1] @ V[0:r1]
    p = product(r1 - r0, d, r1);
    p.lda = l; p.ldb = w; p.ldc = g.c;
    gemm_serial(probs + r0 * l, qkv + g.v_col + kv * d, tk.out + (row + r0) * g.c + hh * d, p);
  }
}

// One query head hh of kv head kv: its dQ, and its share of dK and dV.
void backward_head(const Task& tk, int64_t seq, int64_t hh, int64_t kv, float* ds) {
  const AttentionLayout& lay = *tk.lay;
  const Geometry g(lay);
  const int64_t l = lay.lengths[seq], d = g.d, c = g.c, w = g.w, row = lay.starts[seq];
  const float* q = tk.qkv + row * w + hh * d;
  const float* k = tk.qkv + row * w + g.k_col + kv * d;
  const float* v = tk.qkv + row * w + g.v_col + kv * d;
  float* dq = tk.out + row * w + hh * d;
  float* dk = tk.out + row * w + g.k_col + kv * d;
  float* dv = tk.out + row * w + g.v_col + kv * d;
  const float* dout = tk.dout + row * c + hh * d;
  const float* probs = tk.probs_in + static_cast<int64_t>(lay.prob_starts[seq]) + hh * l * l;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));  // as TS's alpha
  for (int64_t r0 = 0; r0 < l; r0 += kQueryBlock) {
    const int64_t r1 = std::min(l, r0 + kQueryBlock);
    // dP[r0:r1, 0:r1] = dO[r0:r1] @ V[0:r1]^T
    GemmParams p = product(r1 - r0, r1, d);
    p.trans_b = true; p.lda = c; p.ldb = w; p.ldc = l;
    gemm_serial(dout + r0 * c, v, ds + r0 * l, p);
    // dV[0:r1] += P[r0:r1, 0:r1]^T @ dO[r0:r1]
    p = product(r1, d, r1 - r0);
    p.trans_a = true; p.accumulate = true; p.lda = l; p.ldb = c; p.ldc = w;
    gemm_serial(probs + r0 * l, dout + r0 * c, dv, p);
  }
  for (int64_t r = 0; r < l; ++r) softmax_backward_row(ds + r * l, probs + r * l, r + 1, l);
  for (int64_t r0 = 0; r0 < l; r0 += kQueryBlock) {
    const int64_t r1 = std::min(l, r0 + kQueryBlock);
    // dQ[r0:r1] += scale * dS[r0:r1, 0:r1] @ K[0:r1]
    GemmParams p = product(r1 - r0, d, r1);
    p.accumulate = true; p.alpha = scale; p.lda = l; p.ldb = w; p.ldc = w;
    gemm_serial(ds + r0 * l, k, dq + r0 * w, p);
    // dK[0:r1] += scale * dS[r0:r1, 0:r1]^T @ Q[r0:r1]
    p = product(r1, d, r1 - r0);
    p.trans_a = true; p.accumulate = true; p.alpha = scale; p.lda = l; p.ldb = w; p.ldc = w;
    gemm_serial(ds + r0 * l, q + r0 * w, dk, p);
  }
}

void backward_task(void* ctx, int64_t t) {
  const Task& tk = *static_cast<const Task*>(ctx);
  const AttentionLayout& lay = *tk.lay;
  const int64_t seq = t / lay.hkv, kv = t % lay.hkv, l = lay.lengths[seq];
  if (l == 0) return;
  thread_local std::vector<float> scratch_buf;
  if (static_cast<int64_t>(scratch_buf.size()) < l * l) scratch_buf.resize(l * l);
  const int64_t groups = lay.h / lay.hkv;
  // The group's query heads in order: dK and dV of this kv head are written by this task only.
  for (int64_t gi = 0; gi < groups; ++gi) backward_head(tk, seq, kv * groups + gi, kv, scratch_buf.data());
}

}  // namespace

void attention_forward(float* out, float* probs, const float* qkv, const AttentionLayout& lay) {
  Task tk{&lay, out, probs, nullptr, qkv, nullptr};
  pool().run(lay.nseq * lay.h, forward_task, &tk);
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const AttentionLayout& lay) {
  Task tk{&lay, dqkv, nullptr, probs, qkv, dout};
  pool().run(lay.nseq * lay.hkv, backward_task, &tk);
}

}  // namespace crl
