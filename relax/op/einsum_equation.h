// The parsed form of an einsum equation ("bij,bjk->bik", "...ii->...i", "i,i"), shared by
// einsum's inference and legalization (relax/op/einsum.cc states the semantics).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::relax::op {

struct EinsumEquation {
  // Each operand's dims as label ids; labels [0, ellipsis_rank) stand for the dims the
  // ellipsis covers (an operand with fewer of them takes the last ones, numpy broadcasting),
  // the others for letters.
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  int ellipsis_rank = 0;
  int num_labels = 0;
  std::vector<std::string> names;  // per label: the letter, or "...<i>"
};

// Parses `equation` for operands of the given ndims. Spaces are ignored. Errors
// (InvalidArgument, message without the op's name): a character other than a letter, ",",
// "->", "..." or space; an operand count or an operand's letter count that does not match
// its ndim; an output letter that no input has or that repeats; "..." in the output when no
// input has it, or inputs with "..." dims and an explicit output without it.
absl::StatusOr<EinsumEquation> ParseEinsumEquation(const std::string& equation, const std::vector<int>& ndims);

}  // namespace kiln::relax::op
