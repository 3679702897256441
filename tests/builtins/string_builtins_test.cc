// The kiln.string.* builtins (builtins/string_builtins.cc) against results written out by
// hand from the semantics they follow (Python's str.split and str.upper, numpy's str() of
// floats, ONNX's operator specifications), and bad arguments as errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "builtins/default_builtins.h"
#include "vm/dtype.h"
#include "vm/string_tensor.h"

namespace kiln::builtins {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using vm::Value;

vm::Tensor Strings(std::vector<int64_t> shape, std::vector<std::string> strings) {
  return *vm::MakeStringTensor(shape, strings);
}

absl::StatusOr<Value> Call(const char* name, std::vector<Value> args) {
  const vm::BuiltinRegistry::Builtin* builtin = DefaultRegistry().FindBuiltin(name);
  if (builtin == nullptr) return absl::NotFoundError(name);
  std::vector<const Value*> ptrs;
  for (const Value& a : args) ptrs.push_back(&a);
  vm::BuiltinContext ctx{nullptr, vm::CpuDevice(), nullptr};
  Value result;
  absl::Status status = builtin->fn(ctx, ptrs.data(), static_cast<int>(ptrs.size()), &result);
  if (!status.ok()) return status;
  return result;
}

std::vector<std::string> StringsOf(const absl::StatusOr<Value>& v) { return vm::StringsOf(v->as_tensor()); }

std::vector<int> BoolsOf(const absl::StatusOr<Value>& v) {
  std::vector<int> out;
  for (int64_t i = 0; i < v->as_tensor().numel(); ++i) out.push_back(v->as_tensor().data_as<uint8_t>()[i]);
  return out;
}

Value Tuple(std::vector<Value> fields) { return Value::FromTuple(std::move(fields)); }
Value Str(std::string s) { return Value::FromString(std::move(s)); }

TEST(StringBuiltins, ConcatBroadcasts) {
  absl::StatusOr<Value> r = Call("kiln.string.concat", {Value(Strings({2, 1}, {"a", "bc"})), Value(Strings({3}, {"x", "", "的"}))});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->as_tensor().shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(StringsOf(r), ElementsAre("ax", "a", "a的", "bcx", "bc", "bc的"));
  absl::StatusOr<Value> bad = Call("kiln.string.concat", {Value(Strings({2}, {"a", "b"})), Value(Strings({3}, {"x", "y", "z"}))});
  EXPECT_THAT(bad.status().message(), HasSubstr("do not broadcast"));
  vm::Tensor numbers = *vm::Tensor::Empty({2}, vm::DTypeFloat32());
  EXPECT_THAT(Call("kiln.string.concat", {Value(numbers), Value(numbers)}).status().message(), HasSubstr("must be a string tensor"));
}

TEST(StringBuiltins, EqualBroadcasts) {
  absl::StatusOr<Value> r = Call("kiln.string.equal", {Value(Strings({3}, {"a", "b", ""})), Value(Strings({}, {"b"}))});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(BoolsOf(r), ElementsAre(0, 1, 0));
}

TEST(StringBuiltins, RegexFullMatchIsAnchoredAndUtf8) {
  absl::StatusOr<Value> r = Call("kiln.string.regex_full_match",
                                 {Value(Strings({5}, {"aab", "aabx", "xaab", "éé", ""})), Str("(a+b|é+)")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(BoolsOf(r), ElementsAre(1, 0, 0, 1, 0));
  // \w is ASCII, as in RE2, the syntax ONNX specifies (its Python reference uses `re`, whose
  // \w also matches é); . is one character.
  r = Call("kiln.string.regex_full_match", {Value(Strings({2}, {"café", "caf"})), Str("\\w+")});
  EXPECT_THAT(BoolsOf(r), ElementsAre(0, 1));
  r = Call("kiln.string.regex_full_match", {Value(Strings({1}, {"é"})), Str(".")});
  EXPECT_THAT(BoolsOf(r), ElementsAre(1));
  absl::StatusOr<Value> bad = Call("kiln.string.regex_full_match", {Value(Strings({1}, {"a"})), Str("(a")});
  EXPECT_THAT(bad.status().message(), HasSubstr("pattern '(a' at offset"));
}

TEST(StringBuiltins, SplitFollowsPythonStrSplit) {
  // "a,b,,c".split(",") and "x".split(","); padded to the widest.
  absl::StatusOr<Value> r = Call("kiln.string.split", {Value(Strings({2}, {"a,b,,c", "x"})), Str(","), Value(int64_t{-1})});
  ASSERT_TRUE(r.ok()) << r.status();
  const vm::TupleFields& both = r->as_tuple();
  EXPECT_EQ(both[0].as_tensor().shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_THAT(vm::StringsOf(both[0].as_tensor()), ElementsAre("a", "b", "", "c", "x", "", "", ""));
  EXPECT_EQ(both[1].as_tensor().data_as<int64_t>()[0], 4);
  EXPECT_EQ(both[1].as_tensor().data_as<int64_t>()[1], 1);
  // "  a \t b c ".split(None, 1) == ["a", "b c "] (the rest keeps its trailing whitespace);
  // "a  ".split(None, 1) == ["a"]; "".split() == [].
  r = Call("kiln.string.split", {Value(Strings({3}, {"  a \t b c ", "a  ", ""})), Str(""), Value(int64_t{1})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(vm::StringsOf(r->as_tuple()[0].as_tensor()), ElementsAre("a", "b c ", "a", "", "", ""));
  EXPECT_EQ(r->as_tuple()[1].as_tensor().data_as<int64_t>()[1], 1);
  EXPECT_EQ(r->as_tuple()[1].as_tensor().data_as<int64_t>()[2], 0);
  // A multi-character delimiter with maxsplit: "a--b--c".split("--", 1) == ["a", "b--c"].
  r = Call("kiln.string.split", {Value(Strings({1}, {"a--b--c"})), Str("--"), Value(int64_t{1})});
  EXPECT_THAT(vm::StringsOf(r->as_tuple()[0].as_tensor()), ElementsAre("a", "b--c"));
}

TEST(StringBuiltins, NormalizeDropsStopwordsAndMapsCase) {
  absl::StatusOr<Value> r = Call("kiln.string.normalize", {Value(Strings({1, 4}, {"Monday", "été", "monday", "x"})),
                                                           Tuple({Str("MONDAY")}), Value(int64_t{0}), Str("UPPER")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->as_tensor().shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_THAT(StringsOf(r), ElementsAre("ÉTÉ", "X"));
  // Case sensitive: "Monday" is not the stopword "monday"; everything dropped gives [""].
  r = Call("kiln.string.normalize", {Value(Strings({2}, {"Monday", "monday"})), Tuple({Str("monday")}), Value(int64_t{1}), Str("LOWER")});
  EXPECT_THAT(StringsOf(r), ElementsAre("monday"));
  r = Call("kiln.string.normalize", {Value(Strings({1}, {"a"})), Tuple({Str("a")}), Value(int64_t{1}), Str("NONE")});
  EXPECT_EQ(r->as_tensor().shape(), (std::vector<int64_t>{1}));
  EXPECT_THAT(StringsOf(r), ElementsAre(""));
  EXPECT_THAT(Call("kiln.string.normalize", {Value(Strings({2, 1}, {"a", "b"})), Tuple({}), Value(int64_t{1}), Str("NONE")})
                  .status().message(), HasSubstr("[C] or [1, C]"));
}

TEST(StringBuiltins, LabelEncode) {
  absl::StatusOr<Value> r = Call("kiln.string.label_encode",
                                 {Value(Strings({3}, {"b", "zz", "a"})), Tuple({Str("a"), Str("b")}),
                                  Tuple({Value(int64_t{10}), Value(int64_t{20})}), Value(int64_t{-1}),
                                  Value(vm::PackDType(vm::DTypeInt64()))});
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t* y = r->as_tensor().data_as<int64_t>();
  EXPECT_EQ(y[0], 20);
  EXPECT_EQ(y[1], -1);
  EXPECT_EQ(y[2], 10);
  vm::Tensor ids = *vm::Tensor::Empty({2}, vm::DTypeInt64());
  ids.data_as<int64_t>()[0] = 7;
  ids.data_as<int64_t>()[1] = 8;
  r = Call("kiln.string.label_encode", {Value(ids), Tuple({Value(int64_t{7})}), Tuple({Str("seven")}), Str("_Unused"),
                                        Value(vm::PackDType(vm::DTypeString()))});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(StringsOf(r), ElementsAre("seven", "_Unused"));
}

TEST(StringBuiltins, FromNumberWritesAsNumpy) {
  vm::Tensor f = *vm::Tensor::Empty({9}, vm::DTypeFloat32());
  const float values[] = {0.1f, 1e-5f, 1e16f, 100.0f, -0.0f, NAN, -INFINITY, 0.039187793f, 1.5e-4f};
  for (int i = 0; i < 9; ++i) f.data_as<float>()[i] = values[i];
  absl::StatusOr<Value> r = Call("kiln.string.from_number", {Value(f)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(StringsOf(r), ElementsAre("0.1", "1e-05", "1e+16", "100.0", "-0.0", "nan", "-inf", "0.039187793", "0.00015"));
  // float32 1e-4 lies just below 1e-4: scientific, as numpy writes it.
  f.data_as<float>()[0] = 1e-4f;
  EXPECT_EQ(StringsOf(Call("kiln.string.from_number", {Value(f)}))[0], "1e-04");
  vm::Tensor d = *vm::Tensor::Empty({2}, DLDataType{kDLFloat, 64, 1});
  d.data_as<double>()[0] = 0.1;
  d.data_as<double>()[1] = 1e-4;
  EXPECT_THAT(StringsOf(Call("kiln.string.from_number", {Value(d)})), ElementsAre("0.1", "0.0001"));
  vm::Tensor i = *vm::Tensor::Empty({1}, vm::DTypeInt64());
  i.data_as<int64_t>()[0] = -42;
  EXPECT_THAT(StringsOf(Call("kiln.string.from_number", {Value(i)})), ElementsAre("-42"));
}

TEST(StringBuiltins, ToNumberParsesOrNamesTheElement) {
  absl::StatusOr<Value> r = Call("kiln.string.to_number", {Value(Strings({3}, {" 2.5 ", "-1e3", "inf"})),
                                                           Value(vm::PackDType(vm::DTypeFloat32()))});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->as_tensor().data_as<float>()[0], 2.5f);
  EXPECT_EQ(r->as_tensor().data_as<float>()[1], -1000.0f);
  EXPECT_TRUE(std::isinf(r->as_tensor().data_as<float>()[2]));
  EXPECT_THAT(Call("kiln.string.to_number", {Value(Strings({2}, {"1", "abc"})), Value(vm::PackDType(vm::DTypeFloat32()))})
                  .status().message(), HasSubstr("element 1 'abc'"));
  EXPECT_THAT(Call("kiln.string.to_number", {Value(Strings({1}, {"300"})), Value(vm::PackDType(DLDataType{kDLInt, 8, 1}))})
                  .status().message(), HasSubstr("'300' is not a int8"));
  r = Call("kiln.string.to_number", {Value(Strings({1}, {"+12"})), Value(vm::PackDType(vm::DTypeInt64()))});
  EXPECT_EQ(r->as_tensor().data_as<int64_t>()[0], 12);
}

TEST(StringBuiltins, MakeChecksTheCount) {
  absl::StatusOr<Value> r = Call("kiln.string.make", {Value::FromShape({2}), Tuple({Str("a"), Str("b")})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(StringsOf(r), ElementsAre("a", "b"));
  EXPECT_THAT(Call("kiln.string.make", {Value::FromShape({3}), Tuple({Str("a")})}).status().message(),
              HasSubstr("needs 3 strings, got 1"));
}

}  // namespace
}  // namespace kiln::builtins
