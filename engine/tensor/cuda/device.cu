#include "engine/tensor/cuda/device.h"

#include <cuda_runtime.h>

#include <vector>

#include "absl/strings/str_cat.h"

namespace accel::cuda {
namespace {

__global__ void FillScaled(float* out, int n, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(i) * scale;
}

}  // namespace

absl::Status CudaStatus(int error, const char* call, const char* file, int line) {
  if (error == cudaSuccess) return absl::OkStatus();
  // The runtime also keeps this error as its "last error"; clear it so that the next launch
  // check (cudaGetLastError) does not report it a second time. Sticky errors stay regardless.
  (void)cudaGetLastError();
  auto e = static_cast<cudaError_t>(error);
  std::string msg = absl::StrCat(call, " failed at ", file, ":", line, ": ", cudaGetErrorName(e),
                                 " (", cudaGetErrorString(e), ")");
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorDevicesUnavailable) {
    return absl::UnavailableError(msg);
  }
  return absl::InternalError(msg);
}

std::vector<DeviceInfo> ListDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return {};
  }
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    devices.push_back({i, prop.name, static_cast<int64_t>(prop.totalGlobalMem), prop.major,
                       prop.minor, prop.multiProcessorCount});
  }
  return devices;
}

absl::Status SelfTest(int device) {
  ACCEL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  constexpr int kN = 1000;
  float* d = nullptr;
  ACCEL_CUDA_RETURN_IF_ERROR(cudaMalloc(&d, kN * sizeof(float)));
  FillScaled<<<(kN + 255) / 256, 256>>>(d, kN, 0.5f);
  absl::Status launched = CudaStatus(cudaGetLastError(), "FillScaled<<<>>>", __FILE__, __LINE__);
  std::vector<float> host(kN);
  absl::Status copied = launched.ok() ? CudaStatus(cudaMemcpy(host.data(), d, kN * sizeof(float),
                                                              cudaMemcpyDeviceToHost),
                                                   "cudaMemcpy", __FILE__, __LINE__)
                                      : launched;
  cudaFree(d);
  if (!copied.ok()) return copied;
  for (int i = 0; i < kN; ++i) {
    if (host[i] != static_cast<float>(i) * 0.5f) {
      return absl::InternalError(absl::StrCat("device ", device, " self-test: element ", i, " is ",
                                              host[i], ", expected ", i * 0.5f));
    }
  }
  return absl::OkStatus();
}

}  // namespace accel::cuda
