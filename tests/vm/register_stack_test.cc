#include "vm/register_stack.h"

#include <vector>

#include "gtest/gtest.h"

namespace kiln::vm {
namespace {

TEST(RegisterStack, FramesNeverMoveAndPopReleasesTheirValues) {
  RegisterStack stack;
  std::vector<std::pair<Value*, RegisterStack::Mark>> frames;
  std::vector<size_t> sizes;
  // Frames of assorted sizes, some larger than a chunk, so pushes cross chunks.
  for (size_t i = 0; i < 40; ++i) {
    size_t n = (i % 7 == 3) ? 1500 : 1 + i * 13 % 300;
    RegisterStack::Mark mark;
    Value* frame = stack.Push(n, &mark);
    for (size_t r = 0; r < n; ++r) {
      EXPECT_TRUE(frame[r].is_none());
      frame[r] = Value(static_cast<int64_t>(i * 100000 + r));
    }
    frames.emplace_back(frame, mark);
    sizes.push_back(n);
  }
  // Every frame still holds what was written: nothing moved.
  for (size_t i = 0; i < frames.size(); ++i) {
    for (size_t r = 0; r < sizes[i]; ++r) ASSERT_EQ(frames[i].first[r].as_int(), static_cast<int64_t>(i * 100000 + r));
  }
  for (size_t i = frames.size(); i-- > 0;) {
    stack.Pop(frames[i].first, sizes[i], frames[i].second);
    EXPECT_TRUE(frames[i].first[0].is_none());
  }
  // Popped space is reused from the start.
  RegisterStack::Mark mark;
  Value* again = stack.Push(4, &mark);
  EXPECT_EQ(again, frames[0].first);
}

}  // namespace
}  // namespace kiln::vm
