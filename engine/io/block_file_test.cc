#include "engine/io/block_file.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstring>

#include "engine/io/aligned_buffer.h"
#include "engine/io/async_io.h"
#include "engine/io/io_test_util.h"
#include "gtest/gtest.h"

namespace accel::io {
namespace {

using ::accel::io::testing::DiskTempDir;

int64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

TEST(BlockFileTest, OpensDirectWithAlignmentAndPaddedSize) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  auto f = BlockFile::Open(dir.File("a"), 10000);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE((*f)->direct()) << (*f)->direct_reason();
  EXPECT_TRUE((*f)->direct_reason().empty());
  const int64_t a = (*f)->alignment();
  ASSERT_GT(a, 0);
  EXPECT_TRUE(4096 % a == 0 || a % 4096 == 0) << a;
  EXPECT_GT((*f)->mem_alignment(), 0);
  EXPECT_EQ((*f)->size(), PadTo(10000, a));
  EXPECT_EQ(FileSize(dir.File("a")), (*f)->size());
  struct stat st;
  ASSERT_EQ(stat(dir.File("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(BlockFileTest, ResizeKeepsBytesBelowTheNewSize) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  auto aio = AsyncIo::Create();
  ASSERT_TRUE(aio.ok());
  auto buf = AlignedBuffer::Allocate(8192);
  ASSERT_TRUE(buf.ok());
  testing::FillRandom(buf->data(), 8192, 1);
  {
    auto f = BlockFile::Open(dir.File("b"), 8192);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*aio)->Write(**f, 0, buf->data(), 8192).ok());
  }
  auto grown = BlockFile::Open(dir.File("b"), 1 << 20);
  ASSERT_TRUE(grown.ok());
  EXPECT_EQ(FileSize(dir.File("b")), 1 << 20);
  auto back = AlignedBuffer::Allocate(8192);
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE((*aio)->Read(**grown, 0, back->data(), 8192).ok());
  EXPECT_EQ(std::memcmp(buf->data(), back->data(), 8192), 0);
  grown->reset();
  auto shrunk = BlockFile::Open(dir.File("b"), 4096);
  ASSERT_TRUE(shrunk.ok());
  EXPECT_EQ(FileSize(dir.File("b")), 4096);
}

TEST(BlockFileTest, RefusesTmpfsNamingThePath) {
  struct statfs fs;
  if (statfs("/dev/shm", &fs) != 0 || static_cast<uint64_t>(fs.f_type) != TMPFS_MAGIC) {
    GTEST_SKIP() << "/dev/shm is not tmpfs on this machine";
  }
  const std::string path = "/dev/shm/accel_block_file_test_" + std::to_string(getpid());
  auto f = BlockFile::Open(path, 1 << 20);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(f.status().message().find(path), absl::string_view::npos) << f.status();
  EXPECT_NE(f.status().message().find("tmpfs keeps file pages in memory"),
            absl::string_view::npos)
      << f.status();
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "the refused file was created";
  EXPECT_EQ(CheckNotMemoryBacked("/dev/shm").code(), absl::StatusCode::kFailedPrecondition);
}

TEST(BlockFileTest, RefusesASymlinkOntoTmpfs) {
  struct statfs fs;
  if (statfs("/dev/shm", &fs) != 0 || static_cast<uint64_t>(fs.f_type) != TMPFS_MAGIC) {
    GTEST_SKIP() << "/dev/shm is not tmpfs on this machine";
  }
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string target = "/dev/shm/accel_block_file_link_" + std::to_string(getpid());
  ASSERT_EQ(symlink(target.c_str(), dir.File("link").c_str()), 0);
  auto f = BlockFile::Open(dir.File("link"), 1 << 20);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition) << f.status();
  EXPECT_NE(access(target.c_str(), F_OK), 0) << "the refused file was left on tmpfs";
  unlink(target.c_str());
}

TEST(BlockFileTest, MissingDirectoryIsNotFound) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  auto f = BlockFile::Open(dir.File("no/such/dir/f"), 4096);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound) << f.status();
  EXPECT_NE(f.status().message().find("no/such/dir/f"), absl::string_view::npos);
}

TEST(BlockFileTest, NegativeSizeIsInvalid) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(BlockFile::Open(dir.File("n"), -1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BlockFileTest, CheckTransferNamesTheMisalignedOffsetLengthOrBuffer) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  auto f = BlockFile::Open(dir.File("c"), 1 << 20);
  ASSERT_TRUE(f.ok());
  auto buf = AlignedBuffer::Allocate(16384);
  ASSERT_TRUE(buf.ok());
  const BlockFile& file = **f;
  EXPECT_TRUE(file.CheckTransfer(0, buf->data(), 8192).ok());
  absl::Status s = file.CheckTransfer(100, buf->data(), 4096);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("offset 100"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find(dir.File("c")), absl::string_view::npos) << s;
  s = file.CheckTransfer(4096, buf->data(), 1000);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("length 1000 at offset 4096"), absl::string_view::npos) << s;
  s = file.CheckTransfer(8192, buf->as<char>() + 8, 4096);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("offset 8192"), absl::string_view::npos) << s;
  EXPECT_EQ(file.CheckTransfer(-4096, buf->data(), 4096).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BlockFileTest, BufferedWhenDirectIsTurnedOffSaysWhy) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  BlockFileOptions options;
  options.try_direct = false;
  auto f = BlockFile::Open(dir.File("d"), 4096, options);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE((*f)->direct());
  EXPECT_NE((*f)->direct_reason().find("try_direct"), std::string::npos);
}

TEST(BlockFileTest, RemoveOnCloseDeletesTheFile) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  BlockFileOptions options;
  options.remove_on_close = true;
  {
    auto f = BlockFile::Open(dir.File("e"), 4096, options);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(access(dir.File("e").c_str(), F_OK), 0);
  }
  EXPECT_NE(access(dir.File("e").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace accel::io
