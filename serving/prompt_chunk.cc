#include "serving/prompt_chunk.h"

#include <algorithm>

namespace kiln::serving {

int64_t PromptChunk(int64_t left, int64_t room, int64_t most) {
  if (left <= 0 || room <= 0) return 0;
  // Calls of one token only, or the whole rest fits: nothing to arrange.
  if (most < 2 || left <= room) return std::min(left, room);
  int64_t take = room;
  if (left - take == 1) --take;  // leave two behind, not one
  if (take >= 2) return take;
  // One token (or none) would go now: wait for a call with more room, unless there is none.
  return room < most ? 0 : room;
}

}  // namespace kiln::serving
