#include "engine/kernels/cuda/blas.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/cuda/bias_add.h"
#include "engine/tensor/cuda/device.h"

namespace accel::cuda {
namespace {

absl::Status CublasStatus(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  std::string msg = absl::StrCat(call, " failed at ", file, ":", line, ": ",
                                 cublasGetStatusName(s), " (", cublasGetStatusString(s), ")");
  if (s == CUBLAS_STATUS_INVALID_VALUE || s == CUBLAS_STATUS_NOT_SUPPORTED) {
    return absl::InvalidArgumentError(msg);
  }
  if (s == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

#define ACCEL_CUBLAS_RETURN_IF_ERROR(call)                                        \
  do {                                                                            \
    ::absl::Status accel_cublas_status_ = CublasStatus((call), #call, __FILE__, __LINE__); \
    if (!accel_cublas_status_.ok()) return accel_cublas_status_;                  \
  } while (0)

// Descriptors are released on every path out of Gemm.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

absl::StatusOr<cudaDataType_t> CudaType(DType d) {
  switch (d) {
    case DType::kF32: return CUDA_R_32F;
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kF16: return CUDA_R_16F;
  }
  return absl::InvalidArgumentError("unknown dtype");
}

bool SupportedTypes(GemmTypes t) {
  if (t.ab == DType::kF32) return t.c == DType::kF32;
  return t.c == DType::kF32 || t.c == t.ab;
}

// The largest power of two (<= 256) dividing the address: what cuBLASLt may assume of it.
uint32_t Alignment(const void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && (u % a) != 0) a /= 2;
  return a;
}

std::string Shape(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                  int64_t ldc) {
  return absl::StrCat("gemm(", ta ? "T" : "N", tb ? "T" : "N", ", M=", M, ", N=", N, ", K=", K,
                      ", lda=", lda, ", ldb=", ldb, ", ldc=", ldc, ")");
}

absl::Status CheckShape(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda,
                        int64_t ldb, int64_t ldc) {
  const bool ok = M >= 0 && N >= 0 && K > 0 && lda >= std::max<int64_t>(1, ta ? M : K) &&
                  ldb >= std::max<int64_t>(1, tb ? K : N) && ldc >= std::max<int64_t>(1, N);
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shape(ta, tb, M, N, K, lda, ldb, ldc),
                     ": sizes must be >= 0 (K > 0) and each leading dimension at least its row"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Blas>> Blas::Create(MemoryLedger* ledger, int64_t workspace_bytes) {
  std::unique_ptr<Blas> blas(new Blas());
  cublasLtHandle_t lt = nullptr;
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&lt));
  blas->lt_ = lt;
  cublasHandle_t h = nullptr;
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasCreate(&h));
  blas->cublas_ = h;
  if (workspace_bytes > 0) {
    ACCEL_CUDA_RETURN_IF_ERROR(cudaMalloc(&blas->workspace_, static_cast<size_t>(workspace_bytes)));
    blas->workspace_bytes_ = workspace_bytes;
    blas->ledger_ = ledger;
    if (ledger != nullptr) ledger->Charge(MemoryPool::kDevice, MemoryCategory::kOther, workspace_bytes);
  }
  return blas;
}

Blas::~Blas() {
  if (workspace_ != nullptr) {
    (void)cudaFree(workspace_);
    if (ledger_ != nullptr) {
      ledger_->Release(MemoryPool::kDevice, MemoryCategory::kOther, workspace_bytes_);
    }
  }
  if (cublas_ != nullptr) cublasDestroy(static_cast<cublasHandle_t>(cublas_));
  if (lt_ != nullptr) cublasLtDestroy(static_cast<cublasLtHandle_t>(lt_));
}

absl::Status Blas::Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                        const void* A, int64_t lda, const void* B, int64_t ldb, float beta,
                        void* C, int64_t ldc, const void* bias, GemmTypes types,
                        cudaStream_t stream) {
  if (absl::Status s = CheckShape(trans_a, trans_b, M, N, K, lda, ldb, ldc); !s.ok()) return s;
  if (!SupportedTypes(types)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shape(trans_a, trans_b, M, N, K, lda, ldb, ldc), ": unsupported types A/B ",
                     std::string(DTypeName(types.ab)), ", C ", std::string(DTypeName(types.c))));
  }
  if (M == 0 || N == 0) return absl::OkStatus();
  const cudaDataType_t ab_type = *CudaType(types.ab);
  const cudaDataType_t c_type = *CudaType(types.c);
  const cublasComputeType_t compute =
      types.ab == DType::kF32 && allow_tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;

  // Column-major view: Cᵀ (N×M) = op(B)ᵀ (N×K) · op(A)ᵀ (K×M); cuBLAS's "A" is our B.
  LtDescriptors d;
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&d.op, compute, CUDA_R_32F));
  const cublasOperation_t op_first = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
      d.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
      d.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)));
  if (bias != nullptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  // Stored shapes (rows × cols, column-major) of the two operands as cuBLAS sees them.
  const uint64_t first_rows = trans_b ? K : N, first_cols = trans_b ? N : K;
  const uint64_t second_rows = trans_a ? M : K, second_cols = trans_a ? K : M;
  ACCEL_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&d.a, ab_type, first_rows, first_cols, ldb));
  ACCEL_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&d.b, ab_type, second_rows, second_cols, lda));
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&d.c, c_type, N, M, ldc));

  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&d.pref));
  const uint64_t ws = static_cast<uint64_t>(workspace_bytes_);
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
      d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  // Tell the heuristic how aligned the pointers really are (it assumes 256 bytes otherwise).
  const uint32_t align_first = Alignment(B), align_second = Alignment(A), align_c = Alignment(C);
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
      d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_first, sizeof(uint32_t)));
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
      d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_second, sizeof(uint32_t)));
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
      d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(uint32_t)));
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
      d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(uint32_t)));

  auto lt = static_cast<cublasLtHandle_t>(lt_);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulAlgoGetHeuristic(lt, d.op, d.a, d.b, d.c, d.c,
                                                              d.pref, 1, &result, &found));
  if (found > 0) {
    const cublasStatus_t st = cublasLtMatmul(lt, d.op, &alpha, B, d.a, A, d.b, &beta, C, d.c, C,
                                             d.c, &result.algo, workspace_, workspace_bytes_,
                                             stream);
    if (st != CUBLAS_STATUS_NOT_SUPPORTED) {
      ACCEL_CUBLAS_RETURN_IF_ERROR(st);
      return absl::OkStatus();
    }
  }
  // cuBLASLt has no kernel for these shapes or alignments (odd leading dimensions of 16-bit
  // types, say): the classic cuBLAS GEMM handles any layout; the bias is then a separate kernel.
  ++fallbacks_;
  for (int64_t v : {M, N, K, lda, ldb, ldc}) {
    if (v > INT_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(
          Shape(trans_a, trans_b, M, N, K, lda, ldb, ldc),
          ": cuBLASLt has no algorithm and a size exceeds cuBLAS's int range"));
    }
  }
  auto h = static_cast<cublasHandle_t>(cublas_);
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasSetStream(h, stream));
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(
      h, op_first, op_second, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K),
      &alpha, B, ab_type, static_cast<int>(ldb), A, ab_type, static_cast<int>(lda), &beta, C,
      c_type, static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT));
  if (bias != nullptr) {
    ACCEL_RETURN_IF_ERROR(kernels::cuda::AddBiasRows(C, bias, M, N, ldc, types.c, stream));
  }
  return absl::OkStatus();
}

absl::Status Blas::GemmStridedBatched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                                      float alpha, const float* A, int64_t lda, int64_t stride_a,
                                      const float* B, int64_t ldb, int64_t stride_b, float beta,
                                      float* C, int64_t ldc, int64_t stride_c, int64_t batch,
                                      cudaStream_t stream) {
  if (absl::Status s = CheckShape(trans_a, trans_b, M, N, K, lda, ldb, ldc); !s.ok()) return s;
  if (batch < 0) return absl::InvalidArgumentError(absl::StrCat("batch ", batch, " < 0"));
  for (int64_t v : {M, N, K, lda, ldb, ldc, batch}) {
    if (v > INT_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(
          Shape(trans_a, trans_b, M, N, K, lda, ldb, ldc), ": a size exceeds cuBLAS's int range"));
    }
  }
  if (M == 0 || N == 0 || batch == 0) return absl::OkStatus();
  auto h = static_cast<cublasHandle_t>(cublas_);
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasSetStream(h, stream));
  const cublasComputeType_t compute =
      allow_tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  ACCEL_CUBLAS_RETURN_IF_ERROR(cublasGemmStridedBatchedEx(
      h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, B, CUDA_R_32F,
      static_cast<int>(ldb), stride_b, A, CUDA_R_32F, static_cast<int>(lda), stride_a, &beta, C,
      CUDA_R_32F, static_cast<int>(ldc), stride_c, static_cast<int>(batch), compute,
      CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

}  // namespace accel::cuda
