// Fast token + position embedding: OpenMP over rows for the forward; the backward splits the
// work so that no two threads ever add into the same element, even when tokens repeat.
#include "engine/kernels/embedding.h"

#include <algorithm>
#include <cstdint>

namespace accel::kernels {
namespace {

// Below this many output elements the loops stay on one thread: a parallel region costs a few
// microseconds, more than the loop itself.
constexpr int64_t kParallelMinElems = int64_t{1} << 15;
// Columns per dwte task: one 64-byte cache line (for aligned rows with C a multiple of 16, so
// threads do not share lines of dwte), and 768 columns make 48 tasks to balance over threads.
constexpr int64_t kColumnBlock = 16;

}  // namespace

void EmbeddingForward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                      int64_t B, int64_t T, int64_t C) {
#pragma omp parallel for schedule(static) if (B * T * C >= kParallelMinElems)
  for (int64_t bt = 0; bt < B * T; ++bt) {
    float* out_bt = out + bt * C;
    const float* wte_row = wte + static_cast<int64_t>(tokens[bt]) * C;
    const float* wpe_row = wpe + (bt % T) * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) out_bt[c] = wte_row[c] + wpe_row[c];
  }
}

// dwpe: each position t is owned by one task, which sums over the batch. dwte: repeated tokens
// add into the same row, so tasks own column blocks instead and walk every (b, t) in order.
void EmbeddingBackward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                       int64_t B, int64_t T, int64_t C) {
  const bool parallel = B * T * C >= kParallelMinElems;
#pragma omp parallel if (parallel)
  {
#pragma omp for schedule(static) nowait
    for (int64_t t = 0; t < T; ++t) {
      float* dwpe_row = dwpe + t * C;
      for (int64_t b = 0; b < B; ++b) {
        const float* dout_bt = dout + (b * T + t) * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) dwpe_row[c] += dout_bt[c];
      }
    }
    const int64_t num_blocks = (C + kColumnBlock - 1) / kColumnBlock;
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < num_blocks; ++blk) {
      const int64_t c0 = blk * kColumnBlock;
      const int64_t c1 = std::min(C, c0 + kColumnBlock);
      for (int64_t bt = 0; bt < B * T; ++bt) {
        float* dwte_row = dwte + static_cast<int64_t>(tokens[bt]) * C;
        const float* dout_bt = dout + bt * C;
#pragma omp simd
        for (int64_t c = c0; c < c1; ++c) dwte_row[c] += dout_bt[c];
      }
    }
  }
}

}  // namespace accel::kernels
