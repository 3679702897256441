#include "tools/input_spec.h"

#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "vm/npy.h"

namespace kiln::tools {
namespace {

absl::StatusOr<std::vector<int64_t>> ParseShape(const std::string& text) {
  std::vector<int64_t> shape;
  if (text == "scalar") return shape;
  for (absl::string_view piece : absl::StrSplit(text, 'x')) {
    int64_t d;
    if (!absl::SimpleAtoi(piece, &d) || d < 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad shape '", text, "' (expected e.g. 7x784)"));
    }
    shape.push_back(d);
  }
  return shape;
}

template <typename T>
void Fill(vm::Tensor& t, const std::string& mode, uint64_t seed, uint64_t int_range = 10) {
  T* data = t.data_as<T>();
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (mode == "zeros") {
      data[i] = T(0);
    } else if (mode == "ones") {
      data[i] = T(1);
    } else if constexpr (std::is_floating_point_v<T>) {
      data[i] = static_cast<T>(std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
    } else {
      data[i] = static_cast<T>(rng() % int_range);
    }
  }
}

}  // namespace

absl::StatusOr<vm::Value> ParseInputSpec(const std::string& spec) {
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  if (parts.size() == 1) {
    absl::StatusOr<vm::Tensor> t = vm::ReadNpy(spec);
    if (!t.ok()) return t.status();
    return vm::Value(*t);
  }
  const std::string& mode = parts[0];
  if (mode == "int" && parts.size() == 2) {
    int64_t v;
    if (!absl::SimpleAtoi(parts[1], &v)) return absl::InvalidArgumentError(absl::StrCat("bad int input '", spec, "'"));
    return vm::Value(v);
  }
  if ((mode != "random" && mode != "zeros" && mode != "ones") || parts.size() < 3 || parts.size() > 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad input '", spec, "': expected FILE.npy, random:SHAPE:DTYPE[:SEED], zeros:SHAPE:DTYPE, ones:SHAPE:DTYPE or int:VALUE"));
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
  DLDataType d = *dtype;
  if (d.code == kDLFloat && d.bits == 32) Fill<float>(*t, mode, seed);
  else if (d.code == kDLFloat && d.bits == 64) Fill<double>(*t, mode, seed);
  else if (d.code == kDLInt && d.bits == 64) Fill<int64_t>(*t, mode, seed);
  else if (d.code == kDLInt && d.bits == 32) Fill<int32_t>(*t, mode, seed);
  else if (d.bits == 8) Fill<uint8_t>(*t, mode, seed, d.code == vm::kDTypeBool ? 2 : 10);
  else return absl::InvalidArgumentError(absl::StrCat("generated inputs of type ", vm::DTypeToString(d), " are not supported; use a .npy file"));
  return vm::Value(*t);
}

}  // namespace kiln::tools
