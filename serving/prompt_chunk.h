// How many tokens of a prompt go into one model call.
//
// The float16 KV cache's attention computes a sequence's lone token in a call as llama.cpp
// computes a decode step, and two or more tokens as it computes a prompt batch
// (builtins/paged_attention.h): two summation orders, two sets of bits. So that a prompt's
// logits do not depend on how the engine chunked it, no call carries one token of a longer
// prompt alone where that can be avoided, and no chunk leaves exactly one token behind.
#pragma once

#include <cstdint>

namespace kiln::serving {

// left: the prompt's tokens not prefilled yet (> 0); room: how many this call can still take;
// most: the most any call can take (the room of an empty call). Returns how many to take, in
// [0, min(left, room)]: 0 when only one token would fit now and a later call has room for two.
int64_t PromptChunk(int64_t left, int64_t room, int64_t most);

}  // namespace kiln::serving
