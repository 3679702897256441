#include "serving/http_task_queue.h"

#include <system_error>

namespace kiln::serving {

HttpTaskQueue::HttpTaskQueue(size_t threads) {
  workers_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) {
    try {
      workers_.emplace_back([this] { WorkerLoop(); });
    } catch (const std::system_error&) {
      break;  // the system's limit: serve with the workers started
    }
  }
}

HttpTaskQueue::~HttpTaskQueue() { shutdown(); }

void HttpTaskQueue::enqueue(std::function<void()> task) {
  if (workers_.empty()) {  // not even one worker: serve on the accepting thread, one at a time
    task();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void HttpTaskQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void HttpTaskQueue::WorkerLoop() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace kiln::serving
