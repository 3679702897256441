// MeasureInChild: fork, measure in the child, read the answer from a pipe with a deadline.
#include "tune/measure.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tune/kernel_timer.h"

namespace kiln::tune {

namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
  double candidate, baseline;
};

// The child's whole job: the candidate's and the default schedule's time per call, timed
// in turns (kernel_timer.h), or why there is none.
absl::StatusOr<Timing> Measure(const MeasureRequest& request) {
  tir::CpuScheduleOptions reference_options = request.options;
  reference_options.knobs = tir::CpuScheduleKnobs();
  const bool compare = !(request.options.knobs == reference_options.knobs);
  KILN_ASSIGN_OR_RETURN(tir::PrimFunc candidate, tir::ScheduleForCpu(request.func, request.options));
  std::vector<tir::PrimFunc> versions;  // the default schedule first: the one others are checked against
  if (compare) {
    KILN_ASSIGN_OR_RETURN(tir::PrimFunc reference, tir::ScheduleForCpu(request.func, reference_options));
    versions.push_back(reference);
  }
  versions.push_back(candidate);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<KernelTimer> timer,
                        KernelTimer::Build(request.func, versions, request.cpu, request.options.num_threads));
  if (compare) KILN_RETURN_IF_ERROR(timer->Check(request.sizes));
  KILN_ASSIGN_OR_RETURN(std::vector<double> seconds, timer->Time(request.sizes));
  return Timing{seconds.back(), seconds.front()};
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

absl::StatusOr<std::map<std::string, int64_t>> CheckSizes(const tir::PrimFunc& func,
                                                          const std::map<std::string, int64_t>& sizes) {
  std::map<std::string, int64_t> out;
  for (const tir::Var& v : tir::schedule_internal::FunctionVars(func)) {
    auto it = sizes.find(v->name);
    if (it == sizes.end()) return absl::InvalidArgumentError(absl::StrCat("measure: no value for size '", v->name, "'"));
    out[v->name] = it->second;
  }
  return out;
}

MeasureResult MeasureInChild(const MeasureRequest& request) {
  MeasureResult result;
  absl::StatusOr<std::map<std::string, int64_t>> sizes = CheckSizes(request.func, request.sizes);
  if (!sizes.ok()) {
    result.error = std::string(sizes.status().message());
    return result;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    result.error = "measure: pipe failed";
    return result;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    result.error = "measure: fork failed";
    return result;
  }
  if (pid == 0) {
    close(fds[0]);
    if (request.fault == InjectedFault::kCrash) std::abort();
    if (request.fault == InjectedFault::kHang) {
      while (true) pause();
    }
    absl::StatusOr<Timing> timing = Measure(request);
    WriteAll(fds[1], timing.ok() ? absl::StrCat("ok ", timing->candidate, " ", timing->baseline)
                                 : absl::StrCat("error ", timing.status().message()));
    close(fds[1]);
    _exit(0);  // no atexit handlers or static destructors of the parent's state
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  // Read until the child closes its end or the deadline passes.
  std::string answer;
  auto deadline = Clock::now() + std::chrono::duration<double>(request.timeout_seconds);
  bool timed_out = false;
  char buffer[4096];
  while (true) {
    ssize_t n = read(fds[0], buffer, sizeof(buffer));  // the pipe is non-blocking below
    if (n > 0) {
      answer.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;
    if (Clock::now() > deadline) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) {
    result.error = absl::StrCat("timed out after ", request.timeout_seconds, " s");
  } else if (WIFSIGNALED(status)) {
    result.error = absl::StrCat("the measuring process died of signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  } else if (std::vector<std::string> words = absl::StrSplit(answer, ' ');
             words.size() == 3 && words[0] == "ok" && absl::SimpleAtod(words[1], &result.seconds) &&
             absl::SimpleAtod(words[2], &result.baseline_seconds)) {
    result.ok = true;
  } else if (answer.rfind("error ", 0) == 0) {
    result.error = answer.substr(6);
  } else {
    result.error = absl::StrCat("the measuring process exited with status ", WEXITSTATUS(status), " and no answer");
  }
  return result;
}

}  // namespace kiln::tune
