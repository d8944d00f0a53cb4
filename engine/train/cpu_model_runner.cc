// The CPU's ModelRunner: the model of the layout's architecture (Gpt2 or Llama) over the fast
// kernels, with its activations (model_runner.h).
#include <memory>

#include "engine/base/status_macros.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/model/gpt2.h"
#include "engine/model/llama.h"
#include "engine/train/model_runner.h"

namespace accel::train {
namespace {

// One runner for any model with Forward/Backward over its own activations type.
template <typename Model, typename Activations>
class CpuModelRunner final : public ModelRunner {
 public:
  CpuModelRunner(const model::ModelLayout* layout, Activations acts)
      : model_(layout), acts_(std::move(acts)) {}

  absl::StatusOr<float> Forward(model::ParamAccess& params, const int32_t* inputs,
                                const int32_t* targets) override {
    return model_.Forward(params, inputs, targets, acts_);
  }
  absl::Status Backward(model::ParamAccess& params, const int32_t* inputs,
                        const int32_t* targets, float dloss) override {
    return model_.Backward(params, inputs, targets, acts_, dloss);
  }

 private:
  Model model_;
  Activations acts_;
};

template <typename Model, typename Activations, typename Config>
absl::StatusOr<std::unique_ptr<ModelRunner>> Make(const model::ModelLayout* layout,
                                                  const Config& config,
                                                  const ModelRunnerOptions& options,
                                                  model::ActivationOptions activation_options) {
  ACCEL_ASSIGN_OR_RETURN(Activations acts,
                         Activations::Create(config, options.batch, options.seq,
                                             MemoryPool::kDevice, options.ledger,
                                             activation_options));
  return std::make_unique<CpuModelRunner<Model, Activations>>(layout, std::move(acts));
}

}  // namespace

absl::StatusOr<ModelRunnerResult> CreateCpuModelRunner(const model::ModelLayout* layout,
                                                       const ModelRunnerOptions& options) {
  // bf16 parameters are multiplied as bf16 where the CPU has bf16 dot products (AMX or
  // AVX512_BF16); elsewhere that would be emulated, slower than fp32 on the fp32 copy.
  const bool bf16_matmuls = options.bf16_params && kernels::Bf16MatmulIsNative();
  const model::ActivationOptions activation_options = {
      .bf16_matmuls = bf16_matmuls, .checkpoint_blocks = options.checkpoint_blocks};
  ModelRunnerResult result;
  if (const model::Gpt2Config* gpt2 = layout->config().gpt2(); gpt2 != nullptr) {
    ACCEL_ASSIGN_OR_RETURN(result.runner, (Make<model::Gpt2, model::Gpt2Activations>(
                                              layout, *gpt2, options, activation_options)));
  } else {
    ACCEL_ASSIGN_OR_RETURN(result.runner,
                           (Make<model::Llama, model::LlamaActivations>(
                               layout, *layout->config().llama(), options, activation_options)));
  }
  result.bf16_matmuls = bf16_matmuls;
  return result;
}

}  // namespace accel::train
