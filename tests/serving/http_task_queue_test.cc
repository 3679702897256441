// The HTTP server's connection pool: runs every task, drains the queue on shutdown, and
// serves with the workers the system allows instead of terminating the process.
#include "serving/http_task_queue.h"

#include <dlfcn.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdlib>

#include "gtest/gtest.h"

namespace kiln::serving {
namespace {

TEST(HttpTaskQueue, RunsEveryTaskAndDrainsOnShutdown) {
  std::atomic<int> ran{0};
  HttpTaskQueue queue(4);
  EXPECT_EQ(queue.started(), 4u);
  for (int i = 0; i < 1000; ++i) queue.enqueue([&] { ran.fetch_add(1); });
  queue.shutdown();
  EXPECT_EQ(ran.load(), 1000);
}

TEST(HttpTaskQueue, WithoutWorkersTasksRunOnTheCaller) {
  int ran = 0;
  HttpTaskQueue queue(0);
  queue.enqueue([&] { ++ran; });
  EXPECT_EQ(ran, 1);
}

// `kiln serve --http-threads 65536` on a system that allows fewer threads: httplib's own
// pool aborted the process (std::system_error with joinable threads). Here the address space
// is limited so that thread stacks run out.
TEST(HttpTaskQueue, SystemRefusingThreadsIsNotAnAbort) {
  // AddressSanitizer reserves terabytes of address space: the limit cannot be set under it.
  if (dlsym(RTLD_DEFAULT, "__asan_init") != nullptr) GTEST_SKIP() << "address space limits do not mix with ASan";
  EXPECT_EXIT(
      {
        rlimit limit{};
        getrlimit(RLIMIT_AS, &limit);
        limit.rlim_cur = 1ull << 30;  // 1 GiB: about a hundred 8 MiB stacks
        setrlimit(RLIMIT_AS, &limit);
        std::atomic<int> ran{0};
        HttpTaskQueue queue(4096);
        if (queue.started() == 0 || queue.started() >= 4096) std::_Exit(2);
        for (int i = 0; i < 100; ++i) queue.enqueue([&] { ran.fetch_add(1); });
        queue.shutdown();
        std::_Exit(ran.load() == 100 ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace kiln::serving
