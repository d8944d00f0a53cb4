// Fused softmax + cross-entropy on the device (kernels.h; contract in ../cross_entropy.h, whose
// kIgnoreIndex rows get loss 0 and a zero gradient). One
// block per row: a max and a sum-of-exponentials reduction, then (backward) one pass that writes
// dlogits over the logits it reads. Each entry is read and written by the same thread, and the
// target logit is read before the block synchronises for the last reduction, so in place is safe.
#include <cuda_runtime.h>

#include "engine/kernels/cross_entropy.h"
#include "engine/kernels/cuda/common.cuh"
#include "engine/kernels/cuda/kernels.h"

namespace accel::kernels::cuda {
namespace {

constexpr int kRowThreads = 1024;

template <bool kBackward>
__global__ void SoftmaxCrossEntropyKernel(float* dlogits, float* losses, const float* logits,
                                          const int32_t* targets, int64_t V, float dloss) {
  const int64_t row = blockIdx.x;
  const float* x = logits + row * V;
  const int64_t target = targets[row];
  if (target == kIgnoreIndex) {
    // A masked position (kernels/cross_entropy.h): no loss, no gradient. The whole block takes
    // this branch, so no barrier is left waiting.
    if (threadIdx.x == 0) losses[row] = 0.0f;
    if constexpr (kBackward) {
      float* d = dlogits + row * V;
      for (int64_t j = threadIdx.x; j < V; j += blockDim.x) d[j] = 0.0f;
    }
    return;
  }
  float local_max = -INFINITY;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) local_max = fmaxf(local_max, x[j]);
  const float row_max = BlockReduce<float, true>(local_max);
  float local_sum = 0;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) local_sum += expf(x[j] - row_max);
  const float target_logit = x[target];  // before the barrier inside the next reduction
  const float sum = BlockReduce<float, false>(local_sum);
  if (threadIdx.x == 0) losses[row] = logf(sum) + row_max - target_logit;
  if constexpr (kBackward) {
    float* d = dlogits + row * V;
    const float inv_sum = 1.0f / sum;
    for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
      const float p = expf(x[j] - row_max) * inv_sum;
      d[j] = dloss * (p - (j == target ? 1.0f : 0.0f));
    }
  }
}

absl::Status Launch(bool backward, float* dlogits, float* losses, const float* logits,
                    const int32_t* targets, int64_t N, int64_t V, float dloss,
                    cudaStream_t stream) {
  const char* op = backward ? "SoftmaxCrossEntropyBackward" : "SoftmaxCrossEntropyForward";
  if (absl::Status s = CheckSizes(op, {N, V}); !s.ok()) return s;
  if (N == 0) return absl::OkStatus();
  if (V == 0) return absl::InvalidArgumentError(absl::StrCat(op, ": empty vocabulary"));
  if (N > 0x7fffffff) return absl::InvalidArgumentError(absl::StrCat(op, ": ", N, " rows"));
  // Small vocabularies do not need a thousand threads per row.
  const int threads = static_cast<int>(std::min<int64_t>(kRowThreads, (V + 31) / 32 * 32));
  if (backward) {
    SoftmaxCrossEntropyKernel<true><<<static_cast<unsigned>(N), threads, 0, stream>>>(
        dlogits, losses, logits, targets, V, dloss);
  } else {
    SoftmaxCrossEntropyKernel<false><<<static_cast<unsigned>(N), threads, 0, stream>>>(
        nullptr, losses, logits, targets, V, dloss);
  }
  return ACCEL_CUDA_LAUNCH_STATUS("SoftmaxCrossEntropyKernel");
}

}  // namespace

absl::Status SoftmaxCrossEntropyForward(float* losses, const float* logits, const int32_t* targets,
                                        int64_t N, int64_t V, cudaStream_t stream) {
  return Launch(false, nullptr, losses, logits, targets, N, V, 0.0f, stream);
}

absl::Status SoftmaxCrossEntropyBackward(float* dlogits, float* losses, const float* logits,
                                         const int32_t* targets, int64_t N, int64_t V,
                                         float dloss, cudaStream_t stream) {
  return Launch(true, dlogits, losses, logits, targets, N, V, dloss, stream);
}

}  // namespace accel::kernels::cuda
