// Plain-loop oracle for the causal softmax of attention scores (see engine/kernels/softmax.h),
// accumulated in double.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/kernels/softmax.h"

namespace accel::kernels::ref {

void CausalSoftmaxForward(float* att, int64_t T, int64_t r0, int64_t r1, int64_t window) {
  for (int64_t t = r0; t < r1; ++t) {
    float* row = att + (t - r0) * T;
    const int64_t lo = window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
    double max = -INFINITY;
    for (int64_t j = lo; j <= t; ++j) max = std::max(max, static_cast<double>(row[j]));
    double sum = 0.0;
    for (int64_t j = lo; j <= t; ++j) sum += std::exp(row[j] - max);
    for (int64_t j = 0; j < T; ++j) {
      row[j] = j >= lo && j <= t ? static_cast<float>(std::exp(row[j] - max) / sum) : 0.0f;
    }
  }
}

void CausalSoftmaxBackward(float* ds, const float* att, int64_t T, int64_t r0, int64_t r1,
                           float scale) {
  for (int64_t t = r0; t < r1; ++t) {
    const float* a = att + (t - r0) * T;
    float* d = ds + (t - r0) * T;
    double w = 0.0;
    for (int64_t j = 0; j <= t; ++j) w += static_cast<double>(a[j]) * d[j];
    for (int64_t j = 0; j <= t; ++j) d[j] = static_cast<float>(scale * a[j] * (d[j] - w));
    for (int64_t j = t + 1; j < r1; ++j) d[j] = 0.0f;
  }
}

}  // namespace accel::kernels::ref
