#include "vm/value.h"

#include <cstdint>
#include <type_traits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vm/storage.h"

namespace kiln::vm {
namespace {

using ::testing::HasSubstr;

class Counter final : public TypedObject<Counter> {
 public:
  static constexpr char kTypeName[] = "test.value_counter";
  int64_t count = 0;
};

TEST(Value, CheckedAccessorsNameExpectedAndActualKinds) {
  Value t(*Tensor::Empty({3}, DTypeFloat32()));
  absl::StatusOr<int64_t> i = t.GetInt();
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(i.status().message(), "expected int, got tensor float32[3]");
  EXPECT_THAT(std::string(Value(int64_t{4}).GetTensor().status().message()), HasSubstr("expected tensor, got int 4"));
  EXPECT_THAT(std::string(Value().GetShape().status().message()), HasSubstr("expected shape, got none"));
  EXPECT_EQ(*Value(int64_t{4}).GetInt(), 4);
  EXPECT_EQ(*Value(2.5).GetDouble(), 2.5);
  EXPECT_EQ(*Value(true).GetBool(), true);
  EXPECT_EQ(*Value::FromShape({1, 2}).GetShape(), (Shape{1, 2}));
  EXPECT_EQ(Value::FromTuple({Value(int64_t{1})}).GetTuple()->size(), 1u);
  EXPECT_EQ(*Value::FromString("s").GetString(), "s");
  EXPECT_TRUE(t.GetTensor()->same_as(t.as_tensor()));
}

// hunt23: a newcomer's `Value(3)` did not compile (ambiguous: int64, double or bool), and
// `Value("text")` or `Value(&tensor)` compiled to the bool true, a wrong argument that the
// call then reported as "got bool true" (or took, for a bool parameter).
static_assert(std::is_constructible_v<Value, int> && std::is_constructible_v<Value, uint32_t> &&
              std::is_constructible_v<Value, int16_t> && std::is_constructible_v<Value, long long>);
static_assert(!std::is_constructible_v<Value, const char*> && !std::is_constructible_v<Value, Tensor*> &&
              !std::is_constructible_v<Value, std::nullptr_t>);
static_assert(!std::is_constructible_v<Value, uint64_t>, "cast a size_t to int64_t: above INT64_MAX it has no int Value");

TEST(Value, EveryIntegerTypeIsAnInt) {
  EXPECT_EQ(*Value(3).GetInt(), 3);
  EXPECT_EQ(*Value(int32_t{-7}).GetInt(), -7);
  EXPECT_EQ(*Value(uint32_t{4000000000u}).GetInt(), 4000000000);
  EXPECT_EQ(*Value(static_cast<long long>(INT64_MIN)).GetInt(), INT64_MIN);
  std::vector<Value> args = {1, 2};
  EXPECT_EQ(args[1].Describe(), "int 2");
  EXPECT_TRUE(*Value(true).GetBool());
  EXPECT_EQ(*Value(3.0f).GetDouble(), 3.0);
}

TEST(Value, ObjectsAreTypedAndDowncastsAreChecked) {
  auto counter = std::make_shared<Counter>();
  counter->count = 7;
  Value v = Value::FromObject(counter);
  EXPECT_EQ(counter->type_name(), "test.value_counter");
  EXPECT_EQ(ObjectTypeIndex("test.value_counter"), Counter::TypeIndex());
  EXPECT_NE(Counter::TypeIndex(), Storage::TypeIndex());
  EXPECT_TRUE(v.is_object<Counter>());
  EXPECT_FALSE(v.is_object<Storage>());
  EXPECT_EQ(v.as_object<Counter>().count, 7);
  EXPECT_EQ((*v.GetObject<Counter>())->count, 7);
  EXPECT_EQ(v.Describe(), "object:test.value_counter");
  absl::StatusOr<std::shared_ptr<Storage>> wrong = v.GetObject<Storage>();
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "expected object:storage, got object:test.value_counter");
  EXPECT_THAT(std::string(Value(int64_t{1}).GetObject<Counter>().status().message()),
              HasSubstr("expected object:test.value_counter, got int 1"));
  EXPECT_TRUE(Value::FromObject(nullptr).is_none());
}

TEST(ValueDeathTest, PlainAccessorsAbortNamingTheKinds) {
  Value t(*Tensor::Empty({3}, DTypeFloat32()));
  EXPECT_DEATH((void)t.as_int(), "Value::as_int: expected int, got tensor float32\\[3\\]");
  EXPECT_DEATH((void)Value(int64_t{3}).as_tensor(), "Value::as_tensor: expected tensor, got int 3");
  EXPECT_DEATH((void)Value().as_shape(), "Value::as_shape: expected shape, got none");
  Value counter = Value::FromObject(std::make_shared<Counter>());
  EXPECT_DEATH((void)counter.as_object<Storage>(), "expected object:storage, got object:test.value_counter");
}

}  // namespace
}  // namespace kiln::vm
