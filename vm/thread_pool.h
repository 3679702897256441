// The runtime's thread pool. Generated kernels reach it through KilnCallContext's
// parallel_for; they never create threads themselves.
//
// ParallelFor may be called from several threads at once (several VMs) and from inside a
// task (nested loops): the calling thread always works on its own loop's tasks, so every
// loop makes progress even when all workers are busy. It returns once every task has run,
// with 0 or the first nonzero status a task returned (the remaining tasks still run).
//
// A parallel region is cheap enough to run hundreds per LLM decode step: the hot path
// allocates nothing and takes no lock. A loop's description lives in one of kSlots slots
// owned by the pool; the caller publishes it, workers claim tasks with a compare-and-swap
// that also checks the slot's generation (so a worker that read a stale slot can never
// claim a task of the loop that reuses it), and the region ends on an atomic barrier (a
// count of finished tasks). Idle workers spin for about spin_micros() before they sleep on a
// condition variable; a caller only touches the mutex to wake sleeping workers. When every
// slot is taken (more than kSlots loops in flight at once) a loop runs on the caller alone.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "vm/kernel_abi.h"

namespace kiln::vm {

class ThreadPool {
 public:
  // The most threads KILN_NUM_THREADS may ask for (the bound of a target's -num-threads).
  static constexpr int kMaxThreads = 4096;

  // `num_threads` counts the caller: a pool of 1 runs everything on the calling thread. If
  // the system refuses to start a worker, the pool keeps those it started.
  // `spin_micros` (clamped to [0, kMaxSpinMicros]) is how long an idle thread polls before it
  // sleeps.
  explicit ThreadPool(int num_threads, int spin_micros = kDefaultSpinMicros);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool, sized by KILN_NUM_THREADS or the number of cores (a value that is
  // not an integer in [1, kMaxThreads] is reported on stderr and ignored); its spin by
  // KILN_POOL_SPIN_US (an integer in [0, kMaxSpinMicros], else reported and ignored).
  static ThreadPool& Global();

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }
  int spin_micros() const { return spin_micros_; }
  // Regions that found a worker asleep and had to wake it (a futex call, and the worker
  // starts several microseconds later): benchmarks/pool_bench reports it.
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

  // Runs body(task, num_tasks, closure) for every task in [0, num_tasks) and returns 0, or
  // the first nonzero value a task returned (remaining tasks still run).
  int32_t ParallelFor(int64_t num_tasks, KilnParallelBody body, void* closure);

  // How long an idle worker (or a caller waiting for the last tasks of its loop) polls
  // before it sleeps, by default. Short: the machines this runs on may have few cores, shared
  // with other processes and with OpenBLAS's own threads.
  static constexpr int kDefaultSpinMicros = 20;
  // The longest spin: a pool never polls longer than a second.
  static constexpr int kMaxSpinMicros = 1000000;
  // Loops in flight at once (all callers and nesting levels together) that workers can help.
  static constexpr int kSlots = 64;

 private:
  struct alignas(64) Slot;
  void WorkerLoop();
  // Claims and runs tasks of `slot` until none is left; whether it ran any.
  static bool RunTasks(Slot& slot);
  // Runs tasks of any published loop; whether it ran any.
  bool RunAnyTasks();
  int AcquireSlot();
  void Wake();

  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> busy_{0};     // bit i: slot i holds a loop (owned by its caller)
  std::atomic<uint64_t> epoch_{0};    // bumped on every publish; idle workers watch it
  std::atomic<int> sleepers_{0};      // workers blocked (or about to block) on wake_
  std::atomic<uint64_t> wakeups_{0};  // calls of Wake()
  const int spin_micros_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;                  // only for sleeping and waking
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
};

}  // namespace kiln::vm
