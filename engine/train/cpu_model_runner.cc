// The CPU's ModelRunner: Gpt2 over the fast kernels with its activations (model_runner.h).
#include <optional>

#include "engine/base/status_macros.h"
#include "engine/kernels/matmul_bf16.h"
#include "engine/model/gpt2.h"
#include "engine/train/model_runner.h"

namespace accel::train {
namespace {

class CpuModelRunner final : public ModelRunner {
 public:
  CpuModelRunner(const model::Gpt2Layout* layout, model::Gpt2Activations acts)
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
  model::Gpt2 model_;
  model::Gpt2Activations acts_;
};

}  // namespace

absl::StatusOr<ModelRunnerResult> CreateCpuModelRunner(const model::Gpt2Layout* layout,
                                                       const ModelRunnerOptions& options) {
  // bf16 parameters are multiplied as bf16 where the CPU has bf16 dot products (AMX or
  // AVX512_BF16); elsewhere that would be emulated, slower than fp32 on the fp32 copy.
  const bool bf16_matmuls = options.bf16_params && kernels::Bf16MatmulIsNative();
  ACCEL_ASSIGN_OR_RETURN(model::Gpt2Activations acts,
                         model::Gpt2Activations::Create(
                             layout->config(), options.batch, options.seq, MemoryPool::kDevice,
                             options.ledger,
                             {.bf16_matmuls = bf16_matmuls,
                              .checkpoint_blocks = options.checkpoint_blocks}));
  ModelRunnerResult result;
  result.runner = std::make_unique<CpuModelRunner>(layout, std::move(acts));
  result.bf16_matmuls = bf16_matmuls;
  return result;
}

}  // namespace accel::train
