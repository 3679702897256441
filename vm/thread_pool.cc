#include "vm/thread_pool.h"

#include <atomic>
#include <cstdlib>

namespace kiln::vm {

struct ThreadPool::Job {
  KilnParallelBody body;
  void* closure;
  int64_t num_tasks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> finished{0};
  std::atomic<int32_t> result{0};
  std::mutex done_mutex;
  std::condition_variable done;
};

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

ThreadPool& ThreadPool::Global() {
  static ThreadPool* pool = [] {
    int threads = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* env = std::getenv("KILN_NUM_THREADS")) threads = std::atoi(env);
    return new ThreadPool(threads < 1 ? 1 : threads);
  }();
  return *pool;
}

void ThreadPool::RunTasks(Job& job) {
  int64_t task;
  while ((task = job.next.fetch_add(1)) < job.num_tasks) {
    int32_t status = job.body(task, job.num_tasks, job.closure);
    if (status != 0) {
      int32_t expected = 0;
      job.result.compare_exchange_strong(expected, status);
    }
    if (job.finished.fetch_add(1) + 1 == job.num_tasks) {
      std::lock_guard<std::mutex> lock(job.done_mutex);
      job.done.notify_all();
    }
  }
}

void ThreadPool::WorkerLoop() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = jobs_.front();
      // A job whose tasks are all claimed leaves the queue; its owner waits for the rest.
      if (job->next.load() >= job->num_tasks) {
        jobs_.pop_front();
        continue;
      }
    }
    RunTasks(*job);
  }
}

int32_t ThreadPool::ParallelFor(int64_t num_tasks, KilnParallelBody body, void* closure) {
  if (num_tasks <= 0) return 0;
  if (workers_.empty() || num_tasks == 1) {
    int32_t result = 0;
    for (int64_t task = 0; task < num_tasks; ++task) {
      int32_t status = body(task, num_tasks, closure);
      if (status != 0 && result == 0) result = status;
    }
    return result;
  }
  auto job = std::make_shared<Job>();
  job->body = body;
  job->closure = closure;
  job->num_tasks = num_tasks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(job);
  }
  wake_.notify_all();
  RunTasks(*job);
  {
    std::unique_lock<std::mutex> lock(job->done_mutex);
    job->done.wait(lock, [&] { return job->finished.load() == job->num_tasks; });
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (*it == job) {
        jobs_.erase(it);
        break;
      }
    }
  }
  return job->result.load();
}

}  // namespace kiln::vm
