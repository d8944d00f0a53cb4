// A GPT-2 124M training step on one GPU built from the CUDA kernels alone (no engine model or
// trainer yet), for throughput: B = 16, T = 1024, bf16 matmul inputs with fp32 accumulation and
// fp32 outputs, fp32 everything else (LayerNorm, attention, GELU, residuals, softmax + CE, AdamW
// on fp32 master weights writing the bf16 copies). Random tokens and targets.
//
// Prints ms per step, tokens/s and MFU against 989 TFLOP/s (H200 dense bf16), counting
//   FLOPs per token = 6·N + 6·L·C·T      (N = 124,439,808 parameters, L = 12, C = 768, T = 1024)
// — the same rule as accel_bench_train: 6·N for the matmuls forward and backward, plus the
// attention products with causality (half of the 12·L·C·T of full attention). The GEMMs really
// compute the full T×T scores, so the device does more work than is counted. The vocabulary is
// padded to 50304 (a multiple of 128); the padded logits take part in the softmax here.
// Also prints the mean loss of the first and last step (random data: it should start near
// ln 50304 ≈ 10.8 and stay finite).
#pragma once

#include <cuda_runtime_api.h>

#include "absl/status/status.h"

namespace accel::bench {

[[nodiscard]] absl::Status RunGpt2Step(cudaStream_t stream, int steps);

}  // namespace accel::bench
