// The runtime's thread pool. Generated kernels reach it through KilnCallContext's
// parallel_for; they never create threads themselves.
//
// ParallelFor may be called from several threads at once (several VMs) and from inside a
// task (nested loops): the calling thread always works on its own loop's tasks, so every
// loop makes progress even when all workers are busy.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "vm/kernel_abi.h"

namespace kiln::vm {

class ThreadPool {
 public:
  // `num_threads` counts the caller: a pool of 1 runs everything on the calling thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool, sized by KILN_NUM_THREADS or the number of cores.
  static ThreadPool& Global();

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs body(task, num_tasks, closure) for every task in [0, num_tasks) and returns 0, or
  // the first nonzero value a task returned (remaining tasks still run).
  int32_t ParallelFor(int64_t num_tasks, KilnParallelBody body, void* closure);

 private:
  struct Job;
  void WorkerLoop();
  static void RunTasks(Job& job);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace kiln::vm
