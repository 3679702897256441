#include "support/file_format.h"

#include <string>

#include "gtest/gtest.h"

namespace kiln::support {
namespace {

TEST(FileFormatName, NamesFormatsBySignature) {
  EXPECT_EQ(FileFormatName(std::string("KILNEXE\0\x02\0\x02\0", 12)), "a Kiln executable (.kx)");
  EXPECT_EQ(FileFormatName("GGUF\x03\0\0\0"), "a GGUF model (.gguf)");
  EXPECT_EQ(FileFormatName("\x93NUMPY\x01\0v\0{'descr'"), "a NumPy array (.npy)");
  EXPECT_EQ(FileFormatName("PK\x03\x04\x14\0"), "a zip archive (e.g. a PyTorch .pt checkpoint)");
  EXPECT_EQ(FileFormatName("\x7f" "ELF\x02\x01"), "an ELF binary");
  EXPECT_EQ(FileFormatName(std::string("\x40\0\0\0\0\0\0\0{\"w\": {}}", 18)), "a safetensors file");
}

TEST(FileFormatName, UnknownOrShortHeadsAreEmpty) {
  EXPECT_EQ(FileFormatName(""), "");
  EXPECT_EQ(FileFormatName("GGU"), "");                    // a prefix of a signature is not it
  EXPECT_EQ(FileFormatName("module {\n}\n"), "");          // IR text has no signature
  EXPECT_EQ(FileFormatName(std::string("KILNEXE", 7)), "");
}

}  // namespace
}  // namespace kiln::support
