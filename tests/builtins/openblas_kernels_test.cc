// kiln.openblas.sgemm against a naive triple loop written here (the independent reference).
#include <cstdint>
#include <string>
#include <vector>

#include "builtins/default_builtins.h"
#include "gtest/gtest.h"

namespace kiln::builtins {
namespace {

struct Ctx : KilnCallContext {
  std::string error;
};

void SetError(KilnCallContext* ctx, const char* message) { static_cast<Ctx*>(ctx)->error = message; }

struct Host {
  std::vector<float> data;
  std::vector<int64_t> shape;
  DLTensor t{};
  Host(std::vector<int64_t> s, DLDataType dtype = {kDLFloat, 32, 1}) : shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    data.resize(n);
    for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>((i * 7 + 3) % 11) - 5.0f;
    t.data = data.data();
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
  }
};

int32_t Call(Host& a, Host& b, Host& out, std::string* error) {
  const vm::BuiltinRegistry::LibraryKernel* k = DefaultRegistry().FindKernel("kiln.openblas.sgemm");
  EXPECT_NE(k, nullptr);
  EXPECT_EQ(k->arg_signature, "ttt");
  Ctx ctx{};
  ctx.set_error = SetError;
  ctx.num_threads = 1;
  KilnArg args[3];
  Host* hosts[3] = {&a, &b, &out};
  for (int i = 0; i < 3; ++i) {
    args[i].value.tensor = &hosts[i]->t;
    args[i].type_code = kKilnArgTensor;
  }
  int32_t rc = k->fn(args, 3, &ctx);
  *error = ctx.error;
  return rc;
}

void ExpectMatmul(int64_t batch, int64_t m, int64_t k, int64_t n, bool batched) {
  std::vector<int64_t> pre = batched ? std::vector<int64_t>{batch} : std::vector<int64_t>{};
  auto dims = [&](int64_t x, int64_t y) {
    std::vector<int64_t> d = pre;
    d.push_back(x);
    d.push_back(y);
    return d;
  };
  Host a(dims(m, k)), b(dims(k, n)), out(dims(m, n));
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = static_cast<float>(i % 5) * 0.5f - 1.0f;
  std::string error;
  ASSERT_EQ(Call(a, b, out, &error), 0) << error;
  for (int64_t p = 0; p < (batched ? batch : 1); ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t r = 0; r < k; ++r) want += double(a.data[(p * m + i) * k + r]) * b.data[(p * k + r) * n + j];
        ASSERT_NEAR(out.data[(p * m + i) * n + j], want, 1e-3) << p << " " << i << " " << j;
      }
    }
  }
}

TEST(OpenBlasKernels, Sgemm2d) {
  ExpectMatmul(1, 1, 1, 1, false);
  ExpectMatmul(1, 7, 13, 5, false);
  ExpectMatmul(1, 300, 64, 33, false);
}

TEST(OpenBlasKernels, Sgemm3d) { ExpectMatmul(3, 5, 9, 4, true); }

TEST(OpenBlasKernels, RejectsBadShapesAndDtypes) {
  std::string error;
  Host a({2, 3}), b({4, 5}), out({2, 5});
  EXPECT_NE(Call(a, b, out, &error), 0);
  EXPECT_NE(error.find("shapes do not match"), std::string::npos) << error;
  Host a2({2, 3}), b2({3, 5}), out2({2, 5}, {kDLFloat, 64, 1});
  EXPECT_NE(Call(a2, b2, out2, &error), 0);
  EXPECT_NE(error.find("float32"), std::string::npos) << error;
  Host a3({2}), b3({2}), out3({1});
  EXPECT_NE(Call(a3, b3, out3, &error), 0);
  EXPECT_NE(error.find("2-D or 3-D"), std::string::npos) << error;
}

}  // namespace
}  // namespace kiln::builtins
