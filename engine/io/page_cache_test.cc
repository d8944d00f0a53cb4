// The reason engine/io exists: offload through it must not leave the file's pages in the page
// cache, which the memory cgroup charges like anonymous memory (shared/reference/
// zero_infinity.md §5.3). Residency is measured with mincore; a buffered control proves the
// measurement sees cached pages when there are some.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "engine/io/aligned_buffer.h"
#include "engine/io/async_io.h"
#include "engine/io/block_file.h"
#include "engine/io/io_test_util.h"
#include "gtest/gtest.h"

namespace accel::io {
namespace {

using ::accel::io::testing::DiskTempDir;
using ::accel::io::testing::FillRandom;
using ::accel::io::testing::ResidentPages;

constexpr int64_t kChunk = 32 << 20;

// Writes `total` bytes of random data through `aio`, chunk by chunk, reads them back and
// checks them.
void WriteAndReadBack(AsyncIo& aio, BlockFile& file, int64_t total) {
  auto out = AlignedBuffer::Allocate(kChunk);
  auto in = AlignedBuffer::Allocate(kChunk);
  ASSERT_TRUE(out.ok() && in.ok());
  for (int64_t off = 0; off < total; off += kChunk) {
    FillRandom(out->data(), kChunk, static_cast<uint64_t>(off));
    ASSERT_TRUE(aio.Write(file, off, out->data(), kChunk).ok());
  }
  for (int64_t off = 0; off < total; off += kChunk) {
    FillRandom(out->data(), kChunk, static_cast<uint64_t>(off));
    ASSERT_TRUE(aio.Read(file, off, in->data(), kChunk).ok());
    ASSERT_EQ(std::memcmp(out->data(), in->data(), kChunk), 0) << "offset " << off;
  }
}

class PageCacheTest : public ::testing::TestWithParam<AioBackend> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    AioOptions options;
    options.backend = GetParam();
    auto aio = AsyncIo::Create(options);
    if (!aio.ok() && GetParam() == AioBackend::kIoUring) GTEST_SKIP() << aio.status();
    ASSERT_TRUE(aio.ok());
    aio_ = std::move(aio).value();
  }
  DiskTempDir dir_;
  std::unique_ptr<AsyncIo> aio_;
};

TEST_P(PageCacheTest, DirectIoLeavesNoPagesInTheCache) {
  constexpr int64_t kTotal = 256 << 20;
  const std::string path = dir_.File("direct");
  {
    auto file = BlockFile::Open(path, kTotal);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->direct()) << (*file)->direct_reason();
    WriteAndReadBack(*aio_, **file, kTotal);
  }
  EXPECT_EQ(ResidentPages(path), 0) << "of " << kTotal / 4096 << " pages";
}

TEST_P(PageCacheTest, BufferedFallbackDropsItsPagesAfterEachTransfer) {
  constexpr int64_t kTotal = 64 << 20;
  const std::string path = dir_.File("buffered");
  {
    BlockFileOptions options;
    options.try_direct = false;
    auto file = BlockFile::Open(path, kTotal, options);
    ASSERT_TRUE(file.ok());
    ASSERT_FALSE((*file)->direct());
    WriteAndReadBack(*aio_, **file, kTotal);
  }
  EXPECT_EQ(ResidentPages(path), 0) << "of " << kTotal / 4096 << " pages";
}

INSTANTIATE_TEST_SUITE_P(Engines, PageCacheTest,
                         ::testing::Values(AioBackend::kIoUring, AioBackend::kThreads));

// The control: plain buffered writes do leave pages in the cache, so a zero above means
// something.
TEST(PageCacheControlTest, PlainBufferedWritesAreResident) {
  DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("control");
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  std::string data(16 << 20, 'x');
  ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  close(fd);
  EXPECT_GT(ResidentPages(path), (8 << 20) / 4096);
}

}  // namespace
}  // namespace accel::io
