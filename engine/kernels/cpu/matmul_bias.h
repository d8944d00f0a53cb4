// The linear layer's bias loops, shared by the fp32 (matmul.cc) and bf16 (matmul_bf16.cc) fast
// paths: OpenMP over rows for the add, over column blocks for the gradient's column sums.
#pragma once

#include <algorithm>
#include <cstdint>

namespace accel::kernels::internal {

// Below this many output elements the loops stay on one thread: a parallel region costs a few
// microseconds, more than the loop itself.
inline constexpr int64_t kBiasParallelMinElems = int64_t{1} << 15;
// Columns per dbias task: small enough to balance 768 columns over a few threads, wide enough
// for whole cache lines and a vector loop.
inline constexpr int64_t kBiasColumnBlock = 64;

// out (N, OC) += bias (OC) on every row.
inline void AddBiasRows(float* out, const float* bias, int64_t N, int64_t OC) {
#pragma omp parallel for schedule(static) if (N * OC >= kBiasParallelMinElems)
  for (int64_t n = 0; n < N; ++n) {
    float* row = out + n * OC;
#pragma omp simd
    for (int64_t o = 0; o < OC; ++o) row[o] += bias[o];
  }
}

// dbias (OC) += column sums of dout (N, OC).
inline void AccumulateBiasGrad(float* dbias, const float* dout, int64_t N, int64_t OC) {
  if (N <= 0 || OC <= 0) return;
  const int64_t blocks = (OC + kBiasColumnBlock - 1) / kBiasColumnBlock;
#pragma omp parallel for schedule(static) if (N * OC >= kBiasParallelMinElems)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t o0 = b * kBiasColumnBlock;
    const int64_t width = std::min(kBiasColumnBlock, OC - o0);
    float acc[kBiasColumnBlock] = {};
    for (int64_t n = 0; n < N; ++n) {
      const float* row = dout + n * OC + o0;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) acc[j] += row[j];
    }
    for (int64_t j = 0; j < width; ++j) dbias[o0 + j] += acc[j];
  }
}

}  // namespace accel::kernels::internal
