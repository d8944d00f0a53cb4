#include "engine/io/disk_bandwidth.h"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <filesystem>

#include "engine/io/io_test_util.h"
#include "gtest/gtest.h"

namespace accel::io {
namespace {

TEST(DiskBandwidthTest, MeasuresAndRemovesItsFile) {
  testing::DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  auto bw = MeasureDiskBandwidth(dir.path(), (16 << 20) + 100);
  ASSERT_TRUE(bw.ok()) << bw.status();
  EXPECT_EQ(bw->bytes, (16 << 20) + 4096);
  EXPECT_GT(bw->write_gbps, 0);
  EXPECT_GT(bw->read_gbps, 0);
  EXPECT_TRUE(bw->direct) << bw->note;
  EXPECT_FALSE(bw->backend.empty());
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "the temporary file was left behind";
}

TEST(DiskBandwidthTest, ThreadBackendToo) {
  testing::DiskTempDir dir;
  ASSERT_TRUE(dir.ok());
  AioOptions options;
  options.backend = AioBackend::kThreads;
  auto bw = MeasureDiskBandwidth(dir.path(), 8 << 20, options);
  ASSERT_TRUE(bw.ok()) << bw.status();
  EXPECT_EQ(bw->backend, "threads");
}

TEST(DiskBandwidthTest, RefusesTmpfsAndNonPositiveSizes) {
  struct statfs fs;
  if (statfs("/dev/shm", &fs) == 0 && static_cast<uint64_t>(fs.f_type) == TMPFS_MAGIC) {
    EXPECT_EQ(MeasureDiskBandwidth("/dev/shm", 1 << 20).status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(MeasureDiskBandwidth("/var/tmp", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace accel::io
