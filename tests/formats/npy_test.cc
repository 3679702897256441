// .npy reading and writing, against files laid out by hand from NumPy's format description.
#include "formats/npy.h"

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/file_io.h"

namespace kiln::formats {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// A version 1.0 file: magic, version, u16 header length, the dict padded with spaces and a
// newline to a multiple of 64 bytes, then the data.
std::string NpyFile(const std::string& dict, const std::string& data) {
  std::string header = dict;
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + data;
}

std::string Write(const std::string& name, const std::string& bytes) {
  std::string path = ::testing::TempDir() + "/" + name;
  EXPECT_TRUE(support::WriteFile(path, bytes).ok());
  return path;
}

TEST(Npy, MapsTheDataWithoutCopying) {
  std::string data("\xff\x01\x80\x7f\x00\x02", 6);
  std::string path = Write("npy_int8.npy", NpyFile("{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }", data));
  absl::StatusOr<NpyArray> a = ReadNpy(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->type.kind, 'i');
  EXPECT_EQ(a->type.bytes, 1);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->nbytes, 6u);
  EXPECT_TRUE(a->file->is_mapped());
  EXPECT_TRUE(a->file->Contains(a->data, 6));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % 64, 0u);
  EXPECT_EQ(std::string(a->data, 6), data);
}

TEST(Npy, ScalarsBoolAndHalf) {
  absl::StatusOr<NpyArray> scalar = ReadNpy(Write("npy_scalar.npy", NpyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", std::string(8, '\0'))));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_TRUE(scalar->shape.empty());
  absl::StatusOr<NpyArray> b = ReadNpy(Write("npy_bool.npy", NpyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x01\x00\x01", 3))));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->type.kind, 'b');
  absl::StatusOr<NpyArray> h = ReadNpy(Write("npy_half.npy", NpyFile("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", std::string("\x00\x3c\x00\xc1", 4))));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->type.kind, 'f');
  EXPECT_EQ(h->type.bytes, 2);
}

TEST(Npy, AHugeClaimedShapeNamesTheFileTheShapeAndBothSizes) {
  std::string path = Write("npy_huge.npy", NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000, 100000), }",
                                                     std::string(16, '\0')));
  absl::StatusOr<NpyArray> a = ReadNpy(path);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()),
              AllOf(HasSubstr(path), HasSubstr("shape (100000, 100000, 100000) of float32 = 4000000000000000 bytes"),
                    HasSubstr("the file holds 16 bytes of data after its 128-byte header (144 bytes in all)")));
  absl::StatusOr<NpyArray> overflow = ReadNpy(Write("npy_overflow.npy", NpyFile(
      "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", "")));
  ASSERT_FALSE(overflow.ok());
  EXPECT_THAT(std::string(overflow.status().message()), HasSubstr("too large to address"));
}

TEST(Npy, MalformedFilesSayWhy) {
  auto error = [](const std::string& name, const std::string& bytes) {
    absl::StatusOr<NpyArray> a = ReadNpy(Write(name, bytes));
    return a.ok() ? std::string("accepted") : std::string(a.status().message());
  };
  EXPECT_THAT(error("bad_magic.npy", "PK\x03\x04 a zip file"), HasSubstr("bad magic"));
  EXPECT_THAT(error("short.npy", "\x93NUMPY\x01"), HasSubstr("truncated"));
  std::string full = NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0'));
  EXPECT_THAT(error("cut_header.npy", full.substr(0, 40)), HasSubstr("truncated: the header should end at byte 128, but the file is 40 bytes"));
  EXPECT_THAT(error("cut_data.npy", full.substr(0, 132)), HasSubstr("= 8 bytes, but the file holds 4 bytes"));
  EXPECT_THAT(error("big_endian.npy", NpyFile("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "abcd")),
              HasSubstr("unsupported dtype '>f4'"));
  EXPECT_THAT(error("fortran.npy", NpyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", "abcd")),
              HasSubstr("Fortran-order"));
  EXPECT_THAT(error("fortran_text.npy", NpyFile("{'descr': '<f4', 'fortran_order': 'False', 'shape': (1,), }", "abcd")),
              HasSubstr("'fortran_order' must be True or False, got 'False'"));
  EXPECT_THAT(error("no_shape.npy", NpyFile("{'descr': '<f4', 'fortran_order': False, }", "abcd")), HasSubstr("no 'shape'"));
  EXPECT_THAT(error("neg.npy", NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "abcd")), HasSubstr("bad shape"));
  EXPECT_THAT(error("struct.npy", NpyFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "abcd")),
              HasSubstr("not a type string"));
  // NumPy would read the last 'descr' (int32) and 'shape'; refused rather than read differently.
  EXPECT_THAT(error("two_descr.npy", NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'descr': '<i4', }", "abcd")),
              HasSubstr("names 'descr' twice"));
  EXPECT_THAT(error("two_shape.npy", NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (2,), }", "abcdefgh")),
              HasSubstr("names 'shape' twice"));
  EXPECT_THAT(error("v9.npy", std::string("\x93NUMPY\x09\x00\x00\x00", 10)), HasSubstr("format version 9"));
}

TEST(Npy, WritesWhatItReads) {
  const float values[] = {1.5f, -2.0f, 0.25f, 8.0f, 3.0f, -1.0f};
  std::string path = ::testing::TempDir() + "/npy_roundtrip.npy";
  ASSERT_TRUE(WriteNpy(path, {'f', 4}, {3, 2}, values, sizeof(values)).ok());
  absl::StatusOr<std::string> bytes = support::ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }",
                            std::string(reinterpret_cast<const char*>(values), sizeof(values))));
  absl::StatusOr<NpyArray> a = ReadNpy(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(std::memcmp(a->data, values, sizeof(values)), 0);
  EXPECT_FALSE(WriteNpy(path, {'f', 4}, {4}, values, sizeof(values)).ok());  // size disagrees with shape
  EXPECT_FALSE(WriteNpy(path, {'q', 4}, {6}, values, sizeof(values)).ok());
  ASSERT_TRUE(WriteNpy(path, {'i', 1}, {5}, "abcde", 5).ok());
  ASSERT_TRUE(support::ReadFile(path).ok());
  EXPECT_NE(support::ReadFile(path)->find("'descr': '|i1'"), std::string::npos);
  EXPECT_NE(support::ReadFile(path)->find("'shape': (5,)"), std::string::npos);
}

TEST(Npy, UnicodeStringsAndObjectArrays) {
  // np.array(["ab", "c"]) is '<U2': two UTF-32 code units per element, NUL-padded.
  const std::string data("a\0\0\0b\0\0\0c\0\0\0\0\0\0\0", 16);
  absl::StatusOr<NpyArray> a = ReadNpy(Write("u2.npy", NpyFile("{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }", data)));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->type.kind, 'U');
  EXPECT_EQ(a->type.bytes, 8);
  EXPECT_EQ(a->nbytes, 16u);
  std::string path = ::testing::TempDir() + "/u2_written.npy";
  ASSERT_TRUE(WriteNpy(path, {'U', 8}, {2}, data.data(), data.size()).ok());
  EXPECT_NE(support::ReadFile(path)->find("'descr': '<U2'"), std::string::npos);
  // Wrong sizes and pickled objects say why.
  absl::StatusOr<NpyArray> cut = ReadNpy(Write("u2_cut.npy", NpyFile("{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }", data.substr(0, 12))));
  EXPECT_THAT(std::string(cut.status().message()), HasSubstr("shape (2,) of str2 = 16 bytes, but the file holds 12"));
  absl::StatusOr<NpyArray> u0 = ReadNpy(Write("u0.npy", NpyFile("{'descr': '<U0', 'fortran_order': False, 'shape': (2,), }", "")));
  EXPECT_THAT(std::string(u0.status().message()), HasSubstr("unsupported dtype '<U0'"));
  absl::StatusOr<NpyArray> o = ReadNpy(Write("object.npy", NpyFile("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "12345678")));
  EXPECT_THAT(std::string(o.status().message()), HasSubstr("dtype 'O' (an object array"));
}

}  // namespace
}  // namespace kiln::formats
