#include "tir/buffer.h"

#include "support/check.h"

namespace kiln::tir {

Buffer::Buffer(std::string name, DataType dtype, std::vector<PrimExpr> shape,
               std::vector<PrimExpr> strides, std::string scope)
    : node_(std::make_shared<BufferNode>(std::move(name), dtype, std::move(shape),
                                         std::move(strides), std::move(scope))) {
  KILN_CHECK(node_->strides.empty() || node_->strides.size() == node_->shape.size())
      << "buffer " << node_->name << ": strides must be empty or one per dimension";
}

PrimExpr Buffer::Load(std::vector<PrimExpr> indices) const {
  KILN_CHECK_EQ(indices.size(), node_->shape.size()) << "buffer " << node_->name;
  DataType dtype = node_->dtype;
  // A vector index (Ramp) loads a vector of that many lanes.
  if (!indices.empty() && indices.back().dtype().lanes() > 1) {
    dtype = dtype.with_lanes(indices.back().dtype().lanes());
  }
  return PrimExpr(std::make_shared<BufferLoadNode>(dtype, node_, std::move(indices)));
}

}  // namespace kiln::tir
