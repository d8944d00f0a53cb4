// Fast LayerNorm: OpenMP over rows, vector loops along C, the forward's row sums in several
// accumulators (cpu::LaneSum). The backward's dweight and dbias are
// sums over rows: each thread accumulates its rows into a private (2, C) partial, and the
// partials are added up afterwards, so there are no races and, for a fixed thread count, the
// result is deterministic.
#include "engine/kernels/layernorm.h"

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

void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                      const float* bias, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static) if (N * C >= kParallelMinElems)
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    const float sum = LaneSum<float>(C, [x](int64_t c) { return x[c]; });
    const float m = sum / static_cast<float>(C);
    // Two passes (mean, then squared deviations) rather than E[x²] - m², which cancels.
    const float sq = LaneSum<float>(C, [x, m](int64_t c) { return (x[c] - m) * (x[c] - m); });
    const float s = 1.0f / std::sqrt(sq / static_cast<float>(C) + kLayerNormEps);
    float* y = out + i * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

// With xhat = (x - mean) * rstd and g = weight * dout:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
void LayerNormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, const float* mean, const float* rstd,
                       int64_t N, int64_t C) {
  const bool parallel = N * C >= kParallelMinElems;
  const int max_threads = parallel ? omp_get_max_threads() : 1;
  // (threads, 2, C): dweight then dbias partials per thread.
  std::vector<float> partials(static_cast<size_t>(max_threads) * 2 * C, 0.0f);
#pragma omp parallel if (parallel)
  {
    float* dw = partials.data() + static_cast<int64_t>(omp_get_thread_num()) * 2 * C;
    float* db = dw + C;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      const float* x = inp + i * C;
      const float* dy = dout + i * C;
      const float m = mean[i];
      const float s = rstd[i];
      // One pass, two accumulators whose chains interleave (two LaneSum passes measured slower).
      float g_sum = 0.0f, g_xhat_sum = 0.0f;
#pragma omp simd reduction(+ : g_sum, g_xhat_sum)
      for (int64_t c = 0; c < C; ++c) {
        const float g = weight[c] * dy[c];
        g_sum += g;
        g_xhat_sum += g * ((x[c] - m) * s);
      }
      const float g_mean = g_sum / static_cast<float>(C);
      const float g_xhat_mean = g_xhat_sum / static_cast<float>(C);
      float* dx = dinp + i * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        const float xhat = (x[c] - m) * s;
        dx[c] += s * (weight[c] * dy[c] - g_mean - xhat * g_xhat_mean);
        dw[c] += xhat * dy[c];
        db[c] += dy[c];
      }
    }
  }
  // Thread 0's partial collects the others' (a few thousand adds: not worth a parallel region).
  float* total = partials.data();
  for (int t = 1; t < max_threads; ++t) {
    const float* part = partials.data() + static_cast<int64_t>(t) * 2 * C;
#pragma omp simd
    for (int64_t c = 0; c < 2 * C; ++c) total[c] += part[c];
  }
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) {
    dweight[c] += total[c];
    dbias[c] += total[C + c];
  }
}

}  // namespace accel::kernels
