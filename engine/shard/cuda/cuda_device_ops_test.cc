// CudaDeviceOps against the host DeviceOps (label gpu; skips without a device): the same bits
// for Convert, Accumulate and Scale, SumOfSquares to rounding, round trips through ToHost /
// FromHost, cached reuse, and collectives ordered by events on a one-rank NCCL communicator.
#include "engine/shard/cuda/cuda_device_ops.h"

#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <vector>

#include "engine/comm/in_memory_store.h"
#include "engine/comm/nccl_communicator.h"
#include "engine/comm/self_communicator.h"
#include "engine/tensor/cuda/device.h"
#include "gtest/gtest.h"

namespace accel::shard {
namespace {

class CudaDeviceOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::ListDevices().empty()) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    allocator_ = std::make_unique<cuda::CachingAllocator>(cuda::CudaRawAllocator(0), &ledger_);
    auto ops = CudaDeviceOps::Create(allocator_.get(), stream_);
    ASSERT_TRUE(ops.ok()) << ops.status();
    ops_ = std::move(*ops);
  }
  void TearDown() override {
    ops_.reset();
    allocator_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  // A device block holding `host`'s bytes.
  template <typename T>
  DeviceBlock Upload(const std::vector<T>& host) {
    absl::StatusOr<DeviceBlock> b = ops_->Allocate(host.size() * sizeof(T), MemoryCategory::kOther);
    EXPECT_TRUE(b.ok()) << b.status();
    EXPECT_TRUE(ops_->FromHost(b->data(), host.data(), host.size() * sizeof(T)).ok());
    return std::move(*b);
  }
  template <typename T>
  std::vector<T> Download(const DeviceBlock& b) {
    std::vector<T> host(b.bytes() / sizeof(T));
    EXPECT_TRUE(ops_->ToHost(host.data(), b.data(), b.bytes()).ok());
    return host;
  }

  MemoryLedger ledger_;
  MemoryLedger host_ledger_;
  std::unique_ptr<DeviceOps> host_ = CreateHostDeviceOps(&host_ledger_);
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::CachingAllocator> allocator_;
  std::unique_ptr<CudaDeviceOps> ops_;
};

std::vector<float> Values(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + i % 7);
  return v;
}

TEST_F(CudaDeviceOpsTest, ArithmeticIsBitIdenticalWithTheHost) {
  const int n = 100003;
  const std::vector<float> x = Values(n);
  std::vector<float> y = Values(n + 5);
  y.resize(n);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const size_t size = DTypeSize(dtype);
    std::vector<char> a(n * size), b(n * size);
    ASSERT_TRUE(host_->Convert(x.data(), DType::kF32, a.data(), dtype, n).ok());
    ASSERT_TRUE(host_->Convert(y.data(), DType::kF32, b.data(), dtype, n).ok());
    DeviceBlock da = Upload(a), db = Upload(b);
    ASSERT_TRUE(ops_->Accumulate(da.data(), db.data(), n, dtype).ok());
    ASSERT_TRUE(host_->Accumulate(a.data(), b.data(), n, dtype).ok());
    EXPECT_EQ(Download<char>(da), a) << DTypeName(dtype);
    // Convert from the device's dtype back to fp32, as the engine does for the optimizer.
    absl::StatusOr<DeviceBlock> wide = ops_->Acquire(n * 4, MemoryCategory::kOther, false);
    ASSERT_TRUE(wide.ok());
    ASSERT_TRUE(ops_->Convert(da.data(), dtype, wide->data(), DType::kF32, n).ok());
    std::vector<float> expected(n);
    ConvertDType(a.data(), dtype, expected.data(), DType::kF32, n);
    EXPECT_EQ(Download<float>(*wide), expected) << DTypeName(dtype);
  }
  DeviceBlock dx = Upload(x);
  std::vector<float> scaled = x;
  ASSERT_TRUE(ops_->Scale(dx.as<float>(), n, 1.0f / 1024).ok());
  ASSERT_TRUE(host_->Scale(scaled.data(), n, 1.0f / 1024).ok());
  EXPECT_EQ(Download<float>(dx), scaled);
}

TEST_F(CudaDeviceOpsTest, SumOfSquaresAgreesToRounding) {
  const std::vector<float> x = Values(70001);
  DeviceBlock dx = Upload(x);
  const FloatSpan parts[] = {{dx.as<float>(), 50000}, {dx.as<float>() + 50000, 20001}};
  const FloatSpan host_parts[] = {{x.data(), 50000}, {x.data() + 50000, 20001}};
  absl::StatusOr<double> device = ops_->SumOfSquares(parts);
  absl::StatusOr<double> host = host_->SumOfSquares(host_parts);
  ASSERT_TRUE(device.ok() && host.ok()) << device.status();
  EXPECT_NEAR(*device, *host, 1e-9 * *host);
}

TEST_F(CudaDeviceOpsTest, RecycledBlocksComeBackFromTheCache) {
  absl::StatusOr<DeviceBlock> a = ops_->Acquire(1 << 20, MemoryCategory::kGrads, true);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(Download<float>(*a), std::vector<float>((1 << 20) / 4, 0.0f));
  void* where = a->data();
  ops_->Recycle(std::move(*a));
  const int64_t hits = allocator_->stats().cache_hits;
  absl::StatusOr<DeviceBlock> b = ops_->Acquire(1 << 20, MemoryCategory::kParams, false);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data(), where);
  EXPECT_EQ(allocator_->stats().cache_hits, hits + 1);
  EXPECT_EQ(ledger_.Get(MemoryPool::kDevice, MemoryCategory::kParams).current,
            cuda::CachingAllocator::SizeClass(1 << 20));
}

TEST_F(CudaDeviceOpsTest, CollectivesAreOrderedByEventsOnNccl) {
  comm::InMemoryStore store;
  auto nccl = comm::CreateNcclCommunicator(&store, "ops", 0, 1, 0);
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  // Produce on the compute stream, gather on NCCL's, consume on compute again: no host waits
  // in between, and the result must be what was produced.
  const std::vector<float> x = Values(4096);
  DeviceBlock src = Upload(std::vector<float>(4096, 0.0f));
  DeviceBlock staged = Upload(x);
  absl::StatusOr<DeviceBlock> dst = ops_->Acquire(4096 * 4, MemoryCategory::kParams, true);
  ASSERT_TRUE(dst.ok());
  ASSERT_TRUE(ops_->Copy(src.data(), staged.data(), 4096 * 4).ok());
  ASSERT_TRUE(ops_->BeforeCollective(**nccl).ok());
  std::shared_ptr<comm::Work> w = (*nccl)->AllGather(src.data(), dst->data(), 4096, DType::kF32);
  ASSERT_TRUE(ops_->AfterCollective(**nccl, w, absl::Seconds(30)).ok());
  ASSERT_TRUE(ops_->Scale(dst->as<float>(), 4096, 2.0f).ok());
  std::vector<float> expected = x;
  for (float& v : expected) v *= 2.0f;
  EXPECT_EQ(Download<float>(*dst), expected);
  EXPECT_TRUE(w->Wait(absl::Seconds(30)).ok());
  // A completed Work needs no wait; a host communicator cannot order device work.
  EXPECT_TRUE(ops_->AfterCollective(**nccl, w, absl::Seconds(1)).ok());
  std::unique_ptr<comm::Communicator> host = comm::CreateSelfCommunicator();
  EXPECT_EQ(ops_->BeforeCollective(*host).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace accel::shard
