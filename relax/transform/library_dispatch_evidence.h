// Library dispatch by evidence: whether OpenBLAS's sgemm measured faster than Kiln's
// generated matmul kernel for a shape class on a kind of CPU, so dispatch_libraries hands a
// matmul to the library only where that was measured (issue 15), not above a fixed size.
//
// A shape class: the CPU's vector width (512-bit or narrower), the thread count, whether the
// rows m are few (a constant m <= 8: GEMV-like, bound by reading the weight) or many (more,
// or symbolic: a sequence length), and the weight's size k * n. The table
// (library_dispatch_evidence.cc) holds, per measured class, the speed of the generated
// kernel over OpenBLAS's (above 1: generated faster). A class that was not measured takes
// the nearest measured one: the same width (or the other), then the nearest thread count,
// rows class and weight size (by ratio). OpenBLAS is chosen where the generated kernel was
// clearly slower (below kLibraryWinsBelow): within measurement noise the generated kernel
// stays, since it fuses with its neighbours and the tuner can improve it.
//
// How the table was measured (docs/schedule.md, "Library dispatch by evidence"):
//   build/benchmarks/matmul_bench --sizes=MxKxN,... --threads=T
// the ratio "Kiln/Deb" (generated / Debian OpenBLAS GFLOP/s), median over m in {64, 300,
// 1024} (many rows) or {1, 7} (few rows); AVX2 classes with `--mcpu=haswell
// --openblas-core=Haswell` (AVX2 code against OpenBLAS's AVX2 kernels). tune/ may later feed
// measured records in.
#pragma once

#include <cstdint>

namespace kiln::relax {

// The generated kernel must measure below this fraction of the library's speed for the
// library to replace it.
inline constexpr double kLibraryWinsBelow = 0.9;

struct MatmulShapeClass {
  int vector_bits = 0;     // the target's widest vector (0: not known; taken as narrower than 512)
  int num_threads = 1;     // threads the kernels run on
  bool few_rows = false;   // m is a constant <= kFewRows
  int64_t weight = 0;      // k * n
};

inline constexpr int64_t kFewRows = 8;

// Generated / OpenBLAS speed for the class, from the nearest measured class.
double MeasuredGeneratedOverOpenBlas(const MatmulShapeClass& shape);

// Whether OpenBLAS measured clearly faster for the class (MeasuredGeneratedOverOpenBlas <
// kLibraryWinsBelow).
bool OpenBlasMeasuredFaster(const MatmulShapeClass& shape);

}  // namespace kiln::relax
