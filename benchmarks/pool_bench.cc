// What a parallel region of vm::ThreadPool costs on 2 threads, for several spin settings
// (how long an idle thread polls before it sleeps) measured in the same run, alternating
// pools round by round:
//
//  1. an empty region (2 empty tasks) back to back: ns per region;
//  2. the wake-up latency: from the caller entering ParallelFor to the worker's first
//     instruction in a task, when the caller was busy for G microseconds since the previous
//     region (as it is between a decode step's parallel kernels): within the spin the worker
//     is polling, past it asleep; the share of regions that had to wake it (wakeups());
//  3. the decode GEMV, y = x W with a 4096 x 4096 float weight (64 MiB, streamed from
//     memory), its columns split in T tasks (2: fixed halves as the generated kernel; 4, 8:
//     chunks any thread may claim), called back to back: weight GB/s, the share of calls that
//     found the worker asleep, and the share of the columns the worker computed; for the 2
//     fixed halves, each half timed inside the call (its own start and end): the GB/s each
//     half streamed while it ran, the share of the call both halves ran at once, and how far
//     apart their starts and ends were (do both halves stream at once, or does one wait?);
//  4. what an idle pool costs: the process's CPU time (getrusage) during the 500 ms after a
//     burst of regions, while the caller sleeps (a serving process between requests must
//     not hold a core: every spin is bounded).
//
// Timings are noisy on a shared machine: read them with `uptime`, and compare the spins of
// one run, not runs. The peer for the GEMV is the same loop on a pool of 1 thread.
//
// A setting is a spin in microseconds, with a `p` after it (`20p`) for the two threads pinned,
// the caller to CPU 0 and the worker to CPU 1, for that pool's measurements.
//
//   build/benchmarks/pool_bench [--spins=20,20p,300,2000] [--rounds=3] [--calls=200]
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "vm/dtype.h"
#include "vm/tensor.h"
#include "vm/thread_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

void BusyFor(double micros) {
  const auto end = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(micros * 1000));
  while (Clock::now() < end) {
  }
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

__attribute__((noinline)) int32_t EmptyTask(int64_t task, int64_t, void*) {
  asm volatile("" : : "r"(task) : "memory");
  return 0;
}

double EmptyRegionNs(kiln::vm::ThreadPool& pool, int regions) {
  const auto start = Clock::now();
  for (int r = 0; r < regions; ++r) {
    if (pool.ParallelFor(2, EmptyTask, nullptr) != 0) std::abort();
  }
  return Micros(Clock::now() - start) * 1000 / regions;
}

// Two tasks that each wait for the other to start, so that one runs on the worker; each
// notes when it started and on which thread.
struct Meeting {
  std::thread::id caller;
  std::atomic<int> started{0};
  Clock::time_point worker_start;
};

int32_t MeetTask(int64_t, int64_t, void* closure) {
  auto& m = *static_cast<Meeting*>(closure);
  const auto now = Clock::now();
  if (std::this_thread::get_id() != m.caller) m.worker_start = now;
  m.started.fetch_add(1);
  const auto give_up = now + std::chrono::seconds(5);
  while (m.started.load() < 2) {
    if (Clock::now() > give_up) return 1;
  }
  return 0;
}

struct WakeFigures {
  std::vector<double> latency_us;
  uint64_t wakeups = 0;
};

void MeasureWake(kiln::vm::ThreadPool& pool, double gap_us, int regions, WakeFigures& out) {
  const uint64_t wakeups_before = pool.wakeups();
  for (int r = 0; r < regions; ++r) {
    BusyFor(gap_us);
    Meeting m;
    m.caller = std::this_thread::get_id();
    const auto start = Clock::now();
    if (pool.ParallelFor(2, MeetTask, &m) != 0) std::abort();
    out.latency_us.push_back(Micros(m.worker_start - start));
  }
  out.wakeups += pool.wakeups() - wakeups_before;
}

// y[0, n) = x[0, k) W, W row-major k x n (k a multiple of 4); each task a contiguous range
// of columns, 4 weight rows per pass over it, as the generated kernel streams the weight.
struct Gemv {
  const float* w;
  const float* x;
  float* y;
  int64_t k, n;
  std::thread::id caller;
  std::atomic<int64_t> worker_columns{0};
  // Each of 2 tasks' start and end inside the current call (a task writes only its own).
  Clock::time_point half_start[2], half_end[2];
  int half_cpu[2] = {-1, -1};  // the CPU each half started on
};

typedef float V8 __attribute__((vector_size(32)));

__attribute__((target("avx2,fma"))) void GemvColumns(const Gemv& g, int64_t c0, int64_t c1) {
  std::fill(g.y + c0, g.y + c1, 0.0f);
  for (int64_t r = 0; r + 4 <= g.k; r += 4) {
    const float* w = g.w + r * g.n;
    const float x0 = g.x[r], x1 = g.x[r + 1], x2 = g.x[r + 2], x3 = g.x[r + 3];
    for (int64_t c = c0; c < c1; c += 8) {
      V8 w0, w1, w2, w3, acc;
      std::memcpy(&w0, w + c, sizeof(V8));
      std::memcpy(&w1, w + g.n + c, sizeof(V8));
      std::memcpy(&w2, w + 2 * g.n + c, sizeof(V8));
      std::memcpy(&w3, w + 3 * g.n + c, sizeof(V8));
      std::memcpy(&acc, g.y + c, sizeof(V8));
      acc += x0 * w0 + x1 * w1 + x2 * w2 + x3 * w3;
      std::memcpy(g.y + c, &acc, sizeof(V8));
    }
  }
}

int32_t GemvTask(int64_t task, int64_t num_tasks, void* closure) {
  auto& g = *static_cast<Gemv*>(closure);
  const int64_t per = g.n / num_tasks;  // n is a multiple of 8 * num_tasks
  const bool halves = num_tasks == 2;
  if (halves) {
    g.half_start[task] = Clock::now();
    g.half_cpu[task] = sched_getcpu();
  }
  GemvColumns(g, task * per, (task + 1) * per);
  if (halves) g.half_end[task] = Clock::now();
  if (std::this_thread::get_id() != g.caller) g.worker_columns.fetch_add(per);
  return 0;
}

struct GemvFigures {
  std::vector<double> gbps;
  uint64_t wakeups = 0;
  int64_t calls = 0;
  double worker_share = 0;  // summed over calls
  // With 2 tasks, per call: each half's GB/s while it ran (both halves pushed), the share of
  // the call's span both ran at once, and the gaps between their starts and their ends.
  std::vector<double> half_gbps, overlap, start_gap_us, end_gap_us;
  int64_t same_cpu = 0;  // calls whose two halves started on the same CPU
  // Each half's GB/s in the calls whose halves ran at once for at least 90 % of the call: the
  // memory side alone (does one half's stream slow the other's?).
  std::vector<double> overlapped_half_gbps;
};

void MeasureGemv(kiln::vm::ThreadPool& pool, Gemv& g, int tasks, int calls, GemvFigures& out) {
  const uint64_t wakeups_before = pool.wakeups();
  const double bytes = static_cast<double>(g.k * g.n) * sizeof(float);
  for (int c = 0; c < calls; ++c) {
    g.worker_columns.store(0);
    const auto start = Clock::now();
    if (pool.ParallelFor(tasks, GemvTask, &g) != 0) std::abort();
    out.gbps.push_back(bytes / Micros(Clock::now() - start) / 1000);
    out.worker_share += static_cast<double>(g.worker_columns.load()) / static_cast<double>(g.n);
    if (tasks == 2) {
      for (int h = 0; h < 2; ++h) out.half_gbps.push_back(bytes / 2 / Micros(g.half_end[h] - g.half_start[h]) / 1000);
      const auto first_start = std::min(g.half_start[0], g.half_start[1]);
      const auto last_start = std::max(g.half_start[0], g.half_start[1]);
      const auto first_end = std::min(g.half_end[0], g.half_end[1]);
      const auto last_end = std::max(g.half_end[0], g.half_end[1]);
      const double overlap = std::max(0.0, Micros(first_end - last_start)) / Micros(last_end - first_start);
      out.overlap.push_back(overlap);
      if (overlap >= 0.9) {
        for (size_t h = out.half_gbps.size() - 2; h < out.half_gbps.size(); ++h) out.overlapped_half_gbps.push_back(out.half_gbps[h]);
      }
      out.start_gap_us.push_back(Micros(last_start - first_start));
      out.end_gap_us.push_back(Micros(last_end - first_end));
      if (g.half_cpu[0] == g.half_cpu[1]) ++out.same_cpu;
    }
  }
  out.calls += calls;
  out.wakeups += pool.wakeups() - wakeups_before;
}

double CpuMillis() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3; };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

double IdleCpuMillis(kiln::vm::ThreadPool& pool) {
  for (int r = 0; r < 1000; ++r) {
    if (pool.ParallelFor(2, EmptyTask, nullptr) != 0) std::abort();
  }
  const double before = CpuMillis();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  return CpuMillis() - before;
}

struct Setting {
  int spin;
  bool pinned;
};

std::string Name(const Setting& setting) { return std::to_string(setting.spin) + (setting.pinned ? " us pin" : " us"); }

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// Pins the thread that runs each task: the caller to CPU 0, the worker to CPU 1 (both tasks
// meet, so each thread runs one).
int32_t PinTask(int64_t, int64_t, void* closure) {
  auto& m = *static_cast<Meeting*>(closure);
  const bool ok = PinTo(std::this_thread::get_id() == m.caller ? 0 : 1);
  m.started.fetch_add(1);
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  while (m.started.load() < 2) {
    if (Clock::now() > give_up) return 1;
  }
  return ok ? 0 : 2;
}

bool ParseFlag(const char* arg, const char* name, std::string& value) {
  const size_t len = std::strlen(name);
  if (std::strncmp(arg, name, len) != 0 || arg[len] != '=') return false;
  value = arg + len + 1;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Setting> spins = {{20, false}, {20, true}, {300, false}, {2000, false}};
  int rounds = 3;
  int calls = 200;
  for (int i = 1; i < argc; ++i) {
    std::string value;
    int parsed = 0;
    if (ParseFlag(argv[i], "--spins", value)) {
      spins.clear();
      for (absl::string_view s : absl::StrSplit(value, ',')) {
        const bool pinned = absl::ConsumeSuffix(&s, "p");
        if (!absl::SimpleAtoi(s, &parsed) || parsed < 0 || parsed > kiln::vm::ThreadPool::kMaxSpinMicros) {
          std::fprintf(stderr, "pool_bench: bad spin '%s' (microseconds in [0, %d])\n", std::string(s).c_str(),
                       kiln::vm::ThreadPool::kMaxSpinMicros);
          return 2;
        }
        spins.push_back({parsed, pinned});
      }
    } else if (ParseFlag(argv[i], "--rounds", value) && absl::SimpleAtoi(value, &parsed) && parsed > 0) {
      rounds = parsed;
    } else if (ParseFlag(argv[i], "--calls", value) && absl::SimpleAtoi(value, &parsed) && parsed > 0) {
      calls = parsed;
    } else {
      std::fprintf(stderr, "usage: pool_bench [--spins=20,20p,300,2000] [--rounds=3] [--calls=200]\n");
      return 2;
    }
  }

  kiln::vm::ThreadPool serial(1);
  cpu_set_t all_cpus;
  if (sched_getaffinity(0, sizeof(all_cpus), &all_cpus) != 0) return 1;

  const int64_t k = 4096, n = 4096;
  auto weight = kiln::vm::Tensor::Empty({k, n}, kiln::vm::DTypeFloat32());
  if (!weight.ok()) return 1;
  Gemv g;
  std::vector<float> x(k, 1.0f / static_cast<float>(k)), y(n);
  g.w = static_cast<float*>(weight->data());
  for (int64_t i = 0; i < k * n; ++i) const_cast<float*>(g.w)[i] = static_cast<float>(i % 7);
  g.x = x.data();
  g.y = y.data();
  g.k = k;
  g.n = n;
  g.caller = std::this_thread::get_id();

  const std::vector<double> gaps = {0, 10, 30, 100, 1000};
  const std::vector<int> gemv_tasks = {2, 4, 8};
  std::vector<double> empty_ns(spins.size(), 1e30);
  std::vector<double> idle_cpu_ms(spins.size(), 0);
  std::vector<std::vector<WakeFigures>> wake(spins.size(), std::vector<WakeFigures>(gaps.size()));
  std::vector<std::vector<GemvFigures>> gemv(spins.size(), std::vector<GemvFigures>(gemv_tasks.size()));
  GemvFigures serial_gemv;
  for (int round = 0; round < rounds; ++round) {
    MeasureGemv(serial, g, 2, calls, serial_gemv);
    for (size_t p = 0; p < spins.size(); ++p) {
      // One pool alive at a time: a pool's idle worker would otherwise go on polling (for as
      // long as its spin) on a core the next pool measures with.
      kiln::vm::ThreadPool pool(2, spins[p].spin);
      if (pool.num_threads() < 2) {
        std::fprintf(stderr, "pool_bench: the system refused the worker thread\n");
        return 1;
      }
      if (spins[p].pinned) {
        Meeting m;
        m.caller = std::this_thread::get_id();
        if (pool.ParallelFor(2, PinTask, &m) != 0) {
          std::fprintf(stderr, "pool_bench: could not pin the threads to CPUs 0 and 1\n");
          return 1;
        }
      }
      empty_ns[p] = std::min(empty_ns[p], EmptyRegionNs(pool, 20000));
      for (size_t gi = 0; gi < gaps.size(); ++gi) {
        MeasureWake(pool, gaps[gi], gaps[gi] >= 1000 ? 100 : 400, wake[p][gi]);
      }
      for (size_t t = 0; t < gemv_tasks.size(); ++t) MeasureGemv(pool, g, gemv_tasks[t], calls, gemv[p][t]);
      idle_cpu_ms[p] = std::max(idle_cpu_ms[p], IdleCpuMillis(pool));
      if (spins[p].pinned) sched_setaffinity(0, sizeof(all_cpus), &all_cpus);  // the caller unpinned
    }
  }

  std::printf("vm::ThreadPool, 2 threads, %d rounds alternating the pools (spin = how long an idle thread polls)\n",
              rounds);
  std::printf("empty region back to back, best round:\n");
  for (size_t p = 0; p < spins.size(); ++p) std::printf("  spin %12s: %8.1f ns/region\n", Name(spins[p]).c_str(), empty_ns[p]);
  std::printf("worker wake-up latency (region start -> worker's first task instruction), us, after the caller was "
              "busy G us; share of regions that woke a sleeping worker:\n");
  for (size_t p = 0; p < spins.size(); ++p) {
    std::printf("  spin %12s:", Name(spins[p]).c_str());
    for (size_t gi = 0; gi < gaps.size(); ++gi) {
      const WakeFigures& w = wake[p][gi];
      std::printf("  G=%-4g median %6.2f p90 %6.2f woke %3.0f%%", gaps[gi], Quantile(w.latency_us, 0.5),
                  Quantile(w.latency_us, 0.9), 100.0 * static_cast<double>(w.wakeups) / static_cast<double>(w.latency_us.size()));
    }
    std::printf("\n");
  }
  std::printf("CPU time of the process in the 500 ms after a burst of regions (caller asleep), worst round:\n");
  for (size_t p = 0; p < spins.size(); ++p) std::printf("  spin %12s: %7.2f ms\n", Name(spins[p]).c_str(), idle_cpu_ms[p]);
  std::printf("GEMV 4096 x 4096 float weight, %d calls back to back per round: weight GB/s median / best; share of "
              "calls that woke a sleeping worker; share of the columns the worker computed\n",
              calls);
  std::printf("  1 thread (peer)          :            %6.1f / %6.1f   each half %5.1f GB/s median\n",
              Quantile(serial_gemv.gbps, 0.5), Quantile(serial_gemv.gbps, 1.0), Quantile(serial_gemv.half_gbps, 0.5));
  for (size_t p = 0; p < spins.size(); ++p) {
    for (size_t t = 0; t < gemv_tasks.size(); ++t) {
      const GemvFigures& f = gemv[p][t];
      std::printf("  spin %12s, %d tasks: %6.1f / %6.1f GB/s (x%.2f / x%.2f of 1 thread)  woke %5.1f%%  worker did %4.1f%%\n",
                  Name(spins[p]).c_str(), gemv_tasks[t], Quantile(f.gbps, 0.5), Quantile(f.gbps, 1.0),
                  Quantile(f.gbps, 0.5) / Quantile(serial_gemv.gbps, 0.5), Quantile(f.gbps, 1.0) / Quantile(serial_gemv.gbps, 1.0),
                  100.0 * static_cast<double>(f.wakeups) / static_cast<double>(f.calls),
                  100.0 * f.worker_share / static_cast<double>(f.calls));
      if (gemv_tasks[t] == 2) {
        std::printf("      each half while it ran: %5.1f GB/s median (p10 %5.1f, p90 %5.1f); both at once %3.0f%% of the call "
                    "(median); start gap median %6.1f us p90 %7.1f; end gap median %6.1f us p90 %7.1f; both halves on one CPU in %3.0f%% of calls\n"
                    "      calls with the halves at once for >= 90%% of the call: %3.0f%%, each half %5.1f GB/s median in them\n",
                    Quantile(f.half_gbps, 0.5), Quantile(f.half_gbps, 0.1), Quantile(f.half_gbps, 0.9),
                    100.0 * Quantile(f.overlap, 0.5), Quantile(f.start_gap_us, 0.5), Quantile(f.start_gap_us, 0.9),
                    Quantile(f.end_gap_us, 0.5), Quantile(f.end_gap_us, 0.9),
                    100.0 * static_cast<double>(f.same_cpu) / static_cast<double>(f.calls),
                    50.0 * static_cast<double>(f.overlapped_half_gbps.size()) / static_cast<double>(f.calls),
                    f.overlapped_half_gbps.empty() ? 0.0 : Quantile(f.overlapped_half_gbps, 0.5));
      }
    }
  }
  return y[0] == -1.0f ? 1 : 0;  // keep the results alive
}
