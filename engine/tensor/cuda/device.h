// CUDA devices: discovery and error handling. Compiled only when nvcc is found
// (ACCEL_WITH_CUDA); the rest of the GPU path (kernels, cuBLASLt, NCCL) builds on this.
//
// CUDA return codes become absl::Status with the failing call and file:line in the message
// (ACCEL_CUDA_RETURN_IF_ERROR). No device, or no driver, is not an error for discovery: it is
// an empty list, so CPU-only machines run the same binaries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accel::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int64_t total_memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;
};

// Turns a cudaError_t (as int, so callers need not include CUDA headers) into a Status naming
// the call and where it was made. Unavailable for a missing device or driver, Internal otherwise.
absl::Status CudaStatus(int error, const char* call, const char* file, int line);

#define ACCEL_CUDA_RETURN_IF_ERROR(call)                                                  \
  do {                                                                                    \
    ::absl::Status accel_cuda_status_ =                                                   \
        ::accel::cuda::CudaStatus(static_cast<int>(call), #call, __FILE__, __LINE__);     \
    if (!accel_cuda_status_.ok()) return accel_cuda_status_;                              \
  } while (0)

// The visible devices; empty without a device or a driver.
std::vector<DeviceInfo> ListDevices();

// Runs a small kernel on `device` (fills a buffer with i * scale, copies it back, checks it):
// proof that code generation, launch and copies work on this device.
[[nodiscard]] absl::Status SelfTest(int device);

}  // namespace accel::cuda
