#include "support/file_io.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace kiln::support {
namespace {

TEST(FileIo, RoundTripsBinaryContents) {
  std::string path = ::testing::TempDir() + "/kiln_file_io_test.bin";
  std::string data("a\0b\xff", 4);
  ASSERT_TRUE(WriteFile(path, data).ok());
  absl::StatusOr<std::string> read = ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, data);
}

TEST(FileIo, MissingFileNamesThePath) {
  absl::StatusOr<std::string> read = ReadFile("/nonexistent/kiln/file.kir");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("/nonexistent/kiln/file.kir"), std::string::npos);
}

// A directory given where a file is expected (kiln compile DIR) is named as such, not read
// as an empty file.
TEST(FileIo, DirectoryIsAnErrorNotAnEmptyFile) {
  absl::StatusOr<std::string> read = ReadFile(::testing::TempDir());
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("is a directory, not a file"), std::string::npos) << read.status();
}

}  // namespace
}  // namespace kiln::support
