// kiln onnx-test: ONNX's backend node tests through Kiln (docs/onnx.md). Each case runs in
// its own child process (fork) under a time limit, so a crash or a hang is that case's
// FAIL and never the end of the run; up to -j cases run at once.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tools/commands.h"
#include "tools/onnx_test_case.h"
#include "tools/option_value.h"
#include "tools/usage_error.h"

namespace kiln::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: kiln onnx-test DIR... [-j N] [--timeout-seconds S] [--json FILE] [--filter TEXT]\n"
    "                      [--rtol R] [--atol A]\n"
    "\n"
    "Runs ONNX backend node test cases: a DIR is a case (model.onnx and test_data_set_*/)\n"
    "or a folder of cases, e.g. /usr/share/libonnx-testdata/data/node. Each case is\n"
    "imported, compiled for the CPU and run on every data set; outputs are compared with\n"
    "ONNX's tolerance (rtol 1e-3, atol 1e-7 unless given, rtol at least 2^-6 for bfloat16,\n"
    "NaN equals NaN, shapes and dtypes exact).\n"
    "Prints 'PASS name', 'FAIL name: reason' or 'UNSUPPORTED name: reason' per case, then\n"
    "'N passed, M failed, K unsupported'. Exit status 1 when a case failed.\n"
    "\n"
    "  -j, --jobs N          cases run at once, each in its own process (default: CPUs)\n"
    "  --timeout-seconds S   a case running longer fails (default 60)\n"
    "  --json FILE           also write one JSON object per case per line to FILE\n"
    "                        (name, status, message, max_abs_error, seconds)\n"
    "  --filter TEXT         only cases whose name contains TEXT\n"
    "  --rtol R              the tolerance: |got - expected| <= A + R * |expected|\n"
    "  --atol A              (each 0 or more)\n";

struct Case {
  Case(std::string name, std::string dir) : name(std::move(name)), dir(std::move(dir)) {}
  std::string name, dir;
  std::string status;  // PASS / FAIL / UNSUPPORTED
  std::string message;
  double max_abs_error = 0;
  double seconds = 0;
  bool done = false;
};

struct Running {
  size_t index;
  pid_t pid;
  int fd;  // the read end of the child's result pipe
  std::string received;
  Clock::time_point started;
};

// The child: runs the case, writes "STATUS\nERROR\nMESSAGE" to `fd`, exits without
// running the parent's atexit handlers or destructors.
[[noreturn]] void RunChild(const std::string& dir, const Tolerance& tolerance, int fd) {
  CaseResult r = RunOnnxTestCase(dir, tolerance);
  const char* status = r.outcome == CaseOutcome::kPass ? "PASS" : r.outcome == CaseOutcome::kFail ? "FAIL" : "UNSUPPORTED";
  std::string message = r.message.substr(0, 4000);
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::string text = absl::StrCat(status, "\n", r.max_abs_error, "\n", message);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  std::fflush(nullptr);
  _exit(0);
}

void Finish(Case& c, const Running& run, int wait_status) {
  c.done = true;
  c.seconds = std::chrono::duration<double>(Clock::now() - run.started).count();
  if (WIFSIGNALED(wait_status)) {
    c.status = "FAIL";
    c.message = absl::StrCat("crashed: signal ", WTERMSIG(wait_status), " (", strsignal(WTERMSIG(wait_status)), ")");
    return;
  }
  const size_t a = run.received.find('\n');
  const size_t b = a == std::string::npos ? std::string::npos : run.received.find('\n', a + 1);
  if (b == std::string::npos) {
    c.status = "FAIL";
    c.message = absl::StrCat("the case's process exited with status ", WEXITSTATUS(wait_status), " without a result");
    return;
  }
  c.status = run.received.substr(0, a);
  if (!absl::SimpleAtod(run.received.substr(a + 1, b - a - 1), &c.max_abs_error)) c.max_abs_error = 0;
  c.message = run.received.substr(b + 1);
}

std::vector<Case> CollectCases(const std::vector<std::string>& roots, const std::string& filter, std::string* error) {
  std::vector<Case> cases;
  for (const std::string& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      *error = absl::StrCat("'", root, "' is not a folder");
      return {};
    }
    if (IsOnnxTestCase(root)) {
      cases.emplace_back(fs::path(root).lexically_normal().filename().string(), root);
      if (cases.back().name.empty()) cases.back().name = fs::path(root).parent_path().filename().string();
      continue;
    }
    std::vector<fs::path> dirs;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      if (entry.is_directory() && IsOnnxTestCase(entry.path().string())) dirs.push_back(entry.path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) cases.emplace_back(d.filename().string(), d.string());
  }
  if (!filter.empty()) {
    std::erase_if(cases, [&](const Case& c) { return c.name.find(filter) == std::string::npos; });
  }
  return cases;
}

}  // namespace

int OnnxTestCommand(int argc, char** argv) {
  std::vector<std::string> roots;
  std::string json_path, filter;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double timeout = 60;
  Tolerance tolerance;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string v;
    auto value = [&](const char* flag) { return OptionValue(argc, argv, &i, flag, &v); };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (value("-j") || value("--jobs")) {
      if (!absl::SimpleAtoi(v, &jobs) || jobs < 1) {
        return UsageError("onnx-test", "-j needs a positive count, got '" + v + "'");
      }
    } else if (arg.rfind("-j", 0) == 0 && arg.size() > 2 && absl::SimpleAtoi(arg.substr(2), &jobs) && jobs > 0) {
    } else if (value("--timeout-seconds")) {
      if (!absl::SimpleAtod(v, &timeout) || !(timeout > 0)) {
        return UsageError("onnx-test", "--timeout-seconds needs a positive number, got '" + v + "'");
      }
    } else if (value("--json")) {
      json_path = v;
    } else if (value("--rtol") || value("--atol")) {
      const bool rtol = arg.rfind("--rtol", 0) == 0;
      double* out = rtol ? &tolerance.rtol : &tolerance.atol;
      if (!absl::SimpleAtod(v, out) || !(*out >= 0)) {
        return UsageError("onnx-test", std::string(rtol ? "--rtol" : "--atol") + " needs a number of 0 or more, got '" + v + "'");
      }
    } else if (value("--filter")) {
      filter = v;
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("onnx-test", UnknownOptionMessage(arg, kUsage));
    } else {
      roots.push_back(arg);
    }
  }
  if (roots.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string error;
  std::vector<Case> cases = CollectCases(roots, filter, &error);
  if (!error.empty()) {
    std::fprintf(stderr, "kiln onnx-test: %s\n", error.c_str());
    return 2;
  }
  // "0 passed, 0 failed" with exit status 0 read as success for a mistyped folder.
  if (cases.empty()) {
    std::fprintf(stderr, "kiln onnx-test: no test cases%s: a case is a folder holding model.onnx and "
                 "test_data_set_*/ (give such folders, or the folder above them)\n",
                 filter.empty() ? "" : absl::StrCat(" whose name contains '", filter, "'").c_str());
    return 1;
  }
  std::ofstream json;
  if (!json_path.empty()) {
    json.open(json_path);
    if (!json) {
      std::fprintf(stderr, "kiln onnx-test: cannot write %s\n", json_path.c_str());
      return 2;
    }
  }
  std::fflush(nullptr);  // a child must not inherit (and print again) buffered output

  std::vector<Running> running;
  size_t next_case = 0, next_print = 0;
  int passed = 0, failed = 0, unsupported = 0;
  auto print_ready = [&] {
    while (next_print < cases.size() && cases[next_print].done) {
      const Case& c = cases[next_print++];
      if (c.status == "PASS") {
        ++passed;
        std::printf("PASS %s\n", c.name.c_str());
      } else {
        (c.status == "UNSUPPORTED" ? unsupported : failed) += 1;
        std::printf("%s %s: %s\n", c.status.c_str(), c.name.c_str(), c.message.c_str());
      }
      std::fflush(stdout);
      if (json.is_open()) {
        nlohmann::json j = {{"name", c.name},       {"status", c.status},   {"message", c.message},
                            {"max_abs_error", c.max_abs_error}, {"seconds", c.seconds}};
        json << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      }
    }
  };
  while (next_print < cases.size()) {
    while (static_cast<int>(running.size()) < jobs && next_case < cases.size()) {
      int fds[2];
      if (pipe(fds) != 0) {
        std::perror("kiln onnx-test: pipe");
        return 1;
      }
      pid_t pid = fork();
      if (pid < 0) {
        std::perror("kiln onnx-test: fork");
        return 1;
      }
      if (pid == 0) {
        close(fds[0]);
        RunChild(cases[next_case].dir, tolerance, fds[1]);
      }
      close(fds[1]);
      fcntl(fds[0], F_SETFL, O_NONBLOCK);
      running.push_back({next_case++, pid, fds[0], "", Clock::now()});
    }
    std::vector<pollfd> polls;
    for (const Running& r : running) polls.push_back({r.fd, POLLIN, 0});
    poll(polls.data(), polls.size(), 100);
    for (size_t k = 0; k < running.size();) {
      Running& r = running[k];
      char buffer[4096];
      ssize_t n;
      bool eof = false;
      while ((n = read(r.fd, buffer, sizeof(buffer))) > 0) r.received.append(buffer, static_cast<size_t>(n));
      if (n == 0) eof = true;
      const double elapsed = std::chrono::duration<double>(Clock::now() - r.started).count();
      int wait_status = 0;
      if (elapsed > timeout) {
        kill(r.pid, SIGKILL);
        waitpid(r.pid, &wait_status, 0);
        Case& c = cases[r.index];
        c.done = true;
        c.status = "FAIL";
        c.seconds = elapsed;
        c.message = absl::StrCat("timed out after ", timeout, " s");
      } else if (eof && waitpid(r.pid, &wait_status, 0) == r.pid) {
        Finish(cases[r.index], r, wait_status);
      } else {
        ++k;
        continue;
      }
      close(r.fd);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
    }
    print_ready();
  }
  std::printf("%d passed, %d failed, %d unsupported\n", passed, failed, unsupported);
  return failed > 0 ? 1 : 0;
}

}  // namespace kiln::tools
