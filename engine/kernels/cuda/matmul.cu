// The linear layer on the device (kernels.h): forward and the two input gradients through
// Blas::Gemm (cuBLASLt, bias fused as its epilogue), the bias gradient through a column-sum
// kernel.
#include <cuda_runtime.h>

#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

constexpr int kColumns = 32;  // columns per block (one warp wide: coalesced row reads)
constexpr int kRowLanes = 8;  // threads down the rows per column

// dbias[j] += Σ_i dout[i, j] over the rows of this block's row range. With kAtomic the partial
// sums of several row ranges (gridDim.y > 1) meet in dbias through atomics (float only).
template <typename In, typename Out, bool kAtomic>
__global__ void ColumnSumKernel(Out* dbias, const In* dout, int64_t rows, int64_t cols,
                                int64_t rows_per_block) {
  __shared__ float partial[kRowLanes][kColumns + 1];
  const int64_t col = blockIdx.x * static_cast<int64_t>(kColumns) + threadIdx.x;
  const int64_t begin = blockIdx.y * rows_per_block;
  const int64_t end = min(rows, begin + rows_per_block);
  float sum = 0;
  if (col < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) sum += ToFloat(dout[r * cols + col]);
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    for (int y = 1; y < kRowLanes; ++y) sum += partial[y][threadIdx.x];
    if constexpr (kAtomic) {
      atomicAdd(reinterpret_cast<float*>(dbias) + col, sum);
    } else {
      dbias[col] = FromFloat<Out>(ToFloat(dbias[col]) + sum);
    }
  }
}

absl::Status ColumnSum(void* dbias, const void* dout, int64_t rows, int64_t cols, GemmTypes types,
                       cudaStream_t stream) {
  return DispatchDType(types.ab, [&](auto in_tag) {
    using In = decltype(in_tag);
    const In* in = static_cast<const In*>(dout);
    const unsigned col_blocks = static_cast<unsigned>((cols + kColumns - 1) / kColumns);
    const dim3 threads(kColumns, kRowLanes);
    if (types.c == DType::kF32) {
      // Split the rows so that there are enough blocks to fill the device.
      const int64_t row_blocks = std::max<int64_t>(1, std::min<int64_t>(rows / 256, 1024 / col_blocks + 1));
      const int64_t per_block = (rows + row_blocks - 1) / row_blocks;
      ColumnSumKernel<In, float, true><<<dim3(col_blocks, static_cast<unsigned>(row_blocks)), threads, 0,
                                         stream>>>(static_cast<float*>(dbias), in, rows, cols, per_block);
      return ACCEL_CUDA_LAUNCH_STATUS("ColumnSumKernel");
    }
    return DispatchDType(types.c, [&](auto out_tag) {
      using Out = decltype(out_tag);
      ColumnSumKernel<In, Out, false><<<dim3(col_blocks, 1), threads, 0, stream>>>(
          static_cast<Out*>(dbias), in, rows, cols, rows);
      return ACCEL_CUDA_LAUNCH_STATUS("ColumnSumKernel");
    });
  });
}

}  // namespace

absl::Status MatmulForward(Blas& blas, void* out, const void* inp, const void* weight,
                           const void* bias, int64_t N, int64_t IC, int64_t OC, GemmTypes types,
                           cudaStream_t stream) {
  if (absl::Status s = CheckSizes("MatmulForward", {N, IC, OC}); !s.ok()) return s;
  if (N == 0 || OC == 0) return absl::OkStatus();
  return blas.Gemm(false, false, N, OC, IC, 1.0f, inp, IC, weight, OC, 0.0f, out, OC, bias, types,
                   stream);
}

absl::Status MatmulBackward(Blas& blas, void* dinp, void* dweight, void* dbias, const void* dout,
                            const void* inp, const void* weight, int64_t N, int64_t IC,
                            int64_t OC, GemmTypes types, cudaStream_t stream) {
  if (absl::Status s = CheckSizes("MatmulBackward", {N, IC, OC}); !s.ok()) return s;
  if (N == 0 || IC == 0 || OC == 0) return absl::OkStatus();  // nothing to accumulate
  if (dinp != nullptr) {
    // dinp (N, IC) += dout (N, OC) · weightᵀ, weight stored (IC, OC).
    ACCEL_RETURN_IF_ERROR(blas.Gemm(false, true, N, IC, OC, 1.0f, dout, OC, weight, OC, 1.0f,
                                    dinp, IC, nullptr, types, stream));
  }
  if (dweight != nullptr) {
    // dweight (IC, OC) += inpᵀ · dout, inp stored (N, IC).
    ACCEL_RETURN_IF_ERROR(blas.Gemm(true, false, IC, OC, N, 1.0f, inp, IC, dout, OC, 1.0f,
                                    dweight, OC, nullptr, types, stream));
  }
  if (dbias != nullptr) ACCEL_RETURN_IF_ERROR(ColumnSum(dbias, dout, N, OC, types, stream));
  return absl::OkStatus();
}

}  // namespace accel::kernels::cuda
