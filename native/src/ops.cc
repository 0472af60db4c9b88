// Row-parallel SIMD loops for the non-GEMM ops that dominate a training step once GEMM is native
// (bench:engine's per-kernel breakdown: swiglu and attention's softmax spend their time in exp).
#include "ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "simd.h"
#include "thread-pool.h"

namespace crl {

// Below this many elements an op stays on the calling thread (waking a worker costs ~10 us).
constexpr int64_t kParallelMinElems = 1 << 16;

// Runs body(lo, hi) over row ranges, in parallel when rows * row_cost is large.
template <typename Body>
static void for_rows(int64_t rows, int64_t row_cost, const Body& body) {
  const int64_t nt = pool().size();
  if (nt <= 1 || rows < 2 || rows * row_cost < kParallelMinElems) {
    body(0, rows);
    return;
  }
  struct Ctx {
    const Body* body;
    int64_t rows, ntasks;
  } ctx{&body, rows, std::min<int64_t>(rows, 4 * nt)};
  pool().run(ctx.ntasks, [](void* p, int64_t t) {
    const Ctx& c = *static_cast<const Ctx*>(p);
    (*c.body)(c.rows * t / c.ntasks, c.rows * (t + 1) / c.ntasks);
  }, &ctx);
}

void swiglu_forward(float* out, float* sig, const float* inp, int64_t n, int64_t f) {
  for_rows(n, f, [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* g = inp + r * 2 * f;
      const float* u = g + f;
      float* o = out + r * f;
      float* s = sig + r * f;
      int64_t i = 0;
      for (; i + VW <= f; i += VW) {
        const vf gv = load(g + i);
        const vf sv = splat(1.f) / (splat(1.f) + vexp(-gv));
        store(s + i, sv);
        store(o + i, gv * sv * load(u + i));
      }
      for (; i < f; ++i) {  // tail through a padded vector so results match the body exactly
        vf gv{};
        gv[0] = g[i];
        const float sv = (splat(1.f) / (splat(1.f) + vexp(-gv)))[0];
        s[i] = sv;
        o[i] = g[i] * sv * u[i];
      }
    }
  });
}

void swiglu_backward(float* dinp, const float* dout, const float* inp, const float* sig, int64_t n, int64_t f) {
  for_rows(n, f, [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* g = inp + r * 2 * f;
      const float* u = g + f;
      const float* dy = dout + r * f;
      const float* s = sig + r * f;
      float* dg = dinp + r * 2 * f;
      float* du = dg + f;
      int64_t i = 0;
      for (; i + VW <= f; i += VW) {
        const vf gv = load(g + i), uv = load(u + i), dv = load(dy + i), sv = load(s + i);
        store(dg + i, load(dg + i) + dv * uv * sv * (splat(1.f) + gv * (splat(1.f) - sv)));
        store(du + i, load(du + i) + dv * gv * sv);
      }
      for (; i < f; ++i) {
        dg[i] += dy[i] * u[i] * s[i] * (1.f + g[i] * (1.f - s[i]));
        du[i] += dy[i] * g[i] * s[i];
      }
    }
  });
}

// One causal row: softmax over x[0..len), zeros over x[len..l).
void softmax_row(float* x, int64_t len, int64_t l) {
  int64_t j = 0;
  vf mv = splat(-__builtin_inff());
  for (; j + VW <= len; j += VW) {
    const vf v = load(x + j);
    mv = v > mv ? v : mv;
  }
  float mx = hmax(mv);
  for (; j < len; ++j) mx = std::max(mx, x[j]);
  vf sv{};
  for (j = 0; j + VW <= len; j += VW) {
    const vf e = vexp(load(x + j) - mx);
    store(x + j, e);
    sv += e;
  }
  float sum = hsum(sv);
  for (; j < len; ++j) {
    vf v{};
    v[0] = x[j] - mx;
    x[j] = vexp(v)[0];
    sum += x[j];
  }
  const float inv = 1.f / sum;
  for (j = 0; j + VW <= len; j += VW) store(x + j, load(x + j) * inv);
  for (; j < len; ++j) x[j] *= inv;
  if (l > len) std::memset(x + len, 0, sizeof(float) * (l - len));
}

void causal_softmax_forward(float* x, int64_t blocks, int64_t l) {
  // Rows of all blocks in one range; row q is row (q % l) of block (q / l), length q % l + 1.
  for_rows(blocks * l, l / 2 + 1, [=](int64_t lo, int64_t hi) {
    for (int64_t q = lo; q < hi; ++q) softmax_row(x + q * l, q % l + 1, l);
  });
}

void causal_softmax_backward(float* grad, const float* probs, int64_t blocks, int64_t l) {
  for_rows(blocks * l, l / 2 + 1, [=](int64_t lo, int64_t hi) {
    for (int64_t q = lo; q < hi; ++q) softmax_backward_row(grad + q * l, probs + q * l, q % l + 1, l);
  });
}

void softmax_backward_row(float* g, const float* p, int64_t len, int64_t l) {
  int64_t j = 0;
  vf dv{};
  for (; j + VW <= len; j += VW) dv += load(p + j) * load(g + j);
  float dot = hsum(dv);
  for (; j < len; ++j) dot += p[j] * g[j];
  for (j = 0; j + VW <= len; j += VW) store(g + j, load(p + j) * (load(g + j) - dot));
  for (; j < len; ++j) g[j] = p[j] * (g[j] - dot);
  if (l > len) std::memset(g + len, 0, sizeof(float) * (l - len));
}

// The decode step streams every live cache from DRAM (64 slots x 4 layers of K and V per step do
// not fit any cache level), and one core's hardware prefetch alone reached ~10-14 GB/s here.
// Software prefetch kAhead floats ahead doubled it (bench: 4 layers x 64 slots x len 255,
// 1.3 ms -> 0.55 ms per layer step on one thread). Past the end of the current stream (this
// head's K rows 0..len) it continues into the next one (its V rows, then the next head's K), so
// no bandwidth goes to the unused cache positions len..S.
struct Prefetch {
  static constexpr int64_t kAhead = 1024;  // floats (4 KB)
  const float* cur;
  int64_t n;           // floats of cur that will be read
  const float* next;   // the stream read after cur, or nullptr
  // Prefetches the line kAhead floats after offset off of cur.
  inline void operator()(int64_t off) const {
    const int64_t t = off + kAhead;
    if (t < n) __builtin_prefetch(cur + t);
    else if (next) __builtin_prefetch(next + (t - n));
  }
};

// Scores for 4 keys at a time share the query loads and one reduce4 (see simd.h).
static void decode_scores(const float* q, const float* k, int64_t len, int64_t d, float scale, float* scores,
                          const Prefetch& pf) {
  const int64_t dv = d / VW * VW;
  int64_t j = 0;
  for (; j + 4 <= len; j += 4) {
    vf acc[4] = {vf{}, vf{}, vf{}, vf{}};
    const float* k0 = k + j * d;
    for (int64_t f = 0; f < 4 * d; f += 16) pf(j * d + f);
    for (int64_t e = 0; e < dv; e += VW) {
      const vf qv = load(q + e);
      acc[0] += qv * load(k0 + e);
      acc[1] += qv * load(k0 + d + e);
      acc[2] += qv * load(k0 + 2 * d + e);
      acc[3] += qv * load(k0 + 3 * d + e);
    }
    float s4[4];
    reduce4(acc, s4);
    for (int y = 0; y < 4; ++y) {
      for (int64_t e = dv; e < d; ++e) s4[y] += q[e] * k0[y * d + e];
      scores[j + y] = s4[y] * scale;
    }
  }
  for (; j < len; ++j) {
    float s1 = 0.f;
    for (int64_t e = 0; e < d; ++e) s1 += q[e] * k[j * d + e];
    scores[j] = s1 * scale;
  }
}

// o[0:NV*VW] = sum_j p[j] v[j], j in order (the same FMA chain as the generic loop), with o held
// in registers: the generic loop's load/store of o on every key was store-forwarding bound.
template <int NV>
static inline void weighted_sum(const float* p, const float* v, int64_t len, float* o, const Prefetch& pf) {
  vf acc[NV];
  for (int u = 0; u < NV; ++u) acc[u] = vf{};
  for (int64_t j = 0; j < len; ++j) {
    for (int64_t f = 0; f < NV * VW; f += 16) pf(j * NV * VW + f);
    const vf pj = splat(p[j]);
    for (int u = 0; u < NV; ++u) acc[u] += pj * load(v + j * NV * VW + u * VW);
  }
  for (int u = 0; u < NV; ++u) store(o + u * VW, acc[u]);
}

void decode_attention(const float* q, const float* kc, const float* vc, float* out, int64_t len, int64_t s,
                      int64_t h, int64_t hkv, int64_t d, float scale) {
  thread_local std::vector<float> scratch;
  if (static_cast<int64_t>(scratch.size()) < len) scratch.resize(len);
  float* scores = scratch.data();
  const int64_t dv = d / VW * VW, groups = h / hkv;
  for (int64_t hh = 0; hh < h; ++hh) {
    const int64_t kv = hh / groups;
    const float* k = kc + kv * s * d;
    const float* v = vc + kv * s * d;
    float* o = out + hh * d;
    decode_scores(q + hh * d, k, len, d, scale, scores, Prefetch{k, len * d, v});
    softmax_row(scores, len, len);
    // After this head's V: the next head's K (the same kv head's again inside a group).
    const Prefetch pf{v, len * d, hh + 1 < h ? kc + ((hh + 1) / groups) * s * d : nullptr};
    switch (d == dv ? d / VW : 0) {  // head dims of 1-4 vectors keep o in registers
      case 1: weighted_sum<1>(scores, v, len, o, pf); break;
      case 2: weighted_sum<2>(scores, v, len, o, pf); break;
      case 3: weighted_sum<3>(scores, v, len, o, pf); break;
      case 4: weighted_sum<4>(scores, v, len, o, pf); break;
      default:
        std::memset(o, 0, sizeof(float) * d);
        for (int64_t j = 0; j < len; ++j) {
          for (int64_t f = 0; f < d; f += 16) pf(j * d + f);
          const float p = scores[j];
          const float* vj = v + j * d;
          int64_t e = 0;
          for (; e < dv; e += VW) store(o + e, load(o + e) + p * load(vj + e));
          for (; e < d; ++e) o[e] += p * vj[e];
        }
    }
  }
}

void decode_step(const float* qkv, const int32_t* slots, const int32_t* positions, int64_t count, float* kc,
                 float* vc, int64_t s, int64_t h, int64_t hkv, int64_t d, float* out) {
  const int64_t c = h * d, w = (h + 2 * hkv) * d;
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t j = 0; j < hkv; ++j) {
      const int64_t dst = ((slots[i] * hkv + j) * s + positions[i]) * d;
      std::memcpy(kc + dst, qkv + i * w + c + j * d, sizeof(float) * d);
      std::memcpy(vc + dst, qkv + i * w + c + hkv * d + j * d, sizeof(float) * d);
    }
  }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  // Cost per row ~ its cache length; the step reads every live cache, so both cores help.
  for_rows(count, 2 * h * d * (s / 2 + 1), [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t base = slots[i] * hkv * s * d;
      decode_attention(qkv + i * w, kc + base, vc + base, out + i * c, positions[i] + 1, s, h, hkv, d, scale);
    }
  });
}

void rope_rotate(float* x, int64_t n, int64_t heads, int64_t row_stride, const int32_t* positions, const float* cos,
                 const float* sin, int64_t half, double sign) {
  for_rows(n, heads * half * 4, [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* cr = cos + static_cast<int64_t>(positions[r]) * half;
      const float* sr = sin + static_cast<int64_t>(positions[r]) * half;
      float* row = x + r * row_stride;
      for (int64_t h = 0; h < heads; ++h) {
        float* a = row + h * 2 * half;
        float* b = a + half;
        for (int64_t i = 0; i < half; ++i) {
          const double c = cr[i], s = sign * sr[i], x1 = a[i], x2 = b[i];
          a[i] = static_cast<float>(x1 * c - x2 * s);
          b[i] = static_cast<float>(x2 * c + x1 * s);
        }
      }
    }
  });
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t n, int64_t c,
                     float eps) {
  const int64_t cv = c / VW * VW;
  for_rows(n, c, [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* x = inp + r * c;
      float* o = out + r * c;
      vf acc{};
      int64_t i = 0;
      for (; i < cv; i += VW) acc += load(x + i) * load(x + i);
      float ss = hsum(acc);
      for (; i < c; ++i) ss += x[i] * x[i];
      const float s = 1.f / std::sqrt(ss / static_cast<float>(c) + eps);
      rstd[r] = s;
      for (i = 0; i < cv; i += VW) store(o + i, load(x + i) * s * load(weight + i));
      for (; i < c; ++i) o[i] = x[i] * s * weight[i];
    }
  });
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int64_t n, int64_t c) {
  const int64_t cv = c / VW * VW;
  for (int64_t r = 0; r < n; ++r) {
    const float* x = inp + r * c;
    const float* dy = dout + r * c;
    float* dx = dinp + r * c;
    const float s = rstd[r];
    // dx_i = s * w_i * dy_i - s^3 / C * x_i * sum_j dy_j w_j x_j
    vf acc{};
    int64_t i = 0;
    for (; i < cv; i += VW) acc += load(dy + i) * load(weight + i) * load(x + i);
    float dot = hsum(acc);
    for (; i < c; ++i) dot += dy[i] * weight[i] * x[i];
    const float k = s * s * s * dot / static_cast<float>(c);
    for (i = 0; i < cv; i += VW) {
      const vf dyv = load(dy + i), xv = load(x + i);
      store(dx + i, load(dx + i) + s * load(weight + i) * dyv - k * xv);
      store(dweight + i, load(dweight + i) + dyv * xv * s);
    }
    for (; i < c; ++i) {
      dx[i] += s * weight[i] * dy[i] - k * x[i];
      dweight[i] += dy[i] * x[i] * s;
    }
  }
}

}  // namespace crl
