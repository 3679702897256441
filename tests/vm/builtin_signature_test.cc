#include "vm/builtin_signature.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vm/storage.h"

namespace kiln::vm {
namespace {

using ::testing::HasSubstr;

BuiltinSignature Sig(const char* text) {
  absl::StatusOr<BuiltinSignature> sig = BuiltinSignature::Parse(text);
  EXPECT_TRUE(sig.ok()) << sig.status();
  return sig.ok() ? *sig : BuiltinSignature();
}

TEST(BuiltinSignature, ParsesAndPrintsCanonically) {
  EXPECT_EQ(Sig("(tensor,int , object:kv_cache)->tensor").ToString(), "(tensor, int, object:kv_cache) -> tensor");
  EXPECT_EQ(Sig("(any...) -> tuple").ToString(), "(any...) -> tuple");
  EXPECT_EQ(Sig("() -> none").ToString(), "() -> none");
  EXPECT_EQ(Sig("(shape, double, bool, string, closure, object) -> any").ToString(),
            "(shape, double, bool, string, closure, object) -> any");
  EXPECT_EQ(Sig("(tensor, int...) -> object:a.b_c").ToString(), "(tensor, int...) -> object:a.b_c");
  BuiltinSignature v = Sig("(tensor, int...) -> none");
  EXPECT_TRUE(v.variadic);
  EXPECT_FALSE(v.AcceptsArity(0));
  EXPECT_TRUE(v.AcceptsArity(1));
  EXPECT_TRUE(v.AcceptsArity(5));
}

TEST(BuiltinSignature, MalformedSignaturesSayWhere) {
  for (const char* bad : {"tensor -> tensor", "(tensor) tensor", "(tensor, ) -> none", "(float) -> none",
                          "(any..., int) -> none", "(object:) -> none", "(int) -> none extra"}) {
    absl::StatusOr<BuiltinSignature> sig = BuiltinSignature::Parse(bad);
    ASSERT_FALSE(sig.ok()) << bad;
    EXPECT_THAT(std::string(sig.status().message()), HasSubstr("bad builtin signature")) << bad;
    EXPECT_THAT(std::string(sig.status().message()), HasSubstr("at column")) << bad;
  }
  EXPECT_THAT(std::string(BuiltinSignature::Parse("(float) -> none").status().message()), HasSubstr("unknown type 'float'"));
}

TEST(BuiltinSignature, ChecksArgumentsNamingTheArgument) {
  BuiltinSignature sig = Sig("(tensor, int, object:storage) -> none");
  Value t(*Tensor::Empty({2}, DTypeFloat32()));
  Value i(int64_t{3});
  Value s = Value::FromObject(*Storage::Allocate(CpuDevice(), 16));
  const Value* good[] = {&t, &i, &s};
  EXPECT_TRUE(sig.CheckArgs(good, 3).ok());
  const Value* swapped[] = {&t, &s, &i};
  EXPECT_THAT(std::string(sig.CheckArgs(swapped, 3).message()), HasSubstr("argument 1: expected int, got object:storage"));
  const Value* not_storage[] = {&t, &i, &t};
  EXPECT_THAT(std::string(sig.CheckArgs(not_storage, 3).message()),
              HasSubstr("argument 2: expected object:storage, got tensor float32[2]"));
  EXPECT_THAT(std::string(sig.CheckArgs(good, 2).message()), HasSubstr("takes 3 arguments"));
  BuiltinSignature variadic = Sig("(tensor, int...) -> none");
  const Value* many[] = {&t, &i, &i, &i};
  EXPECT_TRUE(variadic.CheckArgs(many, 4).ok());
  EXPECT_TRUE(variadic.CheckArgs(many, 1).ok());
  const Value* bad_tail[] = {&t, &i, &t};
  EXPECT_THAT(std::string(variadic.CheckArgs(bad_tail, 3).message()), HasSubstr("argument 2: expected int"));
}

TEST(BuiltinSignature, CompatibilityAllowsWhatTheCompilerDidNotKnow) {
  // The compiler records `any` where a value's kind is unknown; it is checked when called.
  EXPECT_TRUE(Compatible(Sig("(tensor, int) -> tensor"), Sig("(any, int) -> any")));
  EXPECT_TRUE(Compatible(Sig("(object:kv_cache) -> none"), Sig("(object) -> none")));
  EXPECT_TRUE(Compatible(Sig("(any...) -> tuple"), Sig("(tensor, int) -> tuple")));
  EXPECT_TRUE(Compatible(Sig("(any...) -> tuple"), Sig("(any...) -> tuple")));
  EXPECT_TRUE(Compatible(Sig("(tensor, int...) -> none"), Sig("(tensor) -> none")));
  EXPECT_FALSE(Compatible(Sig("(tensor, int) -> tensor"), Sig("(int, int) -> tensor")));
  EXPECT_FALSE(Compatible(Sig("(tensor) -> tensor"), Sig("(tensor) -> shape")));
  EXPECT_FALSE(Compatible(Sig("(tensor) -> tensor"), Sig("(tensor, tensor) -> tensor")));
  EXPECT_FALSE(Compatible(Sig("(object:kv_cache) -> none"), Sig("(object:storage) -> none")));
  EXPECT_FALSE(Compatible(Sig("(tensor) -> none"), Sig("(tensor...) -> none")));
  EXPECT_FALSE(Compatible(Sig("(tensor, int...) -> none"), Sig("(any...) -> none")));

  BuiltinSignature met = Meet(Sig("(any, int, object) -> any"), Sig("(tensor, any, object:kv_cache) -> shape"));
  EXPECT_EQ(met.ToString(), "(tensor, int, object:kv_cache) -> shape");
  EXPECT_EQ(Meet(Sig("(any...) -> tuple"), Sig("(tensor, int) -> tuple")).ToString(), "(tensor, int) -> tuple");
}

}  // namespace
}  // namespace kiln::vm
