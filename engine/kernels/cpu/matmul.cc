// Fast matmul: oneDNN's dnnl_sgemm (row-major, OpenMP-threaded) for the GEMMs, plus OpenMP
// vector loops for the bias add and the bias gradient.
//
// dnnl_sgemm rather than a dnnl::matmul primitive cached by shape: over one GPT-2 124M step's
// GEMMs at 256 tokens (12 blocks x 4 linears x fwd/dx/dw + the tied lm_head's three) on the
// 2-core AVX-512 EPYC dev VM, oneDNN 2.6.3, it took 994 ms vs 1122 ms at 1 thread and
// 537 ms vs 560 ms at 2 threads. The primitive wins only on a few shapes (fc dx, 768x3072
// NT, at 2 threads: 380 vs 240 GFLOP/s). sgemm also needs no cache keyed by shape and thread
// count, and has no creation latency.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "engine/kernels/matmul.h"
#include "engine/kernels/cpu/linear_layer.h"

namespace accel::kernels {
namespace {

// Below this many output elements the elementwise loops stay on one thread: a parallel region
// costs a few microseconds, more than the loop itself.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;

// Kernels return void, so a contract violation is a caller bug: report it and stop rather than
// let oneDNN read out of bounds.
[[noreturn]] void Die(const char* what, int64_t a, int64_t b) {
  std::fprintf(stderr, "accel::kernels::Gemm: %s (%lld vs %lld)\n", what,
               static_cast<long long>(a), static_cast<long long>(b));
  std::abort();
}

void ValidateGemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                  int64_t lda, const float* B, int64_t ldb, const float* C, int64_t ldc) {
  if (M < 0 || N < 0 || K < 0) Die("negative dimension M/N", M, N);
  if (C == nullptr) Die("C is null", M, N);
  if (ldc < std::max<int64_t>(1, N)) Die("ldc < N", ldc, N);
  if (K == 0) return;
  if (A == nullptr || B == nullptr) Die("A or B is null", M, N);
  const int64_t a_cols = trans_a ? M : K;
  const int64_t b_cols = trans_b ? K : N;
  if (lda < std::max<int64_t>(1, a_cols)) Die("lda smaller than op(A)'s stored row", lda, a_cols);
  if (ldb < std::max<int64_t>(1, b_cols)) Die("ldb smaller than op(B)'s stored row", ldb, b_cols);
}

// C = beta * C for the K == 0 case (an empty sum), which oneDNN is not asked to handle.
void ScaleC(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
#pragma omp parallel for schedule(static) if (M * N >= kParallelMinElems)
  for (int64_t i = 0; i < M; ++i) {
    float* row = C + i * ldc;
    if (beta == 0.0f) {
#pragma omp simd
      for (int64_t j = 0; j < N; ++j) row[j] = 0.0f;
    } else {
#pragma omp simd
      for (int64_t j = 0; j < N; ++j) row[j] *= beta;
    }
  }
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
  if (M == 0 || N == 0) return;
  ValidateGemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
  if (K == 0) {
    ScaleC(M, N, beta, C, ldc);
    return;
  }
  dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda,
                                B, ldb, beta, C, ldc);
  if (st != dnnl_success) {
    std::fprintf(stderr, "accel::kernels::Gemm: dnnl_sgemm failed with status %d (M=%lld N=%lld "
                 "K=%lld lda=%lld ldb=%lld ldc=%lld)\n", static_cast<int>(st),
                 static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K),
                 static_cast<long long>(lda), static_cast<long long>(ldb),
                 static_cast<long long>(ldc));
    std::abort();
  }
}

namespace {

// Gemm with alpha = 1, in the form linear_layer.h takes.
void Gemm1(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  Gemm(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

using internal::WeightLayout;

}  // namespace

void MatmulForward(float* out, const float* inp, const float* weight, const float* bias,
                   int64_t N, int64_t IC, int64_t OC) {
  internal::LinearLayerForward(Gemm1, WeightLayout::kInOut, out, inp, weight, bias, N, IC, OC);
}

void MatmulBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                    const float* inp, const float* weight, int64_t N, int64_t IC, int64_t OC) {
  internal::LinearLayerBackward(Gemm1, WeightLayout::kInOut, dinp, dweight, dbias, dout, dout,
                                inp, weight, N, IC, OC);
}

void LinearForward(float* out, const float* inp, const float* weight, const float* bias,
                   int64_t N, int64_t IC, int64_t OC) {
  internal::LinearLayerForward(Gemm1, WeightLayout::kOutIn, out, inp, weight, bias, N, IC, OC);
}

void LinearBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                    const float* inp, const float* weight, int64_t N, int64_t IC, int64_t OC) {
  internal::LinearLayerBackward(Gemm1, WeightLayout::kOutIn, dinp, dweight, dbias, dout, dout,
                                inp, weight, N, IC, OC);
}

}  // namespace accel::kernels
