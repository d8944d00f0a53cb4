// GPU tests (ctest label `gpu`): skip cleanly on a machine without a CUDA device.
#include "engine/tensor/cuda/device.h"

#include <cuda_runtime.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::cuda {
namespace {

TEST(CudaDeviceTest, ErrorsNameTheCallAndPlace) {
  absl::Status s = CudaStatus(static_cast<int>(cudaErrorMemoryAllocation), "cudaMalloc(&p, n)",
                              "x.cu", 12);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("cudaMalloc(&p, n) failed at x.cu:12"));
  EXPECT_EQ(CudaStatus(static_cast<int>(cudaErrorNoDevice), "c", "f", 1).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(CudaStatus(0, "c", "f", 1).ok());
}

TEST(CudaDeviceTest, EveryDeviceRunsAKernel) {
  std::vector<DeviceInfo> devices = ListDevices();
  if (devices.empty()) GTEST_SKIP() << "no CUDA device";
  for (const DeviceInfo& d : devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.total_memory_bytes, 0);
    EXPECT_GE(d.compute_capability_major, 7);
    absl::Status s = SelfTest(d.index);
    EXPECT_TRUE(s.ok()) << s;
  }
}

}  // namespace
}  // namespace accel::cuda
