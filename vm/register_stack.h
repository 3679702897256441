// RegisterStack: the register files of a VM's active frames.
//
// Frames are pushed and popped in LIFO order. A frame's registers are contiguous and never
// move while the frame lives: a callee's frame goes right above its caller's in the same
// chunk when it fits, else at the start of the next chunk (allocated on first need and kept
// for later calls). So a pointer to a register — a builtin's argument, a reference the
// interpreter holds across a call — stays valid across nested calls, including calls that
// re-enter the VM from a builtin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "vm/value.h"

namespace kiln::vm {

class RegisterStack {
 public:
  // Where the stack stood before a Push; Pop returns to it.
  struct Mark {
    size_t chunk;
    size_t used;
  };

  RegisterStack() { chunks_.push_back(NewChunk(kChunkSize)); }

  // `count` registers, all none.
  Value* Push(size_t count, Mark* mark) {
    *mark = Mark{chunk_, used_};
    Chunk& c = chunks_[chunk_];
    if (count <= c.size - used_) {
      Value* frame = c.values.get() + used_;
      used_ += count;
      return frame;
    }
    return PushInNextChunk(count);
  }

  // Releases what the frame's registers hold and returns to `mark`.
  void Pop(Value* frame, size_t count, Mark mark) {
    for (size_t i = 0; i < count; ++i) frame[i] = Value();
    chunk_ = mark.chunk;
    used_ = mark.used;
  }

 private:
  static constexpr size_t kChunkSize = 1024;
  struct Chunk {
    std::unique_ptr<Value[]> values;
    size_t size;
  };
  static Chunk NewChunk(size_t size) { return Chunk{std::make_unique<Value[]>(size), size}; }

  Value* PushInNextChunk(size_t count) {
    // Every chunk above the current one is unused, so the next may be replaced when small.
    size_t next = chunk_ + 1;
    if (next == chunks_.size()) {
      chunks_.push_back(NewChunk(count > kChunkSize ? count : kChunkSize));
    } else if (chunks_[next].size < count) {
      chunks_[next] = NewChunk(count);
    }
    chunk_ = next;
    used_ = count;
    return chunks_[next].values.get();
  }

  std::vector<Chunk> chunks_;
  size_t chunk_ = 0;
  size_t used_ = 0;
};

}  // namespace kiln::vm
