// vm::ThreadPool: every task runs exactly once, the first nonzero status wins, and the
// guarantees of vm/thread_pool.h hold under load: several threads calling at once, loops
// nested inside tasks, more loops in flight than the pool has slots, and many short regions
// back to back (the decode-step pattern the spinning workers and the atomic barrier serve).
// Run under ThreadSanitizer by scripts/sanitizer_tests.sh.
#include "vm/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kiln::vm {
namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(size_t n) : hits(n) {}
};

int32_t Count(int64_t task, int64_t, void* closure) {
  static_cast<Counts*>(closure)->hits[static_cast<size_t>(task)].fetch_add(1);
  return 0;
}

void ExpectAllOnce(const Counts& counts) {
  for (size_t i = 0; i < counts.hits.size(); ++i) EXPECT_EQ(counts.hits[i].load(), 1) << "task " << i;
}

TEST(ThreadPool, RunsEveryTaskOnceAndReportsFailures) {
  ThreadPool pool(4);
  Counts counts(1000);
  EXPECT_EQ(pool.ParallelFor(1000, Count, &counts), 0);
  ExpectAllOnce(counts);
  EXPECT_EQ(pool.ParallelFor(10, [](int64_t task, int64_t, void*) -> int32_t { return task == 7 ? 3 : 0; }, nullptr), 3);
  EXPECT_EQ(pool.ParallelFor(0, Count, nullptr), 0);
}

TEST(ThreadPool, FirstNonzeroStatusWinsAndEveryTaskStillRuns) {
  ThreadPool pool(3);
  Counts counts(64);
  // Every task fails with its own code; the result is one of them and all tasks ran.
  const int32_t status = pool.ParallelFor(64, [](int64_t task, int64_t n, void* c) -> int32_t {
    Count(task, n, c);
    return static_cast<int32_t>(task) + 1;
  }, &counts);
  EXPECT_GE(status, 1);
  EXPECT_LE(status, 64);
  ExpectAllOnce(counts);
}

TEST(ThreadPool, SingleThreadPoolRunsOnTheCaller) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.num_threads(), 1);
  const std::thread::id caller = std::this_thread::get_id();
  struct Closure {
    std::thread::id caller;
    std::atomic<int> elsewhere{0};
  } closure{caller};
  EXPECT_EQ(pool.ParallelFor(100, [](int64_t, int64_t, void* c) -> int32_t {
    auto* cl = static_cast<Closure*>(c);
    if (std::this_thread::get_id() != cl->caller) cl->elsewhere.fetch_add(1);
    return 0;
  }, &closure), 0);
  EXPECT_EQ(closure.elsewhere.load(), 0);
}

TEST(ThreadPool, ManyShortRegionsBackToBack) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int region = 0; region < 20000; ++region) {
    ASSERT_EQ(pool.ParallelFor(2, [](int64_t task, int64_t, void* c) -> int32_t {
      static_cast<std::atomic<int64_t>*>(c)->fetch_add(task + 1);
      return 0;
    }, &sum), 0);
  }
  EXPECT_EQ(sum.load(), 20000 * 3);
}

TEST(ThreadPool, RegionsAfterTheWorkersFellAsleep) {
  ThreadPool pool(3);
  for (int round = 0; round < 5; ++round) {
    // Longer than the workers spin: they sleep, and the next region must wake them (or run
    // on the caller alone); either way every task runs once.
    std::this_thread::sleep_for(std::chrono::microseconds(pool.spin_micros() * 5));
    Counts counts(50);
    EXPECT_EQ(pool.ParallelFor(50, Count, &counts), 0);
    ExpectAllOnce(counts);
  }
}

// Two tasks that each wait for the other to start: the region completes only if the worker
// runs one of them, so a worker that sleeps as soon as it is idle (no spin) must be woken.
int32_t Rendezvous(int64_t, int64_t, void* closure) {
  auto& started = *static_cast<std::atomic<int>*>(closure);
  started.fetch_add(1);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (started.load() < 2) {
    if (std::chrono::steady_clock::now() > give_up) return 1;
    std::this_thread::yield();
  }
  return 0;
}

TEST(ThreadPool, SleepingWorkerIsWokenWithoutSpin) {
  ThreadPool pool(2, /*spin_micros=*/0);
  EXPECT_EQ(pool.spin_micros(), 0);
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::atomic<int> started{0};
    ASSERT_EQ(pool.ParallelFor(2, Rendezvous, &started), 0) << "round " << round;
  }
  // Every round found the worker asleep unless the scheduler kept it from its sleep for
  // 2 ms twenty times; at least one was woken.
  EXPECT_GE(pool.wakeups(), 1u);
  EXPECT_LE(pool.wakeups(), 20u);
}

TEST(ThreadPool, LongSpinStillStopsAndShares) {
  // A worker that polls for a second between regions still takes its task at once and
  // leaves when the pool is destroyed (the spin watches the stop flag).
  ThreadPool pool(2, ThreadPool::kMaxSpinMicros);
  for (int round = 0; round < 100; ++round) {
    std::atomic<int> started{0};
    ASSERT_EQ(pool.ParallelFor(2, Rendezvous, &started), 0) << "round " << round;
  }
  EXPECT_EQ(pool.wakeups(), 0u);
}

// Several VMs: threads calling ParallelFor on one pool at the same time.
TEST(ThreadPool, ConcurrentCallers) {
  ThreadPool pool(4);
  constexpr int kCallers = 6;
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&pool, &failures, c] {
      for (int region = 0; region < 300; ++region) {
        const int64_t n = 1 + (region + c) % 17;
        Counts counts(static_cast<size_t>(n));
        if (pool.ParallelFor(n, Count, &counts) != 0) failures.fetch_add(1);
        for (auto& h : counts.hits) {
          if (h.load() != 1) failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// A task that runs a loop of its own: the inner loop makes progress even when every worker
// is busy with outer tasks (its caller runs its tasks itself).
struct Nested {
  ThreadPool* pool;
  std::atomic<int> inner_tasks{0};
};

int32_t Inner(int64_t, int64_t, void* closure) {
  static_cast<Nested*>(closure)->inner_tasks.fetch_add(1);
  return 0;
}

int32_t Outer(int64_t task, int64_t, void* closure) {
  auto* nested = static_cast<Nested*>(closure);
  // One inner task fails, so the status travels up through the nesting.
  const int32_t inner = nested->pool->ParallelFor(8, Inner, closure);
  if (inner != 0) return inner;
  return task == 5 ? 9 : 0;
}

TEST(ThreadPool, NestedLoopsMakeProgress) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    Nested nested{&pool};
    EXPECT_EQ(pool.ParallelFor(16, Outer, &nested), 9) << threads << " threads";
    EXPECT_EQ(nested.inner_tasks.load(), 16 * 8) << threads << " threads";
  }
}

// More loops in flight than the pool has slots: the extra ones run on their callers alone.
// A chain of nested loops deeper than kSlots, each waiting (holding its slot) while task 0
// runs the next level; task 1 of each level returns at once.
struct Chain {
  ThreadPool* pool;
  int depth;
  std::atomic<int>* leaves;
};

int32_t ChainLevel(int64_t task, int64_t, void* closure) {
  const auto* c = static_cast<const Chain*>(closure);
  if (task == 1) return 0;
  if (c->depth == 0) {
    c->leaves->fetch_add(1);
    return 7;
  }
  Chain next{c->pool, c->depth - 1, c->leaves};
  return c->pool->ParallelFor(2, ChainLevel, &next);
}

TEST(ThreadPool, MoreLoopsInFlightThanSlots) {
  ThreadPool pool(2);
  std::atomic<int> leaves{0};
  Chain top{&pool, ThreadPool::kSlots + 8, &leaves};
  EXPECT_EQ(pool.ParallelFor(2, ChainLevel, &top), 7);
  EXPECT_EQ(leaves.load(), 1);
}

}  // namespace
}  // namespace kiln::vm
