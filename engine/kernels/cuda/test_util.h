// Helpers for the `gpu` tests: skip without a device, device arrays filled from and read back
// to host vectors (on the legacy default stream, which the tests also launch on, so copies are
// ordered after the kernels), and a check that the device reported no asynchronous error.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "engine/tensor/cuda/device.h"
#include "gtest/gtest.h"

namespace accel::cuda::testing {

#define ACCEL_SKIP_WITHOUT_GPU()                                                   \
  do {                                                                             \
    if (::accel::cuda::ListDevices().empty()) GTEST_SKIP() << "no CUDA device";   \
  } while (0)

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    if (n_ > 0) {
      EXPECT_EQ(cudaMalloc(&ptr_, n_ * sizeof(T)), cudaSuccess);
    }
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { Upload(host); }
  ~DeviceArray() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return static_cast<T*>(ptr_); }
  size_t size() const { return n_; }
  void Upload(const std::vector<T>& host) {
    ASSERT_EQ(host.size(), n_);
    if (n_ > 0) {
      ASSERT_EQ(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice),
                cudaSuccess);
    }
  }
  std::vector<T> Download() const {
    std::vector<T> host(n_);
    if (n_ > 0) {
      EXPECT_EQ(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    return host;
  }

 private:
  size_t n_ = 0;
  void* ptr_ = nullptr;
};

// Waits for the device and turns an asynchronous kernel error into a test failure.
inline ::testing::AssertionResult DeviceOk() {
  cudaError_t err = cudaDeviceSynchronize();
  if (err == cudaSuccess) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "device error: " << cudaGetErrorName(err) << " ("
                                       << cudaGetErrorString(err) << ")";
}

}  // namespace accel::cuda::testing
