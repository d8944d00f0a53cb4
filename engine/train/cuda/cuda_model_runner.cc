#include "engine/train/cuda/cuda_model_runner.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/model/cuda/gpt2_cuda.h"

namespace accel::train {
namespace {

class CudaModelRunner final : public ModelRunner {
 public:
  CudaModelRunner(const model::ModelLayout* layout, cuda::Blas* blas, cudaStream_t stream,
                  model::Gpt2CudaActivations acts)
      : model_(layout, blas, stream), acts_(std::move(acts)) {}

  absl::StatusOr<float> Forward(model::ParamAccess& params, const int32_t* inputs,
                                const int32_t* targets) override {
    return model_.Forward(params, inputs, targets, acts_);
  }
  // The device keeps the tokens Forward uploaded: inputs and targets are not needed again.
  absl::Status Backward(model::ParamAccess& params, const int32_t*, const int32_t*,
                        float dloss) override {
    return model_.Backward(params, acts_, dloss);
  }

 private:
  model::Gpt2Cuda model_;
  model::Gpt2CudaActivations acts_;
};

}  // namespace

ModelRunnerFactory CudaModelRunnerFactory(cuda::Blas* blas, cuda::CachingAllocator* allocator,
                                          cudaStream_t stream) {
  return [=](const model::ModelLayout* layout,
             const ModelRunnerOptions& o) -> absl::StatusOr<ModelRunnerResult> {
    if (layout->config().gpt2() == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          "model ", layout->config().name(), " (", layout->config().model_type(),
          ") trains on CPU ranks only so far: the Llama-family CUDA kernels exist "
          "(engine/kernels/cuda), the CUDA model does not yet"));
    }
    if (o.checkpoint_blocks) {
      return absl::UnimplementedError(
          "activation checkpointing is not implemented on CUDA ranks yet (it is on CPU ranks); "
          "turn off fsdp_activation_checkpointing / activation_checkpointing");
    }
    // Activations are charged to the allocator's ledger (the trainer's), like every block.
    ACCEL_ASSIGN_OR_RETURN(model::Gpt2CudaActivations acts,
                           model::Gpt2CudaActivations::Create(*layout->config().gpt2(), o.batch, o.seq,
                                                              allocator, stream, o.bf16_params));
    ModelRunnerResult result;
    result.runner = std::make_unique<CudaModelRunner>(layout, blas, stream, std::move(acts));
    result.bf16_matmuls = o.bf16_params;
    return result;
  };
}

}  // namespace accel::train
