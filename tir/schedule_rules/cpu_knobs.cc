// The text form of CpuScheduleKnobs: `name=value` pairs separated by spaces.
#include "tir/schedule_rules/cpu_knobs.h"

#include <functional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln::tir {

namespace {

// One knob: its name in the text form, where it lives, and its valid range (bools are 0..1).
struct KnobField {
  const char* name;
  std::function<int*(CpuScheduleKnobs&)> int_field;
  std::function<bool*(CpuScheduleKnobs&)> bool_field;
  int min, max;
};

const std::vector<KnobField>& Fields() {
  static const std::vector<KnobField> fields = {
      {"matmul.row_tile", [](CpuScheduleKnobs& k) { return &k.matmul.row_tile; }, nullptr, 0, 64},
      {"matmul.col_vectors", [](CpuScheduleKnobs& k) { return &k.matmul.col_vectors; }, nullptr, 0, 8},
      {"matmul.pack", [](CpuScheduleKnobs& k) { return &k.matmul.pack; }, nullptr, -1, 1},
      {"matmul.unroll_rows", nullptr, [](CpuScheduleKnobs& k) { return &k.matmul.unroll_rows; }, 0, 1},
      {"matmul.parallel", nullptr, [](CpuScheduleKnobs& k) { return &k.matmul.parallel; }, 0, 1},
      {"matmul.few_rows", nullptr, [](CpuScheduleKnobs& k) { return &k.matmul.few_rows; }, 0, 1},
      {"matmul.rows_outer", nullptr, [](CpuScheduleKnobs& k) { return &k.matmul.rows_outer; }, 0, 1},
      {"matmul.k_unroll", [](CpuScheduleKnobs& k) { return &k.matmul.k_unroll; }, nullptr, 1, 16},
      {"matmul.wide_k_block", [](CpuScheduleKnobs& k) { return &k.matmul.wide_k_block; }, nullptr, 0, 1024},
      {"matmul.wide_step_rows", [](CpuScheduleKnobs& k) { return &k.matmul.wide_step_rows; }, nullptr, 0, 16},
      {"matmul.wide_subtiles", [](CpuScheduleKnobs& k) { return &k.matmul.wide_subtiles; }, nullptr, 0, 16},
      {"matmul.wide_pack", nullptr, [](CpuScheduleKnobs& k) { return &k.matmul.wide_pack; }, 0, 1},
      {"matmul.many_rows", [](CpuScheduleKnobs& k) { return &k.matmul.many_rows; }, nullptr, 0, 1024},
      {"matmul.gemv_rows_per_pass", [](CpuScheduleKnobs& k) { return &k.matmul.gemv_rows_per_pass; }, nullptr, 0,
       1024},
      {"matmul.packed_least_rows", [](CpuScheduleKnobs& k) { return &k.matmul.packed_least_rows; }, nullptr, 0,
       1024},
      {"matmul.wide_step_vectors", [](CpuScheduleKnobs& k) { return &k.matmul.wide_step_vectors; }, nullptr, 0, 4},
      {"matmul.wide_prefetch", nullptr, [](CpuScheduleKnobs& k) { return &k.matmul.wide_prefetch; }, 0, 1},
      {"matmul.stream_prefetch", [](CpuScheduleKnobs& k) { return &k.matmul.stream_prefetch; }, nullptr, -1, 4096},
      {"matmul.edge_steps", nullptr, [](CpuScheduleKnobs& k) { return &k.matmul.edge_steps; }, 0, 1},
      {"matmul.left_block_rows", [](CpuScheduleKnobs& k) { return &k.matmul.left_block_rows; }, nullptr, -1,
       1 << 20},
      {"reduction.lanes", [](CpuScheduleKnobs& k) { return &k.reduction.lanes; }, nullptr, 0, 64},
      {"reduction.parallel", nullptr, [](CpuScheduleKnobs& k) { return &k.reduction.parallel; }, 0, 1},
      {"injective.lanes", [](CpuScheduleKnobs& k) { return &k.injective.lanes; }, nullptr, 0, 64},
      {"injective.parallel", nullptr, [](CpuScheduleKnobs& k) { return &k.injective.parallel; }, 0, 1},
  };
  return fields;
}

}  // namespace

std::string CpuScheduleKnobs::ToString() const {
  CpuScheduleKnobs copy = *this;
  std::vector<std::string> parts;
  for (const KnobField& f : Fields()) {
    int value = f.int_field ? *f.int_field(copy) : static_cast<int>(*f.bool_field(copy));
    parts.push_back(absl::StrCat(f.name, "=", value));
  }
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<CpuScheduleKnobs> CpuScheduleKnobs::Parse(const std::string& text) {
  CpuScheduleKnobs knobs;
  for (absl::string_view pair : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    const KnobField* field = nullptr;
    for (const KnobField& f : Fields()) {
      if (kv[0] == f.name) field = &f;
    }
    if (field == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown schedule knob '", kv[0], "'"));
    int value = 0;
    if (kv.size() != 2 || !absl::SimpleAtoi(kv[1], &value) || value < field->min || value > field->max) {
      return absl::InvalidArgumentError(absl::StrCat("schedule knob '", kv[0], "' needs an integer in [", field->min,
                                                     ", ", field->max, "], got '", pair, "'"));
    }
    if (field->int_field) {
      *field->int_field(knobs) = value;
    } else {
      *field->bool_field(knobs) = value != 0;
    }
  }
  return knobs;
}

}  // namespace kiln::tir
