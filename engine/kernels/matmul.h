// Matrix multiplication. All matrices are row-major fp32.
//
// Gemm is the primitive: C = alpha * op(A) * op(B) + beta * C with op(X) = X or Xᵀ,
// op(A) (M, K), op(B) (K, N), C (M, N); lda/ldb/ldc are row strides of the stored matrices.
// beta == 0 overwrites C (never reads it, so C may hold NaN garbage).
//
// MatmulForward/Backward are the linear layer in Hugging Face's Conv1D orientation (GPT-2): the
// weight is stored (IC, OC) and out = inp · weight + bias. LinearForward/Backward are the same
// layer in PyTorch's nn.Linear orientation (Llama, Mistral, Qwen2): the weight is stored
// (OC, IC) and out = inp · weightᵀ + bias; on the fast path both are one Gemm per product, the
// orientation being a transpose flag.
//
// Two implementations with the same signatures: kernels::ref (plain loops, the oracle) and
// kernels:: (oneDNN's dnnl_sgemm; multi-threaded through OpenMP, see threading.h).
#pragma once

#include <cstdint>

namespace accel::kernels {

#define ACCEL_MATMUL_KERNELS                                                                    \
  void Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,           \
            const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,     \
            int64_t ldc);                                                                       \
  /* out (N, OC) = inp (N, IC) · weight (IC, OC) + bias (OC); bias may be null. */              \
  void MatmulForward(float* out, const float* inp, const float* weight, const float* bias,      \
                     int64_t N, int64_t IC, int64_t OC);                                        \
  /* Accumulates (+=): dinp (N, IC) += dout · weightᵀ; dweight (IC, OC) += inpᵀ · dout;       \
     dbias (OC) += column sums of dout. Any of dinp, dweight, dbias may be null (skipped). */   \
  void MatmulBackward(float* dinp, float* dweight, float* dbias, const float* dout,             \
                      const float* inp, const float* weight, int64_t N, int64_t IC, int64_t OC); \
  /* out (N, OC) = inp (N, IC) · weight (OC, IC)ᵀ + bias (OC); bias may be null. */             \
  void LinearForward(float* out, const float* inp, const float* weight, const float* bias,      \
                     int64_t N, int64_t IC, int64_t OC);                                        \
  /* Accumulates (+=): dinp (N, IC) += dout · weight; dweight (OC, IC) += doutᵀ · inp;         \
     dbias (OC) += column sums of dout. Any of dinp, dweight, dbias may be null (skipped). */   \
  void LinearBackward(float* dinp, float* dweight, float* dbias, const float* dout,             \
                      const float* inp, const float* weight, int64_t N, int64_t IC, int64_t OC);

ACCEL_MATMUL_KERNELS
namespace ref {
ACCEL_MATMUL_KERNELS
}  // namespace ref

}  // namespace accel::kernels
