// Native twins of the elementwise / row-wise ops in src/tensor/ (swiglu.ts, softmax.ts). Same
// semantics as the TypeScript versions; pointers already include each buffer's offset.
#pragma once
#include <cstdint>

namespace crl {

// out[N, F] = silu(gate) * up and sig[N, F] = sigmoid(gate), where inp[N, 2F] = [gate | up].
void swiglu_forward(float* out, float* sig, const float* inp, int64_t n, int64_t f);
// dinp[N, 2F] += d/d[gate | up] given dout[N, F] and the forward's sig.
void swiglu_backward(float* dinp, const float* dout, const float* inp, const float* sig, int64_t n, int64_t f);
// In place over x[R, L, L]: row i keeps softmax of columns 0..i, zeros after (causal mask).
void causal_softmax_forward(float* x, int64_t blocks, int64_t l);
// In place over grad[R, L, L]: dS = P * (dP - rowsum(P * dP)), zero above the diagonal.
void causal_softmax_backward(float* grad, const float* probs, int64_t blocks, int64_t l);
// One row of each: softmax over x[0..len) with zeros over [len, l); g = p * (g - p.g) likewise.
void softmax_row(float* x, int64_t len, int64_t l);
void softmax_backward_row(float* g, const float* p, int64_t len, int64_t l);


// One query row per head against a slot's cached keys/values (the sampler's decode step):
// out[h, 0:d] = softmax_j(scale * q[h] . k[h / G, j]) v[h / G, j] over j < len, G = h / hkv.
// q: [H, D]; kc, vc: [Hkv, S, D] (head stride s * d); out: [H, D].
void decode_attention(const float* q, const float* kc, const float* vc, float* out, int64_t len, int64_t s,
                      int64_t h, int64_t hkv, int64_t d, float scale);


// The whole decode step of src/model/sampler/decode-attention.ts for A rows: writes each row's k, v
// (qkv rows are [q (H D) | k (Hkv D) | v (Hkv D)]) into kc, vc [B, Hkv, S, D] at (slot[i], pos[i]),
// then out[i] = attention of q[i] over its slot's first pos[i] + 1 keys, query head hh reading kv
// head hh / (H / Hkv). Rows run in parallel; slots must be distinct (each sequence advances one
// token per step).
void decode_step(const float* qkv, const int32_t* slots, const int32_t* positions, int64_t count, float* kc,
                 float* vc, int64_t s, int64_t h, int64_t hkv, int64_t d, float* out);

// Prefill with prefix reuse (src/model/sampler/decode-attention.ts extendAttention for every request of one
// kv-extend.ts call): request i's new rows starts[i] .. starts[i + 1] of qkv ([q | k | v] rows,
// (H + 2 Hkv) D wide), prefixes[i] tokens already cached in slot slots[i]. Writes their k, v into
// kc, vc [B, Hkv, S, D], then out[row] = attention over the slot's first prefix + t + 1 keys. The
// same products (gemm_serial) and the TypeScript path's double-precision softmax with V8's exp
// (logprob.cc), so bit-identical to it; (request, head) pairs run in parallel. Needs
// logprob_available().
void extend_attention(const float* qkv, const int32_t* starts, const int32_t* prefixes, const int32_t* slots,
                      int64_t r, float* kc, float* vc, int64_t s, int64_t h, int64_t hkv, int64_t d, float* out);

// RoPE (rope.ts): in place over n rows (row r at x + r * row_stride) of `heads` heads of 2 * half
// values, pair (i, i + half) rotated by the table's angle at positions[r] (sign -1: the inverse).
// Computed in double like the TypeScript twin (float products are exact in double), so the
// results are bit-identical to it.
void rope_rotate(float* x, int64_t n, int64_t heads, int64_t row_stride, const int32_t* positions, const float* cos,
                 const float* sin, int64_t half, double sign);

// logprob.ts's logprobForward (logits in probs are replaced by probabilities; log-prob of each
// row's target, -1 = none, and entropy), bit-identical to it (logprob.cc says how). Only when
// logprob_available(); v8_math_apply applies the exp (or log) it uses, for the loader's check.
bool logprob_available();
void logprob_forward(float* probs, const int32_t* targets, float* logprobs, float* entropies, int64_t n, int64_t v);
void v8_math_apply(double* x, int64_t n, bool log);
// sampling.ts's drawToken on n rows of [V] logits at temperature 1 (u[r] >= 0, the row's uniform
// draw) or 0 (u[r] < 0: the argmax), top-p 1: token, log-prob and entropy of each row, with its
// formulas and a vectorized double exp (logprob.cc vexpd; within 1e-12 of it). Rows on the pool.
void draw_rows(const float* logits, int64_t n, int64_t v, const double* u, int32_t* tokens, double* logprobs,
               double* entropies);

// RMSNorm (rmsnorm.ts): out = x * rstd * w, rstd[r] = 1 / sqrt(mean(x_r^2) + eps). inp, out: [N, C].
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t n, int64_t c, float eps);
// Adds into dinp [N, C] and dweight [C]. Rows run in order on one thread, so dweight's sums are
// deterministic (same order as the TypeScript twin).
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int64_t n, int64_t c);

}  // namespace crl
