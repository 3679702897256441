// The thread pool that serves the HTTP server's connections (httplib's TaskQueue).
//
// httplib's own ThreadPool starts its threads in its constructor and, if the system refuses
// one (RLIMIT_NPROC, vm.max_map_count, memory: `kiln serve --http-threads 65536`), throws
// with the threads it already started still joinable, which terminates the process. This
// pool starts as many workers as the system allows, up to the number asked for, and serves
// with those: connections beyond them wait in the queue instead.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "httplib.h"

namespace kiln::serving {

class HttpTaskQueue : public httplib::TaskQueue {
 public:
  explicit HttpTaskQueue(size_t threads);
  ~HttpTaskQueue() override;
  HttpTaskQueue(const HttpTaskQueue&) = delete;
  HttpTaskQueue& operator=(const HttpTaskQueue&) = delete;

  void enqueue(std::function<void()> task) override;
  // Runs the tasks already queued, then joins every worker.
  void shutdown() override;

  // How many workers the system let it start. With none, enqueue() runs each task itself.
  size_t started() const { return workers_.size(); }

 private:
  void WorkerLoop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace kiln::serving
