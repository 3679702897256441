// KernelTimer: build, check against version 0, time in turns.
#include "tune/kernel_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "codegen/cpu_shared_object.h"
#include "support/status_macros.h"
#include "tir/schedule/schedule_utils.h"
#include "tir/stmt_functor.h"
#include "vm/tensor.h"

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

// One kernel's arguments at some sizes: tensors (random, the same for every set made with
// the same sizes) and scalar sizes.
struct Arguments {
  std::vector<vm::Tensor> tensors;
  std::vector<KilnArg> args;
};

absl::StatusOr<Arguments> MakeArguments(const tir::PrimFunc& func, const std::map<std::string, int64_t>& sizes) {
  tir::VarMap bindings;
  for (const tir::Var& v : tir::schedule_internal::FunctionVars(func)) {
    auto it = sizes.find(v->name);
    if (it == sizes.end()) return absl::InvalidArgumentError(absl::StrCat("measure: no value for size '", v->name, "'"));
    bindings[v.get()] = tir::IntImm(v.dtype(), it->second);
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

absl::Status Call(KilnKernelFn fn, Arguments& a, vm::StandaloneCallContext* context) {
  if (fn(a.args.data(), static_cast<int32_t>(a.args.size()), &context->ctx) != 0) {
    return absl::InternalError("measure: the kernel failed: " + context->error);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<KernelTimer>> KernelTimer::Build(const tir::PrimFunc& unscheduled,
                                                                const std::vector<tir::PrimFunc>& scheduled,
                                                                const codegen::CpuTarget& cpu, int num_threads) {
  if (scheduled.empty()) return absl::InvalidArgumentError("measure: no kernel to time");
  std::vector<std::pair<std::string, tir::PrimFunc>> kernels;
  for (size_t i = 0; i < scheduled.size(); ++i) kernels.emplace_back(absl::StrCat("version_", i), scheduled[i]);
  KILN_ASSIGN_OR_RETURN(std::string so, codegen::BuildCpuSharedObject(kernels, cpu));
  std::unique_ptr<KernelTimer> timer(new KernelTimer());
  timer->unscheduled_ = unscheduled;
  KILN_ASSIGN_OR_RETURN(timer->object_, vm::KernelObject::Load(so));
  for (const auto& [name, func] : kernels) {
    KILN_ASSIGN_OR_RETURN(KilnKernelFn fn, timer->object_->Find(name));
    timer->versions_.push_back(fn);
  }
  timer->pool_ = std::make_unique<vm::ThreadPool>(num_threads);
  timer->context_ = std::make_unique<vm::StandaloneCallContext>(vm::MakeStandaloneCallContext(timer->pool_.get()));
  return timer;
}

absl::Status KernelTimer::Check(const std::map<std::string, int64_t>& sizes) {
  KILN_ASSIGN_OR_RETURN(Arguments expected, MakeArguments(unscheduled_, sizes));
  KILN_RETURN_IF_ERROR(Call(versions_[0], expected, context_.get()));
  for (size_t v = 1; v < versions_.size(); ++v) {
    KILN_ASSIGN_OR_RETURN(Arguments args, MakeArguments(unscheduled_, sizes));
    KILN_RETURN_IF_ERROR(Call(versions_[v], args, context_.get()));
    for (size_t i = 0; i < args.tensors.size(); ++i) {
      std::string where;
      if (!Agree(expected.tensors[i], args.tensors[i], &where)) {
        return absl::InternalError(absl::StrCat("wrong result of version ", v, " in parameter ", i, ": ", where));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> KernelTimer::Time(const std::map<std::string, int64_t>& sizes,
                                                      const TimingOptions& options) {
  KILN_ASSIGN_OR_RETURN(Arguments args, MakeArguments(unscheduled_, sizes));
  auto batch_seconds = [&](KilnKernelFn fn, int64_t calls) -> absl::StatusOr<double> {
    auto start = Clock::now();
    for (int64_t r = 0; r < calls; ++r) KILN_RETURN_IF_ERROR(Call(fn, args, context_.get()));
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  for (KilnKernelFn fn : versions_) KILN_RETURN_IF_ERROR(Call(fn, args, context_.get()));  // warm-up
  // Batches sized on the fastest version, so every batch of every version is long enough
  // to time.
  int64_t per_batch = 1;
  while (per_batch < (int64_t{1} << 20)) {
    double shortest = 1e30;
    for (KilnKernelFn fn : versions_) {
      KILN_ASSIGN_OR_RETURN(double seconds, batch_seconds(fn, per_batch));
      shortest = std::min(shortest, seconds);
    }
    if (shortest >= options.min_batch_seconds) break;
    per_batch *= 2;
  }
  std::vector<double> best(versions_.size(), 1e30);
  auto deadline = Clock::now() + std::chrono::duration<double>(options.round_seconds);
  // Every other round runs the versions in reverse order: what one batch leaves behind (a
  // frequency step, the cache lines it evicted, a time slice about to end) then falls on
  // each version alike instead of always on the one after it.
  for (int round = 0; round < options.max_rounds && (round < options.min_rounds || Clock::now() < deadline); ++round) {
    for (size_t turn = 0; turn < versions_.size(); ++turn) {
      const size_t v = round % 2 == 0 ? turn : versions_.size() - 1 - turn;
      KILN_ASSIGN_OR_RETURN(double seconds, batch_seconds(versions_[v], per_batch));
      best[v] = std::min(best[v], seconds / static_cast<double>(per_batch));
    }
  }
  return best;
}

}  // namespace kiln::tune
