// The CUDA runners of the architecture registry (registry.h): one per family whose entry lists
// "cuda" in its devices — GPT-2's Gpt2Cuda today. Built only with the CUDA path; the entries'
// `devices` answer the same question in every build (cuda_runners_test.cc checks the two agree).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "engine/kernels/cuda/blas.h"
#include "engine/model/model_runner.h"
#include "engine/model/registry.h"
#include "engine/tensor/cuda/caching_allocator.h"

namespace accel::model {

// What a CUDA runner is made for. Not owning: `blas`, `allocator` and `stream` outlive the runner.
struct CudaRunnerOptions {
  int64_t batch = 0, seq = 0;
  bool bf16_matmuls = false;  // multiply with ParamAccess::ParamsBf16 (tensor cores)
  cuda::Blas* blas = nullptr;
  cuda::CachingAllocator* allocator = nullptr;  // activations are charged to its ledger
  cudaStream_t stream = nullptr;
};

using CudaRunnerFactory = std::function<absl::StatusOr<std::unique_ptr<ModelRunner>>(
    const ModelLayout* layout, const CudaRunnerOptions& options)>;

// The family's CUDA runner, or null where it has none.
const CudaRunnerFactory* FindCudaRunner(const Architecture& family);

}  // namespace accel::model
