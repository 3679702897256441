// Unique (converters/unique_converters.cc) against a reference written here with std::map
// (the operator's definition): rows of a matrix along axis 0 in first-occurrence order
// (sorted = 0) and the elements of a flattened tensor in ascending order, with all four
// outputs, whose lengths are known only at run time.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/frontends/onnx_compile_run.h"
#include "tests/frontends/onnx_model_builder.h"

namespace kiln::frontends::onnx {
namespace {

constexpr int32_t kInt64 = ::onnx::TensorProto::INT64;
constexpr int32_t kFloat = ::onnx::TensorProto::FLOAT;

template <typename T>
std::vector<T> ValuesOf(const vm::Tensor& t) {
  const T* p = static_cast<const T*>(t.data());
  return std::vector<T>(p, p + t.numel());
}

// The unique keys of `keys` (one per row): first occurrence, inverse and counts, ordered by
// key (sorted) or by first occurrence.
template <typename Key>
void Reference(const std::vector<Key>& keys, bool sorted, std::vector<Key>* unique, std::vector<int64_t>* first,
               std::vector<int64_t>* inverse, std::vector<int64_t>* counts) {
  std::map<Key, int64_t> first_of;
  for (size_t i = 0; i < keys.size(); ++i) first_of.emplace(keys[i], static_cast<int64_t>(i));
  std::map<int64_t, Key> by_first;
  for (const auto& [key, at] : first_of) by_first[at] = key;
  std::map<Key, int64_t> slot;
  if (sorted) {
    for (const auto& [key, at] : first_of) {
      slot[key] = static_cast<int64_t>(unique->size());
      unique->push_back(key);
      first->push_back(at);
    }
  } else {
    for (const auto& [at, key] : by_first) {
      slot[key] = static_cast<int64_t>(unique->size());
      unique->push_back(key);
      first->push_back(at);
    }
  }
  counts->assign(unique->size(), 0);
  for (const Key& key : keys) {
    inverse->push_back(slot[key]);
    ++(*counts)[slot[key]];
  }
}

absl::StatusOr<std::vector<vm::Tensor>> ImportAndRun(const ModelBuilder& m, const std::string& input, relax::ConstantData data) {
  KILN_ASSIGN_OR_RETURN(ImportResult imported, ImportOnnxBytes(m.Bytes(), "", ImportOptions{}));
  return CompileAndRun(imported, {{input, std::move(data)}});
}

TEST(OnnxUnique, RowsAlongAnAxisInFirstOccurrenceOrder) {
  const int64_t rows = 9, cols = 3;
  std::vector<int64_t> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < cols; ++k) x[r * cols + k] = (r * 5 % 4) * (k + 1) - (r % 2 == 0 && k == 2 ? 1 : 0);
  }
  ModelBuilder m(11);
  m.Input("X", kInt64, {"9", "3"}).Output("Y", kInt64).Output("I", kInt64).Output("V", kInt64).Output("C", kInt64);
  ::onnx::NodeProto* node = m.Node("Unique", {"X"}, {"Y", "I", "V", "C"}, "unique");
  SetIntAttr(node, "axis", 0);
  SetIntAttr(node, "sorted", 0);
  std::vector<std::vector<int64_t>> keys;
  for (int64_t r = 0; r < rows; ++r) keys.emplace_back(x.begin() + r * cols, x.begin() + (r + 1) * cols);
  std::vector<std::vector<int64_t>> unique;
  std::vector<int64_t> first, inverse, counts;
  Reference(keys, /*sorted=*/false, &unique, &first, &inverse, &counts);
  ASSERT_GT(unique.size(), 1u);
  ASSERT_LT(unique.size(), static_cast<size_t>(rows));
  absl::StatusOr<std::vector<vm::Tensor>> out = ImportAndRun(m, "X", HostData(tir::DataType::Int64(), {rows, cols}, x));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 4u);
  const int64_t u = static_cast<int64_t>(unique.size());
  ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{u, cols}));
  std::vector<int64_t> flat;
  for (const auto& row : unique) flat.insert(flat.end(), row.begin(), row.end());
  EXPECT_EQ(ValuesOf<int64_t>((*out)[0]), flat);
  EXPECT_EQ(ValuesOf<int64_t>((*out)[1]), first);
  EXPECT_EQ(ValuesOf<int64_t>((*out)[2]), inverse);
  EXPECT_EQ(ValuesOf<int64_t>((*out)[3]), counts);
}

TEST(OnnxUnique, FlattenedElementsInAscendingOrder) {
  const std::vector<float> x = {2.5f, -1.0f, 2.5f, 0.0f, 7.0f, -1.0f, -1.0f, 3.0f, 0.0f, 9.5f, 2.5f, -4.0f};
  ModelBuilder m(11);
  m.Input("X", kFloat, {"3", "4"}).Output("Y").Output("I", kInt64).Output("V", kInt64).Output("C", kInt64);
  m.Node("Unique", {"X"}, {"Y", "I", "V", "C"}, "unique");
  std::vector<float> unique;
  std::vector<int64_t> first, inverse, counts;
  Reference(x, /*sorted=*/true, &unique, &first, &inverse, &counts);
  absl::StatusOr<std::vector<vm::Tensor>> out = ImportAndRun(m, "X", HostData(tir::DataType::Float32(), {3, 4}, x));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 4u);
  EXPECT_EQ(ValuesOf<float>((*out)[0]), unique);
  EXPECT_EQ(ValuesOf<int64_t>((*out)[1]), first);
  EXPECT_EQ(ValuesOf<int64_t>((*out)[2]), inverse);
  EXPECT_EQ(ValuesOf<int64_t>((*out)[3]), counts);
}

}  // namespace
}  // namespace kiln::frontends::onnx
