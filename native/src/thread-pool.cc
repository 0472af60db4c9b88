#include "thread-pool.h"

#include <cstdlib>

namespace crl {

static inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Workers spin this many rounds (~0.1 ms) before sleeping: long enough to catch the next GEMM of
// a training step, short enough not to steal the core from other processes between steps. A
// worker that does sleep costs little: the caller starts on the tasks while it wakes up.
static constexpr int kSpinRounds = 5000;
// state_ word: generation (32 bits) | task count (16) | next task index (16). The count lives in
// the same word so a late worker can never combine one generation's count with another's index.
static constexpr uint64_t kIndexMask = 0xffffull;
static inline int64_t count_of(uint64_t s) { return static_cast<int64_t>((s >> 16) & 0xffffull); }

ThreadPool::ThreadPool(int nthreads) : nthreads_(nthreads < 1 ? 1 : nthreads) {
  for (int i = 1; i < nthreads_; ++i) threads_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  state_.fetch_add(1ull << 32);
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool ThreadPool::claim(uint64_t gen, int64_t* task) {
  uint64_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if ((s >> 32) != gen || static_cast<int64_t>(s & kIndexMask) >= count_of(s)) return false;
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) {
      *task = static_cast<int64_t>(s & kIndexMask);
      return true;
    }
  }
}

void ThreadPool::run(int64_t ntasks, TaskFn fn, void* ctx) {
  std::unique_lock<std::mutex> guard(run_mu_, std::try_to_lock);
  if (nthreads_ <= 1 || ntasks <= 1 || ntasks > kMaxTasks || !guard.owns_lock()) {
    for (int64_t t = 0; t < ntasks; ++t) fn(ctx, t);
    return;
  }
  fn_.store(fn, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  const uint64_t gen = ((state_.load() >> 32) + 1) & 0xffffffffull;
  // seq_cst store then seq_cst load of sleepers_ pairs with the worker's increment of sleepers_
  // then load of state_ (Dekker): either we see it asleep and notify, or it sees the new job.
  state_.store((gen << 32) | (static_cast<uint64_t>(ntasks) << 16));
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }
  int64_t task;
  while (claim(gen, &task)) {
    fn(ctx, task);
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
  // Only tasks a worker already started are waited for.
  while (done_.load(std::memory_order_acquire) != ntasks) cpu_relax();
}

void ThreadPool::worker() {
  uint64_t seen = 0;  // last generation this worker has drained
  for (;;) {
    uint64_t gen = state_.load(std::memory_order_acquire) >> 32;
    for (int spin = 0; gen == seen && spin < kSpinRounds; ++spin) {
      cpu_relax();
      gen = state_.load(std::memory_order_acquire) >> 32;
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [&] { return (gen = state_.load() >> 32) != seen; });
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = gen;
    // Read after seeing gen: a successful claim below proves gen is still unfinished, so the
    // caller has not yet overwritten these for the next generation.
    const TaskFn fn = fn_.load(std::memory_order_acquire);
    void* ctx = ctx_.load(std::memory_order_acquire);
    int64_t task;
    while (claim(gen, &task)) {
      fn(ctx, task);
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }
}

static int default_threads() {
  if (const char* env = std::getenv("CRL_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1 && n <= 256) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

ThreadPool& pool() {
  static ThreadPool instance(default_threads());
  return instance;
}

}  // namespace crl
