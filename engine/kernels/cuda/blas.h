// Blas: the cuBLASLt and cuBLAS handles and the cuBLASLt workspace of one stream's matmuls.
//
// Gemm has the CPU kernels' row-major contract (engine/kernels/matmul.h): C = alpha op(A) op(B)
// + beta C (+ bias broadcast over rows), op(A) (M, K), op(B) (K, N), C (M, N), lda/ldb/ldc row
// strides; beta == 0 never reads C. A and B share one dtype, C (and bias) another; accumulation
// is always fp32 (CUBLAS_COMPUTE_32F). Supported (ab, c): (f32, f32), (bf16, bf16), (bf16, f32),
// (f16, f16), (f16, f32); anything else is InvalidArgument. Internally the row-major product is
// the column-major product Cᵀ = op(B)ᵀ op(A)ᵀ, so no data is transposed. The bias is cuBLASLt's
// epilogue; when cuBLASLt offers no algorithm (it may refuse odd leading dimensions of 16-bit
// types) the call falls back to cublasGemmEx plus a bias kernel (counted in fallbacks()).
//
// GemmStridedBatched is the same contract in fp32 over `batch` matrices at fixed element strides
// (cuBLAS), for attention's per-head products.
//
// All pointers are device pointers; work is queued on `stream` and the call returns at once.
// Errors (InvalidArgument for bad shapes or types, Internal for cuBLAS failures) name the call,
// the shapes and file:line. One Blas serves one stream at a time: the workspace is shared by all
// its calls, so two streams using one Blas concurrently would race on it. Not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"
#include "engine/tensor/dtype.h"

namespace accel::cuda {

struct GemmTypes {
  DType ab = DType::kF32;  // A and B
  DType c = DType::kF32;   // C, and bias when given
};

class Blas {
 public:
  // On the current device. The workspace is charged to (kDevice, kOther) of `ledger` (nullable).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Blas>> Create(
      MemoryLedger* ledger = nullptr, int64_t workspace_bytes = int64_t{32} << 20);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // Lets fp32 GEMMs (both entry points) use TF32 tensor cores: ~10 bits of mantissa in the
  // products, fp32 accumulation. Off by default, so fp32 results match the CPU reference.
  void set_allow_tf32(bool allow) { allow_tf32_ = allow; }
  // How many Gemm calls fell back from cuBLASLt (no algorithm for the shape or alignment) to
  // classic cuBLAS plus a bias kernel. Slower, same results to rounding.
  int64_t fallbacks() const { return fallbacks_; }

  // bias: null, or N elements of types.c added to every row of C.
  [[nodiscard]] absl::Status Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                                  float alpha, const void* A, int64_t lda, const void* B,
                                  int64_t ldb, float beta, void* C, int64_t ldc, const void* bias,
                                  GemmTypes types, cudaStream_t stream);

  [[nodiscard]] absl::Status GemmStridedBatched(bool trans_a, bool trans_b, int64_t M, int64_t N,
                                                int64_t K, float alpha, const float* A,
                                                int64_t lda, int64_t stride_a, const float* B,
                                                int64_t ldb, int64_t stride_b, float beta,
                                                float* C, int64_t ldc, int64_t stride_c,
                                                int64_t batch, cudaStream_t stream);

 private:
  Blas() = default;
  void* lt_ = nullptr;      // cublasLtHandle_t
  void* cublas_ = nullptr;  // cublasHandle_t
  void* workspace_ = nullptr;
  int64_t workspace_bytes_ = 0;
  MemoryLedger* ledger_ = nullptr;
  bool allow_tf32_ = false;
  int64_t fallbacks_ = 0;
};

}  // namespace accel::cuda
