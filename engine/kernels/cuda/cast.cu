// dtype casts on the device (kernels.h: ConvertDType), bit-exact with engine/tensor/dtype.cc,
// and the sharding engine's two elementwise updates in any dtype (AccumulateInDType, Scale).
#include <cuda_runtime.h>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

template <typename Src, typename Dst>
__global__ void ConvertKernel(const Src* src, Dst* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = FromFloat<Dst>(ToFloat(src[i]));
  }
}

template <typename T>
__global__ void AccumulateKernel(T* dst, const T* src, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = FromFloat<T>(ToFloat(dst[i]) + ToFloat(src[i]));
  }
}

__global__ void ScaleKernel(float* x, int64_t n, float factor) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] *= factor;
  }
}

}  // namespace

absl::Status AccumulateInDType(void* dst, const void* src, int64_t n, DType dtype,
                               cudaStream_t stream) {
  if (absl::Status s = CheckSizes("AccumulateInDType", {n}); !s.ok() || n == 0) return s;
  return DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    AccumulateKernel<T><<<GridFor(n), kThreads, 0, stream>>>(static_cast<T*>(dst),
                                                             static_cast<const T*>(src), n);
    return ACCEL_CUDA_LAUNCH_STATUS("AccumulateKernel");
  });
}

absl::Status Scale(float* x, int64_t n, float factor, cudaStream_t stream) {
  if (absl::Status s = CheckSizes("Scale", {n}); !s.ok() || n == 0) return s;
  ScaleKernel<<<GridFor(n), kThreads, 0, stream>>>(x, n, factor);
  return ACCEL_CUDA_LAUNCH_STATUS("ScaleKernel");
}

absl::Status ConvertDType(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
                          cudaStream_t stream) {
  if (absl::Status s = CheckSizes("ConvertDType", {n}); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (src_dtype == dst_dtype) {
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * DTypeSize(src_dtype),
                                               cudaMemcpyDeviceToDevice, stream));
    return absl::OkStatus();
  }
  return DispatchDType(src_dtype, [&](auto src_tag) {
    using Src = decltype(src_tag);
    return DispatchDType(dst_dtype, [&](auto dst_tag) {
      using Dst = decltype(dst_tag);
      ConvertKernel<Src, Dst><<<GridFor(n), kThreads, 0, stream>>>(static_cast<const Src*>(src),
                                                                   static_cast<Dst*>(dst), n);
      return ACCEL_CUDA_LAUNCH_STATUS("ConvertKernel");
    });
  });
}

}  // namespace accel::kernels::cuda
