#include "tools/input_spec.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "tools/npy_tensor.h"
#include "tools/onnx_model.h"

namespace kiln::tools {
namespace {

absl::StatusOr<std::vector<int64_t>> ParseShape(const std::string& text) {
  std::vector<int64_t> shape;
  if (text == "scalar") return shape;
  for (absl::string_view piece : absl::StrSplit(text, 'x')) {
    int64_t d;
    if (!absl::SimpleAtoi(piece, &d) || d < 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad shape '", text, "' (expected e.g. 7x784, or scalar)"));
    }
    shape.push_back(d);
  }
  return shape;
}

// Uniform in [-1, 1) for floats, [0, 10) for integers, {0, 1} for bool; seeded.
absl::Status Fill(vm::Tensor& t, const std::string& mode, uint64_t seed) {
  DLDataType d = t.dtype();
  bool is_float = d.code == kDLFloat || d.code == kDLBfloat;
  uint64_t int_range = d.code == vm::kDTypeBool ? 2 : 10;
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double value = mode == "zeros" ? 0.0
                   : mode == "ones" ? 1.0
                   : is_float       ? std::uniform_real_distribution<double>(-1.0, 1.0)(rng)
                                    : static_cast<double>(rng() % int_range);
    if (!vm::StoreElementFromDouble(t.data(), d, i, value)) {
      return absl::InvalidArgumentError(absl::StrCat("generated inputs of type ", vm::DTypeToString(d),
                                                     " are not supported; use a .npy file"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<vm::Value> ParseInputSpec(const std::string& spec) {
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  if (parts.size() == 1) {
    absl::StatusOr<vm::Tensor> t = EndsWith(spec, ".pb") ? ReadPbTensor(spec) : ReadNpyTensor(spec);
    if (!t.ok()) return t.status();
    return vm::Value(*t);
  }
  const std::string& mode = parts[0];
  if (mode == "int" && parts.size() == 2) {
    int64_t v;
    if (!absl::SimpleAtoi(parts[1], &v)) return absl::InvalidArgumentError(absl::StrCat("bad int input '", spec, "'"));
    return vm::Value(v);
  }
  if (mode == "float" && parts.size() == 2) {
    double v;
    if (!absl::SimpleAtod(parts[1], &v)) return absl::InvalidArgumentError(absl::StrCat("bad float input '", spec, "'"));
    // A number too large for a double reads as an infinity; say so, as the IR text does,
    // rather than run with a value nobody wrote.
    if (std::isinf(v) && absl::AsciiStrToLower(parts[1]).find("inf") == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("float input '", spec, "' is outside the range of float64; write float:inf for an infinity"));
    }
    return vm::Value(v);
  }
  if (mode == "shape" && parts.size() == 2) {
    // A Shape parameter (func @f(s: Shape((n, m))), R.reshape's target): its values.
    absl::StatusOr<std::vector<int64_t>> shape = ParseShape(parts[1]);
    if (!shape.ok()) return shape.status();
    return vm::Value::FromShape(*std::move(shape));
  }
  if (mode == "bool" && parts.size() == 2) {
    if (parts[1] == "true" || parts[1] == "1") return vm::Value(true);
    if (parts[1] == "false" || parts[1] == "0") return vm::Value(false);
    return absl::InvalidArgumentError(absl::StrCat("bad bool input '", spec, "' (expected bool:true or bool:false)"));
  }
  if ((mode != "random" && mode != "zeros" && mode != "ones") || parts.size() < 3 || parts.size() > 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad input '", spec, "': expected FILE.npy, random:SHAPE:DTYPE[:SEED], zeros:SHAPE:DTYPE, ones:SHAPE:DTYPE, "
        "int:VALUE, float:VALUE, bool:true|false or shape:SHAPE"));
  }
  absl::StatusOr<std::vector<int64_t>> shape = ParseShape(parts[1]);
  if (!shape.ok()) return shape.status();
  absl::StatusOr<DLDataType> dtype = vm::ParseDType(parts[2]);
  if (!dtype.ok()) return dtype.status();
  uint64_t seed = 0;
  if (parts.size() == 4 && !absl::SimpleAtoi(parts[3], &seed)) {
    return absl::InvalidArgumentError(absl::StrCat("bad seed in '", spec, "'"));
  }
  absl::StatusOr<vm::Tensor> t = vm::Tensor::Empty(*shape, *dtype);
  if (!t.ok()) return t.status();
  absl::Status filled = Fill(*t, mode, seed);
  if (!filled.ok()) return filled;
  return vm::Value(*t);
}

}  // namespace kiln::tools
