// C (M, N, row stride ldc) += bias (N) broadcast over rows, in `dtype` (f32, bf16 or f16; the
// sum is formed in fp32 and rounded once). Internal to Blas::Gemm's cuBLAS fallback path, which
// has no bias epilogue.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "engine/tensor/dtype.h"

namespace accel::kernels::cuda {

[[nodiscard]] absl::Status AddBiasRows(void* C, const void* bias, int64_t M, int64_t N,
                                       int64_t ldc, DType dtype, cudaStream_t stream);

}  // namespace accel::kernels::cuda
