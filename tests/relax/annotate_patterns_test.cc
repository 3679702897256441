// AnnotatePatterns: the op_pattern of hand-written PrimFuncs, from their TIR.
#include "relax/transform/annotate_patterns.h"

#include <gtest/gtest.h>

#include <string>

#include "relax/text_parser.h"
#include "relax/text_printer.h"

namespace kiln::relax {
namespace {

constexpr char kModule[] = R"(module {
  prim_func @ewise(A: Buffer((n, 4), float32), B: Buffer((n, 4), float32), C: Buffer((n, 4), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        block "C" {
          vi = spatial(n, i)
          vj = spatial(4, j)
          C[vi, vj] = exp(A[vi, vj]) + B[vi, vj]
        }
      }
    }
  }
  prim_func @bias(A: Buffer((n, 4), float32), B: Buffer((4,), float32), C: Buffer((n, 4), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        block "C" {
          vi = spatial(n, i)
          vj = spatial(4, j)
          C[vi, vj] = A[vi, vj] + B[vj]
        }
      }
    }
  }
  prim_func @column(A: Buffer((n, 4), float32), B: Buffer((n, 1), float32), C: Buffer((n, 4), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        block "C" {
          vi = spatial(n, i)
          vj = spatial(4, j)
          C[vi, vj] = A[vi, vj] * B[vi, 0]
        }
      }
    }
  }
  prim_func @transpose(A: Buffer((4, n), float32), C: Buffer((n, 4), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        block "T" {
          vi = spatial(n, i)
          vj = spatial(4, j)
          C[vi, vj] = A[vj, vi]
        }
      }
    }
  }
  prim_func @shift(A: Buffer((n + 1,), float32), C: Buffer((n,), float32)) {
    for i in serial(0, n) {
      block "S" {
        vi = spatial(n, i)
        C[vi] = A[vi + 1]
      }
    }
  }
  prim_func @gather(A: Buffer((8,), float32), I: Buffer((n,), int64), C: Buffer((n,), float32)) {
    for i in serial(0, n) {
      block "G" {
        vi = spatial(n, i)
        C[vi] = A[I[vi]]
      }
    }
  }
  prim_func @mm(A: Buffer((n, 8), float32), B: Buffer((8, 4), float32), C: Buffer((n, 4), float32)) {
    for i in serial(0, n) {
      for j in serial(0, 4) {
        for k in serial(0, 8) {
          block "mm" {
            vi = spatial(n, i)
            vj = spatial(4, j)
            vk = reduce(8, k)
            init {
              C[vi, vj] = 0.0
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
  prim_func @rowmax(A: Buffer((n, 8), float32), C: Buffer((n,), float32)) {
    for i in serial(0, n) {
      for k in serial(0, 8) {
        block "max" {
          vi = spatial(n, i)
          vk = reduce(8, k)
          init {
            C[vi] = 0.0
          }
          C[vi] = max(C[vi], A[vi, vk])
        }
      }
    }
  }
  prim_func @two_blocks(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
    allocate T: Buffer((n,), float32) {
      for i in serial(0, n) {
        block "T" {
          vi = spatial(n, i)
          T[vi] = A[vi] * 2.0
        }
      }
      for i2 in serial(0, n) {
        block "C" {
          vi = spatial(n, i2)
          C[vi] = T[vi] + 1.0
        }
      }
    }
  }
  prim_func @loose_store(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
    for i in serial(0, n) {
      C[i] = A[i]
    }
  }
  prim_func @scatter(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
    for i in serial(0, n) {
      block "R" {
        vi = spatial(n, i)
        C[n - 1 - vi] = A[vi]
      }
    }
  }
  prim_func @labelled(A: Buffer((n,), float32), C: Buffer((n,), float32)) {
    attr op_pattern = "opaque"
    for i in serial(0, n) {
      block "C" {
        vi = spatial(n, i)
        C[vi] = A[vi]
      }
    }
  }
})";

TEST(AnnotatePatternsTest, ClassifiesHandWrittenPrimFuncs) {
  absl::StatusOr<ParsedModule> parsed = ParseModule(kModule, "patterns.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<IRModule> annotated = AnnotatePatterns(parsed->module);
  ASSERT_TRUE(annotated.ok()) << annotated.status();
  auto pattern = [&](const std::string& name) -> std::string {
    const IRModule::Entry* e = annotated->Find(name);
    if (e == nullptr || e->prim_func() == nullptr) return "<missing>";
    auto it = (*e->prim_func())->attrs.find("op_pattern");
    return it == (*e->prim_func())->attrs.end() ? "<none>" : it->second;
  };
  EXPECT_EQ(pattern("ewise"), "elementwise");
  EXPECT_EQ(pattern("bias"), "broadcast");
  EXPECT_EQ(pattern("column"), "broadcast");
  EXPECT_EQ(pattern("transpose"), "injective");
  EXPECT_EQ(pattern("shift"), "injective");
  EXPECT_EQ(pattern("gather"), "opaque");
  EXPECT_EQ(pattern("mm"), "out_ewise_fusable");
  EXPECT_EQ(pattern("rowmax"), "comm_reduce");
  EXPECT_EQ(pattern("two_blocks"), "opaque");
  EXPECT_EQ(pattern("loose_store"), "opaque");
  EXPECT_EQ(pattern("scatter"), "opaque");
  // An existing attribute is kept, even where the analysis would say otherwise.
  EXPECT_EQ(pattern("labelled"), "opaque");
  EXPECT_EQ(AnalyzeOpPattern(*parsed->module.Find("labelled")->prim_func()), "elementwise");
  // The bodies are untouched, and the printed attribute parses back.
  EXPECT_TRUE((*annotated->Find("mm")->prim_func())->body.same_as((*parsed->module.Find("mm")->prim_func())->body));
  std::string text = PrintModule(*annotated);
  EXPECT_NE(text.find("attr op_pattern = \"out_ewise_fusable\""), std::string::npos) << text;
  EXPECT_TRUE(ParseModule(text, "again.kir").ok());
}

TEST(AnnotatePatternsTest, KeepsLegalizedPatternsAndRelaxFunctions) {
  absl::StatusOr<ParsedModule> parsed = ParseModule(R"(module {
  func @main(x: Tensor((n, 4), float32)) -> Tensor((n, 4), float32) {
    y = R.call_tir(@k, (x,), out_sinfo=Tensor((n, 4), float32))
    return y
  }
  prim_func @k(A: Buffer((n, 4), float32), B: Buffer((n, 4), float32)) {
    attr op_pattern = "reduce"
    for i in serial(0, n) {
      for j in serial(0, 4) {
        block "B" {
          vi = spatial(n, i)
          vj = spatial(4, j)
          B[vi, vj] = A[vi, vj]
        }
      }
    }
  }
})", "keep.kir");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<IRModule> annotated = AnnotatePatterns(parsed->module);
  ASSERT_TRUE(annotated.ok()) << annotated.status();
  EXPECT_EQ(PrintModule(*annotated), PrintModule(parsed->module));
}

}  // namespace
}  // namespace kiln::relax
