// Fast RMSNorm: OpenMP over rows, vector loops along C. The mean of squares is a double
// reduction (a vector loop too, in several accumulators, cpu::LaneSum: with one it was bound by
// the add's latency). The backward's dweight is a sum over rows: each thread accumulates its rows
// into a private (C) partial and the partials are added up afterwards, so there are no races
// and, for a fixed thread count, the result is deterministic.
#include "engine/kernels/rmsnorm.h"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/kernels/cpu/vec_math.h"

namespace accel::kernels {
using cpu::LaneSum;
namespace {

// Below this many elements the loops stay on one thread: a parallel region costs a few
// microseconds, more than the loop itself.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;

}  // namespace

void RmsNormForward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                    int64_t C, float eps) {
#pragma omp parallel for schedule(static) if (N * C >= kParallelMinElems)
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    const double sq =
        LaneSum<double>(C, [x](int64_t c) { return static_cast<double>(x[c]) * x[c]; });
    const float s = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(C) + eps));
    float* y = out + i * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) y[c] = (x[c] * s) * weight[c];
    rstd[i] = s;
  }
}

// With r = rstd, xhat = x * r and g = weight * dout: dx = r * (g - xhat * mean(g * xhat)).
void RmsNormBackward(float* dinp, float* dweight, const float* dout, const float* inp,
                     const float* weight, const float* rstd, int64_t N, int64_t C) {
  const bool parallel = N * C >= kParallelMinElems;
  const int max_threads = parallel ? omp_get_max_threads() : 1;
  std::vector<float> partials(static_cast<size_t>(max_threads) * C, 0.0f);  // (threads, C)
#pragma omp parallel if (parallel)
  {
    float* dw = partials.data() + static_cast<int64_t>(omp_get_thread_num()) * C;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      const float* x = inp + i * C;
      const float* dy = dout + i * C;
      const float s = rstd[i];
      const float g_xhat_sum =
          LaneSum<float>(C, [=](int64_t c) { return weight[c] * dy[c] * (x[c] * s); });
      const float g_xhat_mean = g_xhat_sum / static_cast<float>(C);
      float* dx = dinp + i * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        const float xhat = x[c] * s;
        dx[c] += s * (weight[c] * dy[c] - xhat * g_xhat_mean);
        dw[c] += xhat * dy[c];
      }
    }
  }
  // Thread 0's partial collects the others' (a few thousand adds: not worth a parallel region).
  float* total = partials.data();
  for (int t = 1; t < max_threads; ++t) {
    const float* part = partials.data() + static_cast<int64_t>(t) * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) total[c] += part[c];
  }
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) dweight[c] += total[c];
}

}  // namespace accel::kernels
