// ReadProcessMemory over fake /proc and /sys trees (cgroup v1 with a limit on an ancestor, v2,
// none), and over the real ones (VmHWM is always there on Linux).
#include "engine/base/process_memory.h"

#include <unistd.h>

#include <string>

#include "engine/base/env.h"
#include "gtest/gtest.h"

namespace accel {
namespace {

class ProcessMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/process_memory_" + std::to_string(::getpid());
    (void)Env::Default()->DeleteRecursively(root_);
    Write("/proc/self/status", "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t 512 kB\n");
    Write("/proc/meminfo", "MemTotal: 100 kB\nMemAvailable:   5000 kB\n");
  }
  void TearDown() override { (void)Env::Default()->DeleteRecursively(root_); }
  void Write(const std::string& path, const std::string& text) {
    const std::string full = root_ + path;
    ASSERT_TRUE(Env::Default()->CreateDirs(full.substr(0, full.rfind('/'))).ok());
    ASSERT_TRUE(WriteFileAtomic(Env::Default(), full, text).ok());
  }
  std::string root_;
};

TEST_F(ProcessMemoryTest, CgroupV1TakesTheSmallestLimitOnThePath) {
  Write("/proc/self/cgroup", "5:cpu,cpuacct:/\n4:memory:/jobs/a\n0::/\n");
  const std::string mem = "/sys/fs/cgroup/memory";
  Write(mem + "/memory.limit_in_bytes", "9223372036854771712\n");
  Write(mem + "/jobs/memory.limit_in_bytes", "300000000\n");
  Write(mem + "/jobs/memory.usage_in_bytes", "1000\n");
  Write(mem + "/jobs/a/memory.limit_in_bytes", "9223372036854771712\n");
  Write(mem + "/jobs/a/memory.usage_in_bytes", "10\n");
  const ProcessMemory m = ReadProcessMemory(root_);
  EXPECT_EQ(m.peak_rss, 2048 * 1024);
  EXPECT_EQ(m.rss, 1024 * 1024);
  EXPECT_EQ(m.rss_anon, 512 * 1024);
  EXPECT_EQ(m.mem_available, 5000 * 1024);
  EXPECT_EQ(m.cgroup.limit, 300000000);
  EXPECT_EQ(m.cgroup.usage, 1000);
  EXPECT_EQ(m.cgroup.limit_file, root_ + mem + "/jobs/memory.limit_in_bytes");
}

TEST_F(ProcessMemoryTest, CgroupV2ReadsMemoryMaxAndIgnoresMax) {
  Write("/proc/self/cgroup", "0::/user.slice/job\n");
  Write("/sys/fs/cgroup/user.slice/memory.max", "max\n");
  Write("/sys/fs/cgroup/user.slice/job/memory.max", "123456789\n");
  Write("/sys/fs/cgroup/user.slice/job/memory.current", "4096\n");
  const CgroupMemory c = ReadCgroupMemory(root_);
  EXPECT_EQ(c.limit, 123456789);
  EXPECT_EQ(c.usage, 4096);
  Write("/sys/fs/cgroup/user.slice/job/memory.max", "max\n");
  EXPECT_EQ(ReadCgroupMemory(root_).limit, -1);
  EXPECT_TRUE(ReadCgroupMemory(root_).limit_file.empty());
}

TEST_F(ProcessMemoryTest, NoCgroupNoLimit) {
  const ProcessMemory m = ReadProcessMemory(root_ + "/nothing-here");
  EXPECT_EQ(m.peak_rss, -1);
  EXPECT_EQ(m.cgroup.limit, -1);
}

TEST(RealProcessMemory, PeakResidentSetIsPositive) {
  const ProcessMemory m = ReadProcessMemory();
  EXPECT_GT(m.peak_rss, 0);
  EXPECT_GE(m.peak_rss, m.rss);
  EXPECT_GT(m.rss_anon, 0);
  EXPECT_LE(m.rss_anon, m.rss);
  EXPECT_GT(m.mem_available, 0);
}

}  // namespace
}  // namespace accel
