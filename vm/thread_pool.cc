#include "vm/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <system_error>

#include "absl/strings/numbers.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kiln::vm {
namespace {

// Tells the core this is a spin-wait (on x86: yields the pipeline to the sibling
// hyperthread and saves power).
inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// The low half of Slot::claim while its owner fills in the slot: no task can be claimed.
constexpr uint64_t kClosed = 0xFFFFFFFFu;
// Loops with more tasks than this run on the caller alone (the task index must fit below
// kClosed in the low half of Slot::claim; generated kernels use about one task per thread).
constexpr int64_t kMaxTasks = int64_t{1} << 31;

using Clock = std::chrono::steady_clock;

int32_t RunSerially(int64_t num_tasks, KilnParallelBody body, void* closure) {
  int32_t result = 0;
  for (int64_t task = 0; task < num_tasks; ++task) {
    int32_t status = body(task, num_tasks, closure);
    if (status != 0 && result == 0) result = status;
  }
  return result;
}

}  // namespace

// One loop in flight. The fields are atomics because a worker may read them while the
// slot's next owner rewrites them; it then fails to claim (see RunTasks).
struct alignas(64) ThreadPool::Slot {
  // generation << 32 | index of the next unclaimed task (kClosed while being set up).
  std::atomic<uint64_t> claim{kClosed};
  std::atomic<KilnParallelBody> body{nullptr};
  std::atomic<void*> closure{nullptr};
  std::atomic<int64_t> num_tasks{0};
  // The barrier, on its own cache line: claimers and finishers do not share it.
  alignas(64) std::atomic<uint32_t> finished{0};
  std::atomic<int32_t> result{0};
  std::atomic<bool> owner_sleeping{false};
};

ThreadPool::ThreadPool(int num_threads, int spin_micros)
    : slots_(new Slot[kSlots]), spin_micros_(std::clamp(spin_micros, 0, kMaxSpinMicros)) {
  for (int i = 1; i < num_threads; ++i) {
    // The system may refuse a thread (a process or memory limit): the pool then runs with
    // the workers it has (num_threads() says how many) rather than terminating the process.
    try {
      workers_.emplace_back([this] { WorkerLoop(); });
    } catch (const std::system_error&) {
      break;
    }
  }
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  { std::lock_guard<std::mutex> lock(mutex_); }  // a worker between its check and wait()
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

namespace {

// The integer in environment variable `name` if it is one in [low, high], else `fallback`; a
// typo is reported on stderr (naming what is used instead), not read as 0 or as a value the
// system cannot honour.
int IntFromEnv(const char* name, int low, int high, int fallback, const char* unit) {
  const char* env = std::getenv(name);
  if (env == nullptr) return fallback;
  int parsed = 0;
  if (absl::SimpleAtoi(env, &parsed) && parsed >= low && parsed <= high) return parsed;
  std::fprintf(stderr, "kiln: ignoring %s='%s' (expected an integer in [%d, %d]); using %d%s\n", name, env, low, high,
               fallback, unit);
  return fallback;
}

}  // namespace

ThreadPool& ThreadPool::Global() {
  static ThreadPool* pool = [] {
    // The thread count has the same range as a target's -num-threads.
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const int threads = IntFromEnv("KILN_NUM_THREADS", 1, kMaxThreads, cores, " threads");
    const int spin = IntFromEnv("KILN_POOL_SPIN_US", 0, kMaxSpinMicros, kDefaultSpinMicros, "");
    return new ThreadPool(threads, spin);
  }();
  return *pool;
}

bool ThreadPool::RunTasks(Slot& slot) {
  bool ran = false;
  while (true) {
    // A seqlock-style read: the fields are read after `claim` and validated by the
    // compare-and-swap on it. The next owner changes `claim` (to kClosed) before it
    // rewrites any field, so (all of this being sequentially consistent) a successful CAS
    // proves the fields read belong to the generation claimed from.
    uint64_t claim = slot.claim.load();
    const uint64_t next = claim & kClosed;
    if (next == kClosed) return ran;
    const int64_t num_tasks = slot.num_tasks.load();
    if (static_cast<int64_t>(next) >= num_tasks) return ran;
    const KilnParallelBody body = slot.body.load();
    void* const closure = slot.closure.load();
    if (!slot.claim.compare_exchange_weak(claim, claim + 1)) continue;
    ran = true;
    // The owner waits for this task to finish, so the closure is alive until then.
    const int32_t status = body(static_cast<int64_t>(next), num_tasks, closure);
    if (status != 0) {
      int32_t expected = 0;
      slot.result.compare_exchange_strong(expected, status);
    }
    if (static_cast<int64_t>(slot.finished.fetch_add(1)) + 1 == num_tasks && slot.owner_sleeping.load()) {
      slot.finished.notify_all();
    }
  }
}

bool ThreadPool::RunAnyTasks() {
  bool ran = false;
  for (uint64_t mask = busy_.load(std::memory_order_acquire); mask != 0; mask &= mask - 1) {
    ran = RunTasks(slots_[static_cast<size_t>(__builtin_ctzll(mask))]) || ran;
  }
  return ran;
}

void ThreadPool::WorkerLoop() {
  while (!stopping_.load()) {
    // Read the epoch before looking for work: a loop published after the look bumps it.
    const uint64_t seen = epoch_.load();
    if (RunAnyTasks()) continue;
    const Clock::time_point spin_end = Clock::now() + std::chrono::microseconds(spin_micros_);
    bool woken = false;
    for (uint32_t i = 1;; ++i) {
      if (epoch_.load(std::memory_order_relaxed) != seen || stopping_.load(std::memory_order_relaxed)) {
        woken = true;
        break;
      }
      Pause();
      if (i % 64 == 0 && Clock::now() >= spin_end) break;
    }
    if (woken) continue;
    std::unique_lock<std::mutex> lock(mutex_);
    // Announce the sleep, then look at the epoch again; a caller bumps the epoch, then looks
    // at sleepers_. One of the two sees the other (sequential consistency): no lost wakeup.
    sleepers_.fetch_add(1);
    wake_.wait(lock, [&] { return epoch_.load() != seen || stopping_.load(); });
    sleepers_.fetch_sub(1);
  }
}

int ThreadPool::AcquireSlot() {
  uint64_t mask = busy_.load(std::memory_order_relaxed);
  while (mask != ~uint64_t{0}) {
    const int i = __builtin_ctzll(~mask);
    if (busy_.compare_exchange_weak(mask, mask | (uint64_t{1} << i), std::memory_order_acq_rel)) return i;
  }
  return -1;
}

void ThreadPool::Wake() {
  wakeups_.fetch_add(1, std::memory_order_relaxed);
  { std::lock_guard<std::mutex> lock(mutex_); }  // a worker between its check and wait()
  wake_.notify_all();
}

int32_t ThreadPool::ParallelFor(int64_t num_tasks, KilnParallelBody body, void* closure) {
  if (num_tasks <= 0) return 0;
  if (workers_.empty() || num_tasks == 1 || num_tasks >= kMaxTasks) return RunSerially(num_tasks, body, closure);
  const int index = AcquireSlot();
  if (index < 0) return RunSerially(num_tasks, body, closure);
  Slot& slot = slots_[static_cast<size_t>(index)];

  // Close the slot under a new generation, fill it in, publish it.
  const uint64_t generation = ((slot.claim.load() >> 32) + 1) << 32;
  slot.claim.store(generation | kClosed);
  slot.body.store(body);
  slot.closure.store(closure);
  slot.num_tasks.store(num_tasks);
  slot.finished.store(0);
  slot.result.store(0);
  slot.owner_sleeping.store(false);
  slot.claim.store(generation);
  epoch_.fetch_add(1);
  if (sleepers_.load() > 0) Wake();

  RunTasks(slot);

  // The barrier: every task claimed, wait until all have finished. Poll briefly (the
  // stragglers are usually running), then sleep until the last finisher notifies.
  const auto n = static_cast<uint32_t>(num_tasks);
  if (slot.finished.load(std::memory_order_acquire) != n) {
    const Clock::time_point spin_end = Clock::now() + std::chrono::microseconds(spin_micros_);
    for (uint32_t i = 1; slot.finished.load(std::memory_order_acquire) != n; ++i) {
      Pause();
      if (i % 64 == 0 && Clock::now() >= spin_end) {
        slot.owner_sleeping.store(true);
        for (uint32_t f = slot.finished.load(); f != n; f = slot.finished.load()) slot.finished.wait(f);
        break;
      }
    }
  }
  const int32_t result = slot.result.load(std::memory_order_relaxed);
  busy_.fetch_and(~(uint64_t{1} << index), std::memory_order_release);
  return result;
}

}  // namespace kiln::vm
