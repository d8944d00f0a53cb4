// Fast causal softmax of attention scores: vector loops along a row (at most T floats, in L1
// across the passes). The exp is our own vectorisable one (vec_math.h); the file is compiled with
// -fno-trapping-math (engine/kernels/CMakeLists.txt), without which GCC 12 keeps VecExp's clamps
// as branches and the exp loop scalar.
#include "engine/kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/kernels/cpu/vec_math.h"

namespace accel::kernels {
using cpu::VecExp;
namespace {

// In place: row[0, len) becomes softmax(row[0, len)).
void SoftmaxRow(float* row, int64_t len) {
  float max = -INFINITY;
#pragma omp simd reduction(max : max)
  for (int64_t j = 0; j < len; ++j) max = max > row[j] ? max : row[j];
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < len; ++j) {
    row[j] = VecExp(row[j] - max);
    sum += row[j];
  }
  const float inv_sum = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j < len; ++j) row[j] *= inv_sum;
}

}  // namespace

void CausalSoftmaxForward(float* att, int64_t T, int64_t r0, int64_t r1, int64_t window) {
  for (int64_t t = r0; t < r1; ++t) {
    float* row = att + (t - r0) * T;
    const int64_t lo = window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
    std::fill(row, row + lo, 0.0f);
    SoftmaxRow(row + lo, t + 1 - lo);
    std::fill(row + t + 1, row + T, 0.0f);
  }
}

void CausalSoftmaxBackward(float* ds, const float* att, int64_t T, int64_t r0, int64_t r1,
                           float scale) {
  for (int64_t t = r0; t < r1; ++t) {
    const float* a = att + (t - r0) * T;
    float* d = ds + (t - r0) * T;
    const int64_t len = t + 1;
    // One accumulator: rows are at most T long (cpu::LaneSum measured no faster here).
    float w = 0.0f;
#pragma omp simd reduction(+ : w)
    for (int64_t j = 0; j < len; ++j) w += a[j] * d[j];
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) d[j] = scale * a[j] * (d[j] - w);
    std::fill(d + len, d + r1, 0.0f);
  }
}

}  // namespace accel::kernels
