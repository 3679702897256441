// MeasureInChild: fork, measure in the child, read the answer from a pipe with a deadline.
#include "tune/measure.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "codegen/cpu_shared_object.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_object.h"
#include "vm/standalone_call_context.h"
#include "vm/tensor.h"
#include "vm/thread_pool.h"

namespace kiln::tune {

namespace {

using Clock = std::chrono::steady_clock;

absl::StatusOr<DLDataType> ToDlType(const tir::DataType& t) {
  using Code = tir::DataType::Code;
  switch (t.code()) {
    case Code::kInt: return DLDataType{kDLInt, static_cast<uint8_t>(t.bits()), 1};
    case Code::kUInt: return DLDataType{kDLUInt, static_cast<uint8_t>(t.bits()), 1};
    case Code::kFloat: return DLDataType{kDLFloat, static_cast<uint8_t>(t.bits()), 1};
    case Code::kBool: return DLDataType{kDLUInt, 8, 1};  // one byte per bool, as the VM stores them
    default: return absl::UnimplementedError("measure: a parameter of an unsupported element type");
  }
}

// Random floats in [-1, 1]; integers 0 (they are often indices), bools false.
void FillRandom(vm::Tensor* t, uint32_t seed) {
  std::memset(t->data_as<uint8_t>(), 0, t->nbytes());
  if (t->dtype().code != kDLFloat || t->dtype().bits != 32) return;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t->numel(); ++i) t->data_as<float>()[i] = dist(rng);
}

bool Agree(const vm::Tensor& a, const vm::Tensor& b, std::string* where) {
  if (a.dtype().code != kDLFloat || a.dtype().bits != 32) {
    if (std::memcmp(a.data_as<uint8_t>(), b.data_as<uint8_t>(), a.nbytes()) == 0) return true;
    *where = "integer results differ";
    return false;
  }
  for (int64_t i = 0; i < a.numel(); ++i) {
    float x = a.data_as<float>()[i], y = b.data_as<float>()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (!(std::fabs(x - y) <= 1e-3f * (std::fabs(x) + 1.0f))) {
      *where = absl::StrCat("element ", i, ": ", y, " where the default schedule gives ", x);
      return false;
    }
  }
  return true;
}

// One kernel's arguments at the request's sizes: tensors (random, the same for every set
// made with the same seed) and scalar sizes.
struct Arguments {
  std::vector<vm::Tensor> tensors;
  std::vector<KilnArg> args;
};

absl::StatusOr<Arguments> MakeArguments(const tir::PrimFunc& func, const std::map<std::string, int64_t>& sizes) {
  tir::VarMap bindings;
  for (const tir::Var& v : tir::schedule_internal::FunctionVars(func)) {
    bindings[v.get()] = tir::IntImm(v.dtype(), sizes.at(v->name));
  }
  Arguments out;
  out.tensors.reserve(func->params.size());
  uint32_t seed = 1;
  for (const tir::PrimFuncParam& p : func->params) {
    KilnArg a{};
    if (p.is_buffer()) {
      std::vector<int64_t> shape;
      for (const tir::PrimExpr& d : p.buffer->shape) {
        std::optional<int64_t> value = tir::schedule_internal::SimplifyExpr(tir::Substitute(d, bindings)).as_int();
        if (!value || *value < 0) return absl::InvalidArgumentError("measure: a buffer's size does not evaluate");
        shape.push_back(*value);
      }
      KILN_ASSIGN_OR_RETURN(DLDataType dtype, ToDlType(p.buffer->dtype));
      KILN_ASSIGN_OR_RETURN(vm::Tensor t, vm::Tensor::Empty(shape, dtype));
      FillRandom(&t, seed++);
      out.tensors.push_back(t);
      a.value.tensor = out.tensors.back().dl_tensor();
      a.type_code = kKilnArgTensor;
    } else {
      a.value.i64 = sizes.at(p.var->name);
      a.type_code = kKilnArgInt;
    }
    out.args.push_back(a);
  }
  return out;
}

struct Timing {
  double candidate, baseline;
};

// The child's whole job: the candidate's and the default schedule's time per call, or why
// there is none.
absl::StatusOr<Timing> Measure(const MeasureRequest& request) {
  tir::CpuScheduleOptions reference_options = request.options;
  reference_options.knobs = tir::CpuScheduleKnobs();
  const bool compare = !(request.options.knobs == reference_options.knobs);
  KILN_ASSIGN_OR_RETURN(tir::PrimFunc candidate, tir::ScheduleForCpu(request.func, request.options));
  codegen::NamedPrimFuncs kernels = {{"candidate", candidate}};
  if (compare) {
    KILN_ASSIGN_OR_RETURN(tir::PrimFunc reference, tir::ScheduleForCpu(request.func, reference_options));
    kernels.push_back({"reference", reference});
  }
  KILN_ASSIGN_OR_RETURN(std::string so, codegen::BuildCpuSharedObject(kernels, request.cpu));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<vm::KernelObject> object, vm::KernelObject::Load(so));
  vm::ThreadPool pool(request.options.num_threads);
  vm::StandaloneCallContext context = vm::MakeStandaloneCallContext(&pool);
  auto call = [&](KilnKernelFn fn, Arguments& a) -> absl::Status {
    if (fn(a.args.data(), static_cast<int32_t>(a.args.size()), &context.ctx) != 0) {
      return absl::InternalError("measure: the kernel failed: " + context.error);
    }
    return absl::OkStatus();
  };
  KILN_ASSIGN_OR_RETURN(KilnKernelFn candidate_fn, object->Find("candidate"));
  KILN_ASSIGN_OR_RETURN(Arguments args, MakeArguments(request.func, request.sizes));
  if (compare) {
    KILN_ASSIGN_OR_RETURN(Arguments expected, MakeArguments(request.func, request.sizes));
    KILN_ASSIGN_OR_RETURN(KilnKernelFn reference_fn, object->Find("reference"));
    KILN_RETURN_IF_ERROR(call(reference_fn, expected));
    KILN_RETURN_IF_ERROR(call(candidate_fn, args));
    for (size_t i = 0; i < args.tensors.size(); ++i) {
      std::string where;
      if (!Agree(expected.tensors[i], args.tensors[i], &where)) {
        return absl::InternalError(absl::StrCat("wrong result in parameter ", i, ": ", where));
      }
    }
  } else {
    KILN_RETURN_IF_ERROR(call(candidate_fn, args));  // warm-up
  }
  // The candidate and the default schedule take turns, batch by batch, so that a change in
  // the machine's load falls on both alike; each time is the least over its batches (the
  // noise of a shared machine only adds time). Batches are long enough to time (>= 2 ms).
  KilnKernelFn reference_fn = candidate_fn;
  if (compare) {
    KILN_ASSIGN_OR_RETURN(reference_fn, object->Find("reference"));
  }
  auto batch_seconds = [&](KilnKernelFn fn, int64_t calls) -> absl::StatusOr<double> {
    auto start = Clock::now();
    for (int64_t r = 0; r < calls; ++r) KILN_RETURN_IF_ERROR(call(fn, args));
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  int64_t per_batch = 1;
  while (per_batch < (int64_t{1} << 20)) {
    KILN_ASSIGN_OR_RETURN(double seconds, batch_seconds(candidate_fn, per_batch));
    if (seconds >= 2e-3) break;
    per_batch *= 2;
  }
  Timing timing{1e30, 1e30};
  auto deadline = Clock::now() + std::chrono::milliseconds(300);
  for (int round = 0; round < 40 && (round < 5 || Clock::now() < deadline); ++round) {
    KILN_ASSIGN_OR_RETURN(double c, batch_seconds(candidate_fn, per_batch));
    timing.candidate = std::min(timing.candidate, c / static_cast<double>(per_batch));
    if (!compare) continue;
    KILN_ASSIGN_OR_RETURN(double r, batch_seconds(reference_fn, per_batch));
    timing.baseline = std::min(timing.baseline, r / static_cast<double>(per_batch));
  }
  if (!compare) timing.baseline = timing.candidate;
  return timing;
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
