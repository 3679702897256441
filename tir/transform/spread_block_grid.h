// SpreadBlockGrid: a GPU kernel whose blocks may outnumber what one grid axis allows gets
// a second axis, decided at launch from the actual sizes.
//
// The GPU rules (tir/schedule_rules/gpu_*.cc) bind a kernel's outer loop to blockIdx.x
// only: ceil(n / 256) blocks for an elementwise op over n elements, one block per row for
// a cross-thread reduction. A grid axis holds at most Target::MaxGridSize blocks: 65535 on
// every axis of Vulkan (its guaranteed minimum, lavapipe's limit), 2^31 - 1 along CUDA's x.
// An elementwise op over 64 M elements (262144 blocks) or a reduction over 100 000 rows
// would be refused at dispatch. This pass rewrites
//   for b in thread_binding(min, E, "blockIdx.x"): body
// where E may exceed the axis's limit L (a larger constant, or a symbolic extent whose
// bound it cannot prove <= L), into
//   for by in thread_binding(0, ceildiv(E, L), "blockIdx.y"):
//     for bx in thread_binding(0, min(E, L), "blockIdx.x"):
//       let b = min + by * L + bx
//       if b < min + E: body
// so the host launches min(E, L) x ceil(E / L) blocks (E <= L: the grid it launched
// before, one row of it), and every block index below E runs the body once, as before.
// The guard is the same for every thread of a block (it reads the block index only), so a
// barrier inside the body stays in uniform control flow.
//
// Kernels that already bind blockIdx.y or blockIdx.z are left alone. Beyond L x 65535
// blocks (2^32 on Vulkan) the launch is refused by the runtime, naming the limit.
#pragma once

#include "tir/stmt.h"
#include "tir/target.h"

namespace kiln::tir::transform {

// Run after lower_blocks and before split_host_device (the launch dimensions it computes
// read the rewritten extents). A CPU function comes back unchanged.
PrimFunc SpreadBlockGrid(const PrimFunc& func, const Target& target);

}  // namespace kiln::tir::transform
