// Packed, cache-blocked GEMM (Goto/BLIS loop order: jc -> pc -> ic -> jr -> ir) with a register-
// blocked microkernel written in GCC vector extensions, so one source compiles to AVX-512, AVX2,
// SSE or NEON depending on -march=native. See docs/decisions/0002-native-kernels.md.
//
// Batch invariance: every element of C is the same chain of FMAs over p (in KC blocks), whatever
// m, n, the thread split or the path (packed or in-place B). A sequence's outputs therefore do
// not depend on which other sequences share its batch (tested in src/tensor/gemm.test.ts).
#include "gemm.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "gemm-pack.h"
#include "simd.h"
#include "small-a.h"
#include "thread-pool.h"

namespace crl {

int64_t g_parallel_min_flops = 1 << 22;

// acc[R, NR] = sum_p a[p, 0:R] (outer) b[p, 0:NR]; then C[0:R, 0:nr] (+)= acc. R rows only, so a
// ragged last panel (or a decode step's few rows) costs R rows, not MR. a: row i's value at step p
// is a[p * MR + i] when packed, alpha * a[i * lda + p] when read in place (Direct; as pack_a would
// compute it).
// b: [kc, NR] with row stride bs (NR when packed, ldb when read in place). Every element of C is
// the same FMA chain over p whatever R and however A is read, so the results are batch invariant.
template <int R, bool Direct>
static void micro_rows(int64_t kc, const float* __restrict a, int64_t lda, float alpha, const float* __restrict b,
                       int64_t bs, float* __restrict c, int64_t ldc, int nr, bool add) {
  vf acc0[R], acc1[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) acc0[i] = acc1[i] = vf{};
  for (int64_t p = 0; p < kc; ++p) {
    const vf b0 = *reinterpret_cast<const vfu*>(b);
    const vf b1 = *reinterpret_cast<const vfu*>(b + VW);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const float ai = Direct ? alpha * a[i * lda] : a[i];
      acc0[i] += ai * b0;
      acc1[i] += ai * b1;
    }
    a += Direct ? 1 : MR;
    b += bs;
  }
  if (nr == NR) {
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      vfu* row = reinterpret_cast<vfu*>(c + i * ldc);
      if (add) {
        row[0] += acc0[i];
        row[1] += acc1[i];
      } else {
        row[0] = acc0[i];
        row[1] = acc1[i];
      }
    }
    return;
  }
  alignas(64) float tmp[R * NR];
  for (int i = 0; i < R; ++i) {
    *reinterpret_cast<vf*>(tmp + i * NR) = acc0[i];
    *reinterpret_cast<vf*>(tmp + i * NR + VW) = acc1[i];
  }
  for (int i = 0; i < R; ++i) {
    float* row = c + i * ldc;
    const float* t = tmp + i * NR;
    if (add) {
      for (int j = 0; j < nr; ++j) row[j] += t[j];
    } else {
      for (int j = 0; j < nr; ++j) row[j] = t[j];
    }
  }
}

using MicroFn = void (*)(int64_t, const float*, int64_t, float, const float*, int64_t, float*, int64_t, int, bool);

template <bool Direct, int... Rs>
static constexpr std::array<MicroFn, sizeof...(Rs)> micro_table(std::integer_sequence<int, Rs...>) {
  return {&micro_rows<Rs + 1, Direct>...};
}
static constexpr auto kMicroPacked = micro_table<false>(std::make_integer_sequence<int, MR>{});
static constexpr auto kMicroDirect = micro_table<true>(std::make_integer_sequence<int, MR>{});

// mr (1..MR) rows of packed A [kc, MR] against one B panel.
static inline void micro(int64_t kc, const float* a, const float* b, int64_t bs, float* c, int64_t ldc, int mr, int nr,
                         bool add) {
  kMicroPacked[mr - 1](kc, a, 0, 1.f, b, bs, c, ldc, nr, add);
}

// mr (1..MR) rows of A read in place (row stride lda, scaled by alpha as pack_a would) against one B panel.
static inline void micro_direct(int64_t kc, const float* a, int64_t lda, float alpha, const float* b, int64_t bs,
                                float* c, int64_t ldc, int mr, int nr, bool add) {
  kMicroDirect[mr - 1](kc, a, lda, alpha, b, bs, c, ldc, nr, add);
}

struct Workspace {
  float* a = nullptr;  // [MC, KC]
  float* b = nullptr;  // [KC, NC]
  Workspace() {
    a = static_cast<float*>(std::aligned_alloc(64, sizeof(float) * MC * KC));
    b = static_cast<float*>(std::aligned_alloc(64, sizeof(float) * KC * NC));
  }
  ~Workspace() {
    std::free(a);
    std::free(b);
  }
};

static Workspace& workspace() {
  // One per OS thread, created on first use and kept for the thread's life.
  thread_local std::unique_ptr<Workspace> w;
  if (!w) w = std::make_unique<Workspace>();
  return *w;
}

// One thread's share: op(A) rows [i0, i1) times op(B) columns [j0, j1) of one batch element.
// packed_b, when given, holds all of op(B) packed by pack_all_b (the caller shares it between
// row slices instead of every slice packing its own copy).
static void gemm_block(const float* a, const float* b, float* c, const GemmParams& p, int64_t i0, int64_t i1,
                       int64_t j0, int64_t j1, Workspace& ws, const float* packed_b) {
  const int64_t m = i1 - i0, n = j1 - j0;
  if (m <= 0 || n <= 0) return;
  c += i0 * p.ldc + j0;
  if (p.k == 0 || p.alpha == 0.f) {
    if (!p.accumulate)
      for (int64_t i = 0; i < m; ++i) std::memset(c + i * p.ldc, 0, sizeof(float) * n);
    return;
  }
  a += p.trans_a ? i0 : i0 * p.lda;
  b += p.trans_b ? j0 * p.ldb : j0;
  const bool direct = !packed_b && !p.trans_b && m <= kDirectMaxM;
  for (int64_t jc = 0; jc < n; jc += NC) {
    const int64_t nc = std::min(NC, n - jc);
    for (int64_t pc = 0; pc < p.k; pc += KC) {
      const int64_t kc = std::min(KC, p.k - pc);
      const bool add = p.accumulate || pc > 0;
      const float* bsrc = p.trans_b ? b + jc * p.ldb + pc : b + pc * p.ldb + jc;
      // In place, only the ragged last panel needs packing (it would read past column n). A
      // pre-packed op(B) holds every column's panels per KC block (pack_all_b / pack_weight).
      const float* bpack = packed_b ? packed_b + pc * padded_n(n) + jc * kc : ws.b;
      if (!packed_b) pack_b(bsrc, p.ldb, p.trans_b, kc, direct ? nc / NR * NR : 0, nc, ws.b);
      for (int64_t ic = 0; ic < m; ic += MC) {
        const int64_t mc = std::min(MC, m - ic);
        const float* asrc = p.trans_a ? a + pc * p.lda + ic : a + ic * p.lda + pc;
        pack_a(asrc, p.lda, p.trans_a, p.alpha, mc, kc, ws.a);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int nr = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          const bool in_place = direct && nr == NR;
          const float* bp = in_place ? bsrc + jr : bpack + (jr / NR) * kc * NR;
          const int64_t bs = in_place ? p.ldb : NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int mr = static_cast<int>(std::min<int64_t>(MR, mc - ir));
            micro(kc, ws.a + ir * kc, bp, bs, c + (ic + ir) * p.ldc + jc + jr, p.ldc, mr, nr, add);
          }
        }
      }
    }
  }
}

// Work is cut into tasks the pool's threads claim dynamically (see thread-pool.h): whole batch
// elements when there are enough, else slices of the longer of M and N in whole micro-tiles.
struct Job {
  const float* a;
  const float* b;
  float* c;
  const GemmParams* p;
  bool split_batches;
  bool by_rows;
  const float* packed_b;  // shared op(B) for row splits, or nullptr
  int64_t units;   // batch elements, or micro-tiles along the split dimension
  int64_t ntasks;
};

// Slices smaller than this many micro-tiles would repack op(B) too often (each slice packs it).
constexpr int64_t kMinTilesPerTask = 24;
// With op(B) packed once and shared, slices only need to amortize the task claim, so they are
// finer: when another process preempts a worker mid-slice, the caller waits for less work.
constexpr int64_t kMinTilesPerSharedTask = 8;

static void run_task(void* ctx, int64_t t) {
  const Job& job = *static_cast<const Job*>(ctx);
  const GemmParams& p = *job.p;
  Workspace& ws = workspace();
  const int64_t lo = job.units * t / job.ntasks, hi = job.units * (t + 1) / job.ntasks;
  auto one = [&](int64_t bt, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gemm_block(job.a + p.off_a + bt * p.stride_a, job.b + p.off_b + bt * p.stride_b,
               job.c + p.off_c + bt * p.stride_c, p, i0, i1, j0, j1, ws, job.packed_b);
  };
  if (job.split_batches) {
    for (int64_t bt = lo; bt < hi; ++bt) one(bt, 0, p.m, 0, p.n);
    return;
  }
  for (int64_t bt = 0; bt < p.batch; ++bt) {
    if (job.by_rows) one(bt, lo * MR, std::min(p.m, hi * MR), 0, p.n);
    else one(bt, 0, p.m, lo * NR, std::min(p.n, hi * NR));
  }
}

void gemm(const float* a, const float* b, float* c, const GemmParams& p) {
  if (p.m <= 0 || p.n <= 0 || p.batch <= 0) return;
  const double flops = 2.0 * p.m * p.n * p.k * p.batch;
  const int64_t nt = flops < static_cast<double>(g_parallel_min_flops) ? 1 : pool().size();
  Job job{a, b, c, &p, false, p.m >= p.n, nullptr, 0, 1};
  if (nt > 1 && p.batch >= 2 * nt) {
    job.split_batches = true;
    job.units = p.batch;
    job.ntasks = std::min<int64_t>(p.batch, 1024);
  }
  // Row slices of one product all need the same packed op(B): pack it once (below).
  const bool share_b = nt > 1 && !job.split_batches && job.by_rows && p.batch == 1 && p.k > 0 && p.alpha != 0.f &&
                       p.n <= NC;
  if (!job.split_batches) {
    job.units = job.by_rows ? (p.m + MR - 1) / MR : (p.n + NR - 1) / NR;
    job.ntasks = nt == 1 ? 1
               : share_b ? std::clamp<int64_t>(job.units / kMinTilesPerSharedTask, nt, 16 * nt)
                         : std::clamp<int64_t>(job.units / kMinTilesPerTask, nt, 4 * nt);
    job.ntasks = std::min(job.ntasks, job.units);
  }
  if (job.ntasks <= 1) {
    run_task(&job, 0);
    return;
  }
  if (share_b) {
    thread_local std::vector<float> shared_b;  // per calling thread: concurrent callers never share
    shared_b.resize(static_cast<size_t>(p.k * padded_n(p.n)));
    pack_all_b(b + p.off_b, p, shared_b.data());
    job.packed_b = shared_b.data();
  }
  pool().run(job.ntasks, run_task, &job);
}

int64_t packed_weight_size(int64_t n, int64_t k) { return k * padded_n(n); }

void pack_weight(const float* w, int64_t ldw, int64_t n, int64_t k, float* dst) {
  GemmParams p{};
  p.n = n; p.k = k; p.trans_b = true; p.ldb = ldw;
  pack_all_b(w, p, dst);
}

// Small m (a decode step): each task a range of B's panels for every row. Two rows or more are
// packed once for all tasks (small-a.h); one row is read in place: its in-place read costs one
// broadcast per step of K, no more than the packed one, and packing it measurably slowed a small
// model's batch-1 decode, where the weights are a few kilobytes (bench:sample, reference preset).
struct PackedJob {
  const float* a;
  const float* apack;  // null: a read in place
  const float* packed;
  float* c;
  const GemmParams* p;
  int64_t panels, ntasks;
};

static void packed_small_task(void* ctx, int64_t t) {
  const PackedJob& job = *static_cast<const PackedJob*>(ctx);
  const GemmParams& p = *job.p;
  const int64_t q0 = job.panels * t / job.ntasks, q1 = job.panels * (t + 1) / job.ntasks;
  const int64_t mp = small_a_rows(p.m);
  const float* a = job.a + p.off_a;
  float* c = job.c + p.off_c;
  for (int64_t pc = 0; pc < p.k; pc += KC) {
    const int64_t kc = std::min(KC, p.k - pc);
    const bool add = p.accumulate || pc > 0;
    const float* block = job.packed + pc * padded_n(p.n);
    const float* ablock = job.apack ? job.apack + pc * mp : nullptr;
    for (int64_t q = q0; q < q1; ++q) {
      const int nr = static_cast<int>(std::min<int64_t>(NR, p.n - q * NR));
      for (int64_t i = 0; i < p.m; i += MR) {
        const int mr = static_cast<int>(std::min<int64_t>(MR, p.m - i));
        if (job.apack)
          micro(kc, ablock + i * kc, block + q * kc * NR, NR, c + i * p.ldc + q * NR, p.ldc, mr, nr, add);
        else
          micro_direct(kc, a + i * p.lda + pc, p.lda, p.alpha, block + q * kc * NR, NR, c + i * p.ldc + q * NR, p.ldc,
                       mr, nr, add);
      }
    }
  }
}

int64_t g_packed_parallel_min_bytes = 256 << 10;

void gemm_packed(const float* a, const float* packed, float* c, const GemmParams& params) {
  GemmParams p = params;
  p.trans_a = false; p.trans_b = true; p.ldb = p.k; p.off_b = 0; p.batch = 1; p.stride_a = p.stride_b = p.stride_c = 0;
  if (p.m <= 0 || p.n <= 0) return;
  if (p.k == 0 || p.alpha == 0.f) {
    for (int64_t i = 0; i < p.m; ++i)
      if (!p.accumulate) std::memset(c + p.off_c + i * p.ldc, 0, sizeof(float) * p.n);
    return;
  }
  if (p.m <= kDirectMaxM) {
    // Memory-bound (each weight is used by m rows only): split the weight's panels when reading it
    // is long enough to pay for waking the other thread.
    const int64_t panels = (p.n + NR - 1) / NR;
    const int64_t bytes = static_cast<int64_t>(sizeof(float)) * p.k * panels * NR;
    const int64_t nt = bytes < g_packed_parallel_min_bytes ? 1 : pool().size();
    const float* apack = p.m > 1 ? pack_small_a(a + p.off_a, p) : nullptr;
    PackedJob job{a, apack, packed, c, &p, panels, std::min<int64_t>(panels, nt == 1 ? 1 : 4 * nt)};
    if (job.ntasks <= 1) packed_small_task(&job, 0);
    else pool().run(job.ntasks, packed_small_task, &job);
    return;
  }
  const double flops = 2.0 * p.m * p.n * p.k;
  const int64_t nt = flops < static_cast<double>(g_parallel_min_flops) ? 1 : pool().size();
  Job job{a, packed, c, &p, false, true, packed, (p.m + MR - 1) / MR, 1};
  if (nt > 1) job.ntasks = std::min(job.units, std::clamp<int64_t>(job.units / kMinTilesPerSharedTask, nt, 16 * nt));
  if (job.ntasks <= 1) run_task(&job, 0);
  else pool().run(job.ntasks, run_task, &job);
}

void gemm_serial(const float* a, const float* b, float* c, const GemmParams& p) {
  if (p.m <= 0 || p.n <= 0 || p.batch <= 0) return;
  Job job{a, b, c, &p, false, p.m >= p.n, nullptr, 0, 1};
  job.units = job.by_rows ? (p.m + MR - 1) / MR : (p.n + NR - 1) / NR;
  run_task(&job, 0);
}

}  // namespace crl
