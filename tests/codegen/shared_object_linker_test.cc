#include "codegen/shared_object_linker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

#include "support/check.h"

#include "codegen/cpu_shared_object.h"
#include "tir/stmt.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;

// Points TMPDIR (or KILN_LINKER, PATH) somewhere else, or unsets it (nullopt), for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (saved_) {
      ::setenv(name_, saved_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

std::string FreshDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-linker-test-XXXXXX").string();
  KILN_CHECK(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

bool IsEmptyDir(const std::string& dir) { return std::filesystem::is_empty(dir); }

TEST(SharedObjectLinkerTest, MissingLinkerIsAClearError) {
  ScopedEnv linker("KILN_LINKER", "kiln-no-such-linker");
  absl::StatusOr<std::string> so = LinkSharedObject("whatever");
  ASSERT_FALSE(so.ok());
  EXPECT_EQ(so.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(so.status().message(), HasSubstr("'kiln-no-such-linker' is not on PATH"));
}

TEST(SharedObjectLinkerTest, BadObjectReportsTheLinkerOutputAndCleansUp) {
  std::string dir = FreshDir();
  {
    ScopedEnv tmp("TMPDIR", dir);
    absl::StatusOr<std::string> so = LinkSharedObject("this is not an object file");
    ASSERT_FALSE(so.ok());
    EXPECT_THAT(so.status().message(), HasSubstr("linking CPU kernels failed"));
    EXPECT_THAT(so.status().message(), HasSubstr("kernels.o"));
  }
  EXPECT_TRUE(IsEmptyDir(dir));
  std::filesystem::remove_all(dir);
}

TEST(SharedObjectLinkerTest, BuildsAnElfSharedObjectAndCleansUp) {
  std::string dir = FreshDir();
  {
    ScopedEnv tmp("TMPDIR", dir);
    tir::Buffer a("A", tir::DataType::Float32(), {4});
    tir::Var i("i");
    tir::Stmt body = tir::For(i, 0, 4, tir::ForKind::kSerial,
                              tir::BufferStore(a, tir::FloatImm(tir::DataType::Float32(), 1.0), {i}));
    absl::StatusOr<std::string> so =
        BuildCpuSharedObject({{"ones", tir::PrimFunc({tir::PrimFuncParam{a, tir::Var()}}, body)}}, CpuTarget::Host());
    ASSERT_TRUE(so.ok()) << so.status();
    ASSERT_GE(so->size(), 64u);
    EXPECT_EQ(so->substr(0, 4), "\x7f" "ELF");
    EXPECT_EQ((*so)[16], 3) << "e_type ET_DYN";
  }
  EXPECT_TRUE(IsEmptyDir(dir));
  std::filesystem::remove_all(dir);
}

// `kiln serve` started with no PATH (env -i, some service managers) found `cc` by the default
// search path, but the gcc driver then could not find `ld` through PATH; the linker now gets the
// system's standard PATH when ours has none.
TEST(SharedObjectLinkerTest, LinksWithPathUnsetOrEmpty) {
  for (std::optional<std::string> path : {std::optional<std::string>(), std::optional<std::string>("")}) {
    SCOPED_TRACE(path ? "PATH empty" : "PATH unset");
    ScopedEnv linker("KILN_LINKER", path ? std::string(std::filesystem::exists("/usr/bin/cc") ? "/usr/bin/cc" : "/bin/cc")
                                         : std::string("cc"));
    ScopedEnv no_path("PATH", path);
    tir::Buffer a("A", tir::DataType::Float32(), {4});
    tir::Var i("i");
    tir::Stmt body = tir::For(i, 0, 4, tir::ForKind::kSerial,
                              tir::BufferStore(a, tir::FloatImm(tir::DataType::Float32(), 1.0), {i}));
    absl::StatusOr<std::string> so =
        BuildCpuSharedObject({{"ones", tir::PrimFunc({tir::PrimFuncParam{a, tir::Var()}}, body)}}, CpuTarget::Host());
    ASSERT_TRUE(so.ok()) << so.status();
    EXPECT_EQ(so->substr(0, 4), "\x7f" "ELF");
  }
}

}  // namespace
}  // namespace kiln::codegen
