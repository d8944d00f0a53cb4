#include "engine/train/cuda/cuda_model_runner.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/base/status_macros.h"
#include "engine/model/cuda/cuda_runners.h"

namespace accel::train {

ModelRunnerFactory CudaModelRunnerFactory(cuda::Blas* blas, cuda::CachingAllocator* allocator,
                                          cudaStream_t stream) {
  return [=](const model::ModelLayout* layout,
             const ModelRunnerOptions& o) -> absl::StatusOr<ModelRunnerResult> {
    const model::ModelConfig& config = layout->config();
    const model::CudaRunnerFactory* make = model::FindCudaRunner(config.architecture());
    if (make == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("model ", config.name(), " (", config.model_type(),
                       ") trains on CPU ranks only so far: its architecture (",
                       config.architecture().name, ") has no CUDA model yet; CUDA models: ",
                       absl::StrJoin(model::FamiliesOn("cuda"), ", ")));
    }
    if (o.checkpoint_blocks) {
      return absl::UnimplementedError(
          "activation checkpointing is not implemented on CUDA ranks yet (it is on CPU ranks); "
          "turn off fsdp_activation_checkpointing / activation_checkpointing");
    }
    // Activations are charged to the allocator's ledger (the trainer's), like every block.
    ModelRunnerResult result;
    ACCEL_ASSIGN_OR_RETURN(result.runner, (*make)(layout, {.batch = o.batch,
                                                           .seq = o.seq,
                                                           .bf16_matmuls = o.bf16_params,
                                                           .blas = blas,
                                                           .allocator = allocator,
                                                           .stream = stream}));
    result.bf16_matmuls = o.bf16_params;
    return result;
  };
}

}  // namespace accel::train
