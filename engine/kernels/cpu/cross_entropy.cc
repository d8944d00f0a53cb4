// Fast fused softmax cross-entropy: OpenMP over rows, vector loops along the vocabulary.
//
// A row (V = 50257 floats, 200 KB) stays in L2 across its passes: max, Σ exp, and in the
// backward the write of dloss * (p - onehot). exp is our own vectorisable one: glibc declares its
// vector expf only under -ffast-math, which we do not use, and a scalar expf call per logit would
// cost more than the rest of the kernel. The file is compiled with -fno-trapping-math
// (engine/kernels/CMakeLists.txt), without which GCC 12 keeps VecExp's clamps as branches and
// the exp loops scalar.
#include "engine/kernels/cross_entropy.h"
#include "engine/kernels/cpu/vec_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace accel::kernels {
using cpu::VecExp;
namespace {

// Below this many logits the kernels stay on one thread: a parallel region costs a few
// microseconds.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;

struct RowStats {
  float max;
  float sum_exp;  // Σ exp(logit - max)
};

float RowMax(const float* row, int64_t V) {
  float max = -INFINITY;
#pragma omp simd reduction(max : max)
  for (int64_t j = 0; j < V; ++j) max = max > row[j] ? max : row[j];
  return max;
}

// Sums are in double: a float sum over 50257 terms in 8 AVX2 lanes drifts by ~5e-5 relative,
// which the backward's (p - onehot) turns into a visible bias (Σ dlogits != 0).
RowStats ComputeRowStats(const float* row, int64_t V) {
  const float max = RowMax(row, V);
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < V; ++j) sum += static_cast<double>(VecExp(row[j] - max));
  return {max, static_cast<float>(sum)};
}

// out[j] = exp(row[j] - max) (out may be row), and returns the row's stats. Each element is read
// before it is written, which `omp simd` preserves, so in place is safe and the loop needs no
// aliasing check.
RowStats ExpRow(float* out, const float* row, int64_t V) {
  const float max = RowMax(row, V);
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < V; ++j) {
    const float e = VecExp(row[j] - max);
    out[j] = e;
    sum += static_cast<double>(e);
  }
  return {max, static_cast<float>(sum)};
}

}  // namespace

void SoftmaxCrossEntropyForward(float* losses, const float* logits, const int32_t* targets,
                                int64_t N, int64_t V) {
#pragma omp parallel for schedule(static) if (N * V >= kParallelMinElems)
  for (int64_t i = 0; i < N; ++i) {
    if (targets[i] == kIgnoreIndex) {
      losses[i] = 0.0f;
      continue;
    }
    const float* row = logits + i * V;
    const RowStats st = ComputeRowStats(row, V);
    losses[i] = std::log(st.sum_exp) + st.max - row[targets[i]];
  }
}

void SoftmaxCrossEntropyBackward(float* dlogits, float* losses, const float* logits,
                                 const int32_t* targets, int64_t N, int64_t V, float dloss) {
#pragma omp parallel for schedule(static) if (N * V >= kParallelMinElems)
  for (int64_t i = 0; i < N; ++i) {
    const float* row = logits + i * V;
    float* drow = dlogits + i * V;
    if (targets[i] == kIgnoreIndex) {
      losses[i] = 0.0f;
      std::fill(drow, drow + V, 0.0f);
      continue;
    }
    const int64_t target = targets[i];
    // Read before the row is overwritten: drow may be row.
    const float target_logit = row[target];
    // One exp per logit, kept in drow and scaled in place (the same float products as
    // scale * exp computed twice, at half the exps).
    const RowStats st = ExpRow(drow, row, V);
    losses[i] = std::log(st.sum_exp) + st.max - target_logit;
    const float scale = dloss / st.sum_exp;
#pragma omp simd
    for (int64_t j = 0; j < V; ++j) drow[j] *= scale;
    drow[target] -= dloss;
  }
}

}  // namespace accel::kernels
