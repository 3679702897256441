// Buffer: a typed, shaped view of memory that TIR reads and writes.
//
// The shape may be symbolic. Strides empty means compact row-major; otherwise one stride
// (in elements) per dimension. The scope says where the memory lives: "global" (device
// main memory), "shared" (GPU block-shared) or "local" (per thread / registers).
// A Buffer's identity is its node: two buffers with the same name are different buffers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tir/data_type.h"
#include "tir/expr.h"

namespace kiln::tir {

class BufferNode {
 public:
  BufferNode(std::string name, DataType dtype, std::vector<PrimExpr> shape,
             std::vector<PrimExpr> strides, std::string scope)
      : name(std::move(name)),
        dtype(dtype),
        shape(std::move(shape)),
        strides(std::move(strides)),
        scope(std::move(scope)) {}
  const std::string name;
  const DataType dtype;
  const std::vector<PrimExpr> shape;
  const std::vector<PrimExpr> strides;
  const std::string scope;
};

class Buffer {
 public:
  Buffer() = default;
  Buffer(std::string name, DataType dtype, std::vector<PrimExpr> shape,
         std::vector<PrimExpr> strides = {}, std::string scope = "global");
  explicit Buffer(std::shared_ptr<const BufferNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const BufferNode* get() const { return node_.get(); }
  const BufferNode* operator->() const { return node_.get(); }
  const std::shared_ptr<const BufferNode>& node() const { return node_; }
  bool same_as(const Buffer& other) const { return node_ == other.node_; }
  int ndim() const { return static_cast<int>(node_->shape.size()); }

  // `buffer[indices]`; the index count must match ndim (KILN_CHECK).
  PrimExpr Load(std::vector<PrimExpr> indices) const;

 private:
  std::shared_ptr<const BufferNode> node_;
};

}  // namespace kiln::tir
