#include "engine/kernels/cuda/bias_add.h"

#include <cuda_runtime.h>

#include "engine/kernels/cuda/common.cuh"

namespace accel::kernels::cuda {
namespace {

template <typename T>
__global__ void AddBiasRowsKernel(T* C, const T* bias, int64_t M, int64_t N, int64_t ldc) {
  const int64_t n = M * N;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / N, c = i % N;
    T* x = C + r * ldc + c;
    *x = FromFloat<T>(ToFloat(*x) + ToFloat(bias[c]));
  }
}

}  // namespace

absl::Status AddBiasRows(void* C, const void* bias, int64_t M, int64_t N, int64_t ldc,
                         DType dtype, cudaStream_t stream) {
  if (M <= 0 || N <= 0) return absl::OkStatus();
  return DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    AddBiasRowsKernel<T><<<GridFor(M * N), kThreads, 0, stream>>>(
        static_cast<T*>(C), static_cast<const T*>(bias), M, N, ldc);
    return ACCEL_CUDA_LAUNCH_STATUS("AddBiasRowsKernel");
  });
}

}  // namespace accel::kernels::cuda
