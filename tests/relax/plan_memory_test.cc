// PlanMemory: which alloc_tensors share storage, and how large the storages are; text in
// (call_tir code, lowered by LowerCallTir), text out.
#include "relax/transform/plan_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "relax/block_builder.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/transform/lower_call_tir.h"
#include "relax/transform/pipeline.h"
#include "relax/well_formed.h"

namespace kiln::relax {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The kernels the tests call, one per signature (a call_tir's tensors match its PrimFunc's
// buffers in rank and dtype): what they compute does not matter to planning, so the ones
// whose outputs differ in shape from their inputs only fill the output.
//   @k: 1-d copy; @k2: 1-d, two inputs; @m: 2-d float32 -> 2-d float32 of any shape;
//   @m2: two 2-d inputs; @m_to_half, @m_from_half: 2-d float32 <-> float16.
constexpr char kKernel[] = R"(
  prim_func @k(A: Buffer((m,), float32), B: Buffer((m,), float32)) {
    for i in serial(0, m) {
      B[i] = A[i]
    }
  }
  prim_func @k2(A: Buffer((m,), float32), B: Buffer((m,), float32), C: Buffer((m,), float32)) {
    for i in serial(0, m) {
      C[i] = A[i] + B[i]
    }
  }
  prim_func @m(A: Buffer((a0, a1), float32), B: Buffer((b0, b1), float32)) {
    for i in serial(0, b0) {
      for j in serial(0, b1) {
        B[i, j] = float32(0.0)
      }
    }
  }
  prim_func @m2(A: Buffer((a0, a1), float32), B: Buffer((b0, b1), float32), C: Buffer((c0, c1), float32)) {
    for i in serial(0, c0) {
      for j in serial(0, c1) {
        C[i, j] = float32(0.0)
      }
    }
  }
  prim_func @m_to_half(A: Buffer((a0, a1), float32), B: Buffer((b0, b1), float16)) {
    for i in serial(0, b0) {
      for j in serial(0, b1) {
        B[i, j] = cast(float16, float32(0.0))
      }
    }
  }
  prim_func @m_from_half(A: Buffer((a0, a1), float16), B: Buffer((b0, b1), float32)) {
    for i in serial(0, b0) {
      for j in serial(0, b1) {
        B[i, j] = float32(0.0)
      }
    }
  }
}
)";

IRModule Lowered(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseModule(text + kKernel, "test.kir");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return IRModule();
  absl::StatusOr<IRModule> m = NormalizeModule(parsed->module, &parsed->locations);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return IRModule();
  absl::StatusOr<IRModule> lowered = LowerCallTir(*m);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  return lowered.ok() ? *lowered : IRModule();
}

// The planned module's text; the result is well formed and survives a print/parse/normalize
// round trip unchanged (the new ops need nothing special in the text format).
std::string Planned(const std::string& text, PlanMemoryOptions options = {}) {
  IRModule lowered = Lowered(text);
  absl::StatusOr<IRModule> planned = PlanMemory(lowered, options);
  EXPECT_TRUE(planned.ok()) << planned.status();
  if (!planned.ok()) return "";
  absl::Status wf = CheckWellFormed(*planned);
  EXPECT_TRUE(wf.ok()) << wf;
  std::string printed = PrintModule(*planned);
  absl::StatusOr<ParsedModule> reparsed = ParseModule(printed, "planned.kir");
  EXPECT_TRUE(reparsed.ok()) << reparsed.status() << "\n" << printed;
  if (reparsed.ok()) {
    absl::StatusOr<IRModule> again = NormalizeModule(reparsed->module, &reparsed->locations);
    EXPECT_TRUE(again.ok()) << again.status();
    if (again.ok()) {
      EXPECT_EQ(PrintModule(*again), printed);
    }
  }
  return printed;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PlanMemoryTest, ChainReusesTheFirstTensorsStorageForTheThird) {
  std::string text = Planned(R"(module {
  func @main(x: Tensor((n, 64), float32)) -> Tensor((n, 64), float32) {
    dataflow {
      %a = R.call_tir(@m, (x,), out_sinfo=Tensor((n, 64), float32))
      %b = R.call_tir(@m, (%a,), out_sinfo=Tensor((n, 64), float32))
      %c = R.call_tir(@m, (%b,), out_sinfo=Tensor((n, 64), float32))
      %d = R.call_tir(@m, (%c,), out_sinfo=Tensor((n, 64), float32))
      e = R.call_tir(@m, (%d,), out_sinfo=Tensor((n, 64), float32))
    }
    return e
  }
)");
  // a and c share one storage, b and d another; e is returned and keeps its own allocation.
  EXPECT_THAT(text, HasSubstr(R"(%storage0: Object = R.alloc_storage(R.prim(256 * n))
      %a_out: Tensor((n, 64), float32) = R.storage_tensor(%storage0, R.prim(0), R.shape([n, 64]), dtype=float32))"));
  EXPECT_THAT(text, HasSubstr(R"(%storage1: Object = R.alloc_storage(R.prim(256 * n))
      %b_out: Tensor((n, 64), float32) = R.storage_tensor(%storage1, R.prim(0), R.shape([n, 64]), dtype=float32))"));
  EXPECT_THAT(text, HasSubstr("%c_out: Tensor((n, 64), float32) = R.storage_tensor(%storage0, R.prim(0)"));
  EXPECT_THAT(text, HasSubstr("%d_out: Tensor((n, 64), float32) = R.storage_tensor(%storage1, R.prim(0)"));
  EXPECT_THAT(text, HasSubstr("%e_out: Tensor((n, 64), float32) = R.alloc_tensor(R.shape([n, 64]), dtype=float32)"));
  EXPECT_EQ(Count(text, "R.alloc_storage("), 2) << text;
}

TEST(PlanMemoryTest, OverlappingLifetimesNeverShare) {
  // a and b are both live when c is computed; c is live while d is; nothing is free for
  // anything else, so no storage is made at all.
  std::string text = Planned(R"(module {
  func @main(x: Tensor((n,), float32)) -> Tuple(Tensor((n,), float32), Tensor((n,), float32)) {
    dataflow {
      %a = R.call_tir(@k, (x,), out_sinfo=Tensor((n,), float32))
      %b = R.call_tir(@k, (x,), out_sinfo=Tensor((n,), float32))
      %c = R.call_tir(@k2, (%a, %b), out_sinfo=Tensor((n,), float32))
      d = R.call_tir(@k, (%c,), out_sinfo=Tensor((n,), float32))
      t = (%c, d)
    }
    return t
  }
)");
  EXPECT_THAT(text, Not(HasSubstr("alloc_storage"))) << text;
  EXPECT_EQ(Count(text, "R.alloc_tensor("), 4) << text;
}

TEST(PlanMemoryTest, SymbolicSizesProvedEqualShareExactly) {
  // (n, 64) and (2, 32 * n) float32 and (n, 128) float16 are all n * 256 bytes.
  std::string text = Planned(R"(module {
  func @main(x: Tensor((n, 64), float32)) -> Tensor((n, 64), float32) {
    dataflow {
      %a = R.call_tir(@m, (x,), out_sinfo=Tensor((n, 64), float32))
      %b = R.call_tir(@m, (%a,), out_sinfo=Tensor((n, 64), float32))
      %c = R.call_tir(@m, (%b,), out_sinfo=Tensor((2, 32 * n), float32))
      %d = R.call_tir(@m_to_half, (%c,), out_sinfo=Tensor((n, 128), float16))
      e = R.call_tir(@m_from_half, (%d,), out_sinfo=Tensor((n, 64), float32))
    }
    return e
  }
)");
  EXPECT_EQ(Count(text, "R.alloc_storage(R.prim(256 * n))"), 2) << text;
  EXPECT_THAT(text, HasSubstr("%c_out: Tensor((2, 32 * n), float32) = R.storage_tensor(%storage0"));
  EXPECT_THAT(text, HasSubstr("%d_out: Tensor((n, 128), float16) = R.storage_tensor(%storage1"));
}

constexpr char kDifferentSizes[] = R"(module {
  func @main(x: Tensor((n, 64), float32)) -> Tensor((n, 64), float32) %s {
    dataflow {
      %%a = R.call_tir(@m, (x,), out_sinfo=Tensor((n, 64), float32))
      %%b = R.call_tir(@m, (%%a,), out_sinfo=Tensor((n, 64), float32))
      %%c = R.call_tir(@m, (%%b,), out_sinfo=Tensor((n, n), float32))
      %%d = R.call_tir(@m, (%%c,), out_sinfo=Tensor((n, 64), float32))
      e = R.call_tir(@m, (%%d,), out_sinfo=Tensor((n, 64), float32))
    }
    return e
  }
)";

std::string DifferentSizes(const char* where) {
  char buf[1024];
  std::snprintf(buf, sizeof(buf), kDifferentSizes, where);
  return buf;
}

TEST(PlanMemoryTest, ALargerTensorGetsMemoryOfItsOwnUnlessStoragesAreSizedAhead) {
  // c (n * n * 4 bytes) does not fit a's free storage (n * 256 bytes): grown, that storage
  // would hold c's bytes from a's allocation on, so c gets memory of its own, allocated when
  // c is, and d takes a's storage. With size_at_upper_bound (storages allocated ahead at
  // their bounds) c grows a's storage instead, to the constant 4 * 128 * 128.
  std::string text = Planned(DifferentSizes("where n <= 128"));
  EXPECT_THAT(text, HasSubstr("%c_out: Tensor((n, n), float32) = R.alloc_tensor(R.shape([n, n])")) << text;
  EXPECT_THAT(text, HasSubstr("%storage0: Object = R.alloc_storage(R.prim(256 * n))")) << text;
  EXPECT_THAT(text, HasSubstr("%d_out: Tensor((n, 64), float32) = R.storage_tensor(%storage0")) << text;
  EXPECT_EQ(Count(text, "R.alloc_storage("), 1) << text;

  std::string bounded = Planned(DifferentSizes("where n <= 128"), {.size_at_upper_bound = true});
  EXPECT_THAT(bounded, HasSubstr("%c_out: Tensor((n, n), float32) = R.storage_tensor(%storage0")) << bounded;
  EXPECT_THAT(bounded, HasSubstr("%storage0: Object = R.alloc_storage(R.prim(65536))")) << bounded;
  EXPECT_THAT(bounded, HasSubstr("%storage1: Object = R.alloc_storage(R.prim(32768))")) << bounded;
}

TEST(PlanMemoryTest, StoragesSizedAheadWithoutABoundGrowToTheirRunTimeMaximum) {
  // Without a bound the maximum is computed at run time, so sharing stays safe; the static
  // option has nothing to size at and keeps the symbolic size.
  std::string text = Planned(DifferentSizes(""));
  EXPECT_THAT(text, HasSubstr("%c_out: Tensor((n, n), float32) = R.alloc_tensor(R.shape([n, n])")) << text;
  std::string bounded = Planned(DifferentSizes(""), {.size_at_upper_bound = true});
  EXPECT_THAT(bounded, HasSubstr("%c_out: Tensor((n, n), float32) = R.storage_tensor(%storage0")) << bounded;
  EXPECT_THAT(bounded, HasSubstr("%storage0: Object = R.alloc_storage(R.prim(max(")) << bounded;
  EXPECT_EQ(Count(bounded, "R.alloc_storage("), 2) << bounded;
}

TEST(PlanMemoryTest, EscapingTensorsAreNotPlanned) {
  // b is returned inside a tuple; r is a view of c that is returned; both keep their
  // alloc_tensor, and so a, whose only free storage candidates escape, stays alone too.
  std::string text = Planned(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tuple(Tensor((n, 4), float32), Tensor((4, n), float32)) {
    dataflow {
      %a = R.call_tir(@m, (x,), out_sinfo=Tensor((n, 4), float32))
      %b = R.call_tir(@m, (%a,), out_sinfo=Tensor((n, 4), float32))
      %c = R.call_tir(@m, (%b,), out_sinfo=Tensor((n, 4), float32))
      %r = R.reshape(%c, R.shape([4, n]))
      t = (%b, %r)
    }
    return t
  }
)");
  EXPECT_THAT(text, Not(HasSubstr("alloc_storage"))) << text;
  EXPECT_EQ(Count(text, "R.alloc_tensor("), 3) << text;
}

TEST(PlanMemoryTest, UsesThroughViewsAndTuplesExtendLifetimes) {
  // a is read again through the view %v after b and c are computed, so c cannot reuse a's
  // storage; d can (a's last use, through %v, is before d's allocation), and w takes b's.
  std::string text = Planned(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    dataflow {
      %a = R.call_tir(@m, (x,), out_sinfo=Tensor((n, 4), float32))
      %v = R.reshape(%a, R.shape([4, n]))
      %b = R.call_tir(@m, (x,), out_sinfo=Tensor((n, 4), float32))
      %c = R.call_tir(@m, (%b,), out_sinfo=Tensor((n, 4), float32))
      %w = R.call_tir(@m2, (%v, %c), out_sinfo=Tensor((n, 4), float32))
      %d = R.call_tir(@m, (%w,), out_sinfo=Tensor((n, 4), float32))
      e = R.call_tir(@m, (%d,), out_sinfo=Tensor((n, 4), float32))
    }
    return e
  }
)");
  EXPECT_THAT(text, HasSubstr("%a_out: Tensor((n, 4), float32) = R.storage_tensor(%storage0"));
  EXPECT_THAT(text, HasSubstr("%d_out: Tensor((n, 4), float32) = R.storage_tensor(%storage0"));
  EXPECT_THAT(text, HasSubstr("%b_out: Tensor((n, 4), float32) = R.storage_tensor(%storage1"));
  EXPECT_THAT(text, HasSubstr("%w_out: Tensor((n, 4), float32) = R.storage_tensor(%storage1"));
  EXPECT_THAT(text, HasSubstr("%c_out: Tensor((n, 4), float32) = R.alloc_tensor(")) << text;
}

TEST(PlanMemoryTest, SizesWithVariablesNotBoundByParametersAreNotPlanned) {
  // m is bound by a match_cast in the body, after where a storage would have to be sized.
  std::string text = Planned(R"(module {
  func @main(x: Tensor(ndim=1, float32)) -> Tensor(ndim=1, float32) {
    dataflow {
      %y = match_cast(x, Tensor((m,), float32))
      %a = R.call_tir(@k, (%y,), out_sinfo=Tensor((m,), float32))
      %b = R.call_tir(@k, (%a,), out_sinfo=Tensor((m,), float32))
      %c = R.call_tir(@k, (%b,), out_sinfo=Tensor((m,), float32))
      e = R.call_tir(@k, (%c,), out_sinfo=Tensor((m,), float32))
    }
    return e
  }
)");
  EXPECT_THAT(text, Not(HasSubstr("alloc_storage"))) << text;
}

TEST(PlanMemoryTest, StorageSharedAcrossBlocksIsAVar) {
  std::string text = Planned(R"(module {
  func @main(x: Tensor((8,), float32)) -> Tensor((8,), float32) {
    dataflow {
      %a = R.call_tir(@k, (x,), out_sinfo=Tensor((8,), float32))
      b = R.call_tir(@k, (%a,), out_sinfo=Tensor((8,), float32))
    }
    c = R.call_tir(@k, (b,), out_sinfo=Tensor((8,), float32))
    d = R.call_tir(@k, (c,), out_sinfo=Tensor((8,), float32))
    return d
  }
)");
  EXPECT_THAT(text, HasSubstr("storage0: Object = R.alloc_storage(R.prim(32))")) << text;
  EXPECT_THAT(text, Not(HasSubstr("%storage0"))) << text;
  EXPECT_THAT(text, HasSubstr("c_out: Tensor((8,), float32) = R.storage_tensor(storage0, R.prim(0)")) << text;
}

TEST(PlanMemoryTest, NewOpsCheckTheirArguments) {
  absl::StatusOr<ParsedModule> parsed = ParseModule(R"(module {
  func @main(x: Tensor((8,), float32)) -> Tensor((8,), float32) {
    s = R.alloc_storage(R.prim(float32(1.5)))
    return x
  }
})", "bad.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<IRModule> m = NormalizeModule(parsed->module, &parsed->locations);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("alloc_storage: argument 'size' must be an integer Prim"));

  parsed = ParseModule(R"(module {
  func @main(x: Tensor((8,), float32)) -> Tensor((8,), float32) {
    t = R.storage_tensor(x, R.prim(0), R.shape([8]), dtype=float32)
    return t
  }
})", "bad.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  m = NormalizeModule(parsed->module, &parsed->locations);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("storage_tensor: argument 'storage' must be an Object"));
}

TEST(PlanMemoryTest, PipelineRunsItAfterLowerCallTirAndCanTurnItOff) {
  std::vector<std::string> names = PipelinePassNames();
  auto lower = std::find(names.begin(), names.end(), "lower_call_tir");
  ASSERT_NE(lower, names.end());
  ASSERT_NE(lower + 1, names.end());
  EXPECT_EQ(*(lower + 1), "plan_memory");

  const std::string text = R"(module {
  func @main(x: Tensor((n,), float32)) -> Tensor((n,), float32) {
    dataflow {
      %a = R.call_tir(@k, (x,), out_sinfo=Tensor((n,), float32))
      %b = R.call_tir(@k, (%a,), out_sinfo=Tensor((n,), float32))
      %c = R.call_tir(@k, (%b,), out_sinfo=Tensor((n,), float32))
      d = R.call_tir(@k, (%c,), out_sinfo=Tensor((n,), float32))
    }
    return d
  }
)";
  absl::StatusOr<ParsedModule> parsed = ParseModule(text + kKernel, "test.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  PipelineOptions options;
  options.check_well_formed = true;
  absl::StatusOr<IRModule> on = RunPipeline(parsed->module, options, &parsed->locations);
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_THAT(PrintModule(*on), HasSubstr("R.alloc_storage("));
  options.plan_memory = false;
  absl::StatusOr<IRModule> off = RunPipeline(parsed->module, options, &parsed->locations);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_THAT(PrintModule(*off), Not(HasSubstr("R.alloc_storage(")));
}

}  // namespace
}  // namespace kiln::relax
