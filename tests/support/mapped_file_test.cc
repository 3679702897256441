#include "support/mapped_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>

#include "gtest/gtest.h"
#include "support/file_io.h"

namespace kiln::support {
namespace {

bool Aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(MappedFile, MapsTheFileReadOnly) {
  std::string path = ::testing::TempDir() + "/kiln_mapped_file_test.bin";
  std::string data(10000, 'x');
  data[9999] = 'y';
  ASSERT_TRUE(WriteFile(path, data).ok());
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE((*file)->is_mapped());
  EXPECT_EQ((*file)->view(), data);
  EXPECT_EQ((*file)->name(), path);
  EXPECT_TRUE(Aligned64((*file)->data()));
  EXPECT_TRUE((*file)->Contains((*file)->data() + 9999));
  EXPECT_FALSE((*file)->Contains((*file)->data() + 9999, 2));
  EXPECT_FALSE((*file)->Contains((*file)->data() + 10000));
}

TEST(MappedFile, ReplacingTheFileLeavesTheMappingIntact) {
  // support::WriteFile renames a new file over the old one: a server that has the old
  // executable mapped keeps reading the old bytes instead of faulting.
  std::string path = ::testing::TempDir() + "/kiln_mapped_file_replace.bin";
  ASSERT_TRUE(WriteFile(path, std::string(8192, 'a')).ok());
  absl::StatusOr<std::shared_ptr<const MappedFile>> old = MappedFile::Open(path);
  ASSERT_TRUE(old.ok()) << old.status();
  ASSERT_TRUE(WriteFile(path, "short").ok());
  EXPECT_EQ((*old)->view(), std::string(8192, 'a'));
  absl::StatusOr<std::string> now = ReadFile(path);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(*now, "short");
}

TEST(MappedFile, EmptyFileAndMissingFile) {
  std::string path = ::testing::TempDir() + "/kiln_mapped_file_empty.bin";
  ASSERT_TRUE(WriteFile(path, "").ok());
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->size(), 0u);
  absl::StatusOr<std::shared_ptr<const MappedFile>> missing = MappedFile::Open("/nonexistent/kiln.kx");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/kiln.kx"), std::string::npos);
  absl::StatusOr<std::shared_ptr<const MappedFile>> dir = MappedFile::Open(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("not a regular file"), std::string::npos);
}

TEST(MappedFile, FifoIsRefusedWithoutWaitingForAWriter) {
  // `kiln run <(cat model.kx)`, `kiln generate <(cat model.gguf)` or a mkfifo path: opening a
  // FIFO for reading used to wait for a writer, forever when none comes. Executables, GGUF
  // models and .npy inputs are all opened here, so this is the one test of it.
  std::string path = ::testing::TempDir() + "/kiln_mapped_file_test.fifo";
  ::unlink(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto opened = std::async(std::launch::async, [&] { return MappedFile::Open(path); });
  if (opened.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    ADD_FAILURE() << "MappedFile::Open waited for a writer of a FIFO";
    int writer = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);  // lets the waiting open return
    opened.wait();
    if (writer >= 0) ::close(writer);
  }
  absl::StatusOr<std::shared_ptr<const MappedFile>> file = opened.get();
  ::unlink(path.c_str());
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("not a regular file"), std::string::npos) << file.status();
}

TEST(MappedFile, BytesInMemoryAreHeldAligned) {
  for (size_t size : {size_t{0}, size_t{5}, size_t{100}, size_t{1} << 20}) {
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7);
    std::shared_ptr<const MappedFile> held = MappedFile::FromBytes(bytes, "sample");
    EXPECT_FALSE(held->is_mapped());
    EXPECT_TRUE(Aligned64(held->data())) << size;
    EXPECT_EQ(held->view(), bytes);
    EXPECT_EQ(held->name(), "sample");
  }
}

}  // namespace
}  // namespace kiln::support
