// The host DeviceOps (device_ops.h): what it charges, what it caches, and the exact arithmetic
// the sharding engine's bit-identity across strategies rests on.
#include "engine/shard/device_ops.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <vector>

#include "engine/comm/self_communicator.h"
#include "engine/io/block_file.h"
#include "engine/kernels/adamw.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

class FailedWork final : public comm::Work {
 public:
  absl::Status Wait(absl::Duration) override { return absl::UnavailableError("rank 1 is gone"); }
  bool Done() const override { return true; }
};

class HostDeviceOpsTest : public ::testing::Test {
 protected:
  MemoryLedger ledger_;
  std::unique_ptr<DeviceOps> ops_ = CreateHostDeviceOps(&ledger_);
  int64_t Current(MemoryCategory c) const {
    return ledger_.Get(MemoryPool::kDevice, c).current;
  }
};

TEST_F(HostDeviceOpsTest, AllocateIsZeroedChargedAndGivenBack) {
  EXPECT_TRUE(ops_->host_addressable());
  {
    absl::StatusOr<DeviceBlock> b = ops_->Allocate(1000, MemoryCategory::kParams);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->bytes(), 1000u);
    const auto* bytes = b->as<unsigned char>();
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(bytes[i], 0) << i;
    EXPECT_EQ(Current(MemoryCategory::kParams), 1000);
  }
  EXPECT_EQ(Current(MemoryCategory::kParams), 0);
  absl::StatusOr<DeviceBlock> empty = ops_->Allocate(0, MemoryCategory::kParams);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(empty->data(), nullptr);
}

TEST_F(HostDeviceOpsTest, RecycledBlocksAreReusedAndChargedAsOtherMeanwhile) {
  absl::StatusOr<DeviceBlock> a = ops_->Acquire(4096, MemoryCategory::kGrads, true);
  ASSERT_TRUE(a.ok());
  a->as<float>()[3] = 7.0f;
  void* where = a->data();
  ops_->Recycle(std::move(*a));
  EXPECT_EQ(Current(MemoryCategory::kGrads), 0);
  EXPECT_EQ(Current(MemoryCategory::kOther), 4096);
  // Same size: the same memory, now charged to the new category; zeroed only when asked.
  absl::StatusOr<DeviceBlock> b = ops_->Acquire(4096, MemoryCategory::kParams, false);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data(), where);
  EXPECT_EQ(b->as<float>()[3], 7.0f);
  EXPECT_EQ(Current(MemoryCategory::kParams), 4096);
  EXPECT_EQ(Current(MemoryCategory::kOther), 0);
  ops_->Recycle(std::move(*b));
  absl::StatusOr<DeviceBlock> c = ops_->Acquire(4096, MemoryCategory::kGrads, true);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data(), where);
  EXPECT_EQ(c->as<float>()[3], 0.0f);
}

TEST_F(HostDeviceOpsTest, AccumulateRoundsOnceInTheDtype) {
  const int n = 3000;  // more than one internal chunk
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = 1.0f + 1e-3f * static_cast<float>(i);
    y[i] = 3e-3f * static_cast<float>(i % 17) - 0.02f;
  }
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    std::vector<uint16_t> dst(n), src(n), expected(n);
    ConvertDType(x.data(), DType::kF32, dst.data(), dtype, n);
    ConvertDType(y.data(), DType::kF32, src.data(), dtype, n);
    for (int i = 0; i < n; ++i) {
      float a, b;
      ConvertDType(&dst[i], dtype, &a, DType::kF32, 1);
      ConvertDType(&src[i], dtype, &b, DType::kF32, 1);
      const float sum = a + b;
      ConvertDType(&sum, DType::kF32, &expected[i], dtype, 1);
    }
    ASSERT_TRUE(ops_->Accumulate(dst.data(), src.data(), n, dtype).ok());
    EXPECT_EQ(dst, expected) << DTypeName(dtype);
  }
  std::vector<float> f = x;
  ASSERT_TRUE(ops_->Accumulate(f.data(), y.data(), n, DType::kF32).ok());
  for (int i = 0; i < n; ++i) ASSERT_EQ(f[i], x[i] + y[i]) << i;
}

TEST_F(HostDeviceOpsTest, ConvertScaleCopyAndTransfers) {
  std::vector<float> x = {1.0f, -2.5f, 3.0e-8f, 65504.0f};
  std::vector<uint16_t> half(4), expected(4);
  ASSERT_TRUE(ops_->Convert(x.data(), DType::kF32, half.data(), DType::kBF16, 4).ok());
  ConvertDType(x.data(), DType::kF32, expected.data(), DType::kBF16, 4);
  EXPECT_EQ(half, expected);
  std::vector<float> y = x;
  ASSERT_TRUE(ops_->Scale(y.data(), 4, 0.25f).ok());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], x[i] * 0.25f);
  std::vector<float> z(4);
  ASSERT_TRUE(ops_->Copy(z.data(), x.data(), 16).ok());
  EXPECT_EQ(z, x);
  ASSERT_TRUE(ops_->Zero(z.data(), 16).ok());
  EXPECT_EQ(z, std::vector<float>(4, 0.0f));
  ASSERT_TRUE(ops_->FromHost(z.data(), x.data(), 16).ok());
  std::vector<float> back(4);
  ASSERT_TRUE(ops_->ToHost(back.data(), z.data(), 16).ok());
  EXPECT_EQ(back, x);
}

TEST_F(HostDeviceOpsTest, SumOfSquaresAddsThePartsInOrder) {
  std::vector<float> a(1001), b(77);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.01f * static_cast<float>(i % 13) - 0.05f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 1.5f + static_cast<float>(i);
  const FloatSpan parts[] = {{a.data(), 1001}, {b.data(), 0}, {b.data(), 77}};
  absl::StatusOr<double> s = ops_->SumOfSquares(parts);
  ASSERT_TRUE(s.ok());
  const double expected = kernels::SquaredL2Norm(a.data(), 1001) + 0.0 +
                          kernels::SquaredL2Norm(b.data(), 77);
  EXPECT_EQ(*s, expected);
}

TEST_F(HostDeviceOpsTest, AfterCollectiveIsTheWorksStatus) {
  std::unique_ptr<comm::Communicator> self = comm::CreateSelfCommunicator();
  float v[2] = {1, 2};
  ASSERT_TRUE(ops_->BeforeCollective(*self).ok());
  EXPECT_TRUE(ops_->AfterCollective(*self, self->AllReduce(v, 2, DType::kF32), absl::Seconds(1))
                  .ok());
  absl::Status s = ops_->AfterCollective(*self, std::make_shared<FailedWork>(), absl::Seconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
}

TEST(FileBackedDeviceOpsTest, BlocksAreFilesChargedToNvmeAndSurviveEviction) {
  const std::string dir = ::testing::TempDir();
  MemoryLedger ledger;
  absl::StatusOr<std::unique_ptr<DeviceOps>> ops = CreateFileBackedDeviceOps(&ledger, dir);
  ASSERT_TRUE(ops.ok()) << ops.status();
  {
    const size_t n = 300000;  // several pages
    absl::StatusOr<DeviceBlock> b = (*ops)->Allocate(n * sizeof(float),
                                                     MemoryCategory::kOptimizerState);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(ledger.Get(MemoryPool::kNvme, MemoryCategory::kOptimizerState).current,
              static_cast<int64_t>(n * sizeof(float)));
    EXPECT_EQ(ledger.PoolTotal(MemoryPool::kHost).current, 0);
    float* x = b->as<float>();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], 0.0f) << i;
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) * 0.5f;
    ASSERT_TRUE((*ops)->Evict().ok());
    // Nothing of the file is left in the page cache (mincore on its mapping).
    std::vector<unsigned char> cached((b->bytes() + 4095) / 4096);
    ASSERT_EQ(mincore(b->data(), b->bytes(), cached.data()), 0);
    for (size_t p = 0; p < cached.size(); ++p) EXPECT_EQ(cached[p] & 1, 0) << "page " << p;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], static_cast<float>(i) * 0.5f) << i;
    // Transient blocks are ordinary host memory.
    absl::StatusOr<DeviceBlock> t = (*ops)->Acquire(4096, MemoryCategory::kGrads, true);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(ledger.Get(MemoryPool::kHost, MemoryCategory::kGrads).current, 4096);
  }
  EXPECT_EQ(ledger.PoolTotal(MemoryPool::kNvme).current, 0);
}

// Zero on a file-backed block punches a hole: the values read zero, the file's blocks are freed
// (so rewriting the range reads nothing from the disk), and bytes outside the range survive.
TEST(FileBackedDeviceOpsTest, ZeroPunchesAHoleAndKeepsTheNeighbours) {
  MemoryLedger ledger;
  absl::StatusOr<std::unique_ptr<DeviceOps>> ops =
      CreateFileBackedDeviceOps(&ledger, ::testing::TempDir());
  ASSERT_TRUE(ops.ok()) << ops.status();
  const size_t n = 1 << 20;
  absl::StatusOr<DeviceBlock> b = (*ops)->Allocate(n * sizeof(float), MemoryCategory::kGrads);
  ASSERT_TRUE(b.ok()) << b.status();
  float* x = b->as<float>();
  for (size_t i = 0; i < n; ++i) x[i] = 1.0f + static_cast<float>(i);
  ASSERT_TRUE((*ops)->Evict().ok());
  const int fd = (*ops)->FileOf(x).file->fd();
  struct stat before;
  ASSERT_EQ(fstat(fd, &before), 0);
  // An unaligned range in the middle: partial pages at both edges.
  const size_t lo = 1000, hi = n - 3000;
  ASSERT_TRUE((*ops)->Zero(x + lo, (hi - lo) * sizeof(float)).ok());
  struct stat after;
  ASSERT_EQ(fstat(fd, &after), 0);
  EXPECT_LT(after.st_blocks, before.st_blocks / 4) << before.st_blocks << " -> " << after.st_blocks;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(x[i], i < lo || i >= hi ? 1.0f + static_cast<float>(i) : 0.0f) << i;
  }
  // The whole block, its last partial page included.
  ASSERT_TRUE((*ops)->Zero(x, n * sizeof(float)).ok());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], 0.0f) << i;
}

TEST(FileBackedDeviceOpsTest, AnUnwritableDirectoryIsNamed) {
  MemoryLedger ledger;
  absl::StatusOr<std::unique_ptr<DeviceOps>> ops =
      CreateFileBackedDeviceOps(&ledger, "/nonexistent/accel-nvme");
  ASSERT_FALSE(ops.ok());
  EXPECT_EQ(ops.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ops.status().message().find("/nonexistent/accel-nvme"), std::string::npos)
      << ops.status();
}

}  // namespace
}  // namespace accel::shard
