// Persistent worker pool: threads start once (first use) and are reused for every call, because
// the sampler issues thousands of small GEMMs and a thread spawn costs ~20-50 us.
//
// Work is a list of tasks claimed through one atomic counter, and the caller claims tasks too.
// On this shared 2-core machine the other core is often busy with another process; then the
// caller simply runs every task itself instead of waiting milliseconds for the worker to be
// scheduled (measured: static splitting made 2 MFLOP products 40x slower under load).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace crl {

using TaskFn = void (*)(void* ctx, int64_t task);

class ThreadPool {
 public:
  explicit ThreadPool(int nthreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  static constexpr int64_t kMaxTasks = 0xffff;  // more run inline; callers stay far below

  int size() const { return nthreads_; }
  // Runs fn(ctx, t) for every t in [0, ntasks), on the caller and the workers; returns when all
  // are done. Reentrant calls (another JS thread) run inline on their caller.
  void run(int64_t ntasks, TaskFn fn, void* ctx);

 private:
  void worker();
  // Claims the next task of generation gen; false when that generation has none left.
  bool claim(uint64_t gen, int64_t* task);

  int nthreads_;
  std::vector<std::thread> threads_;
  // (generation << 32) | (task count << 16) | next task index. Claims are CASes on the whole word, so a worker that
  // wakes late can never take a task of a newer generation with an older job's function.
  std::atomic<uint64_t> state_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<TaskFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex run_mu_;  // one run() at a time
  std::mutex mu_;      // sleeping workers
  std::condition_variable cv_;
};

// The process-wide pool (hardware threads, or CRL_THREADS if set).
ThreadPool& pool();

}  // namespace crl
