// ModelRunner: a model's forward and backward on the device a rank computes on, over the
// activations of one (B, T) it owns; it reaches the parameters through ParamAccess (the sharded
// model), whose pointers are the same device's. Each architecture's registry entry makes its
// runners (registry.h); the Trainer holds one (engine/train/model_runner.h).
// Thread safety: one trainer thread.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"
#include "engine/model/activation_options.h"
#include "engine/model/param_access.h"
#include "engine/model/param_specs.h"

namespace accel::model {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // inputs and targets are host arrays (B, T); the mean loss over the targets that count
  // (!= kernels::kIgnoreIndex; all B·T without a mask; 0 when none count), on the host.
  [[nodiscard]] virtual absl::StatusOr<float> Forward(ParamAccess& params, const int32_t* inputs,
                                                      const int32_t* targets) = 0;
  // Backpropagates the last Forward's mean loss, accumulating (+=) into ParamAccess::Grads,
  // scaled by dloss (nothing flows from masked targets; zero when none count).
  [[nodiscard]] virtual absl::Status Backward(ParamAccess& params, const int32_t* inputs,
                                              const int32_t* targets, float dloss) = 0;
};

// What a CPU runner is made for: one (B, T), the activations' options, the ledger its
// activations are charged to (device pool; may be null).
struct CpuRunnerOptions {
  int64_t batch = 0, seq = 0;
  ActivationOptions activations;
  MemoryLedger* ledger = nullptr;
};

// The CPU runner of a model with the shape Gpt2 and Llama have: Model(layout),
// Model::Forward(params, inputs, targets, acts), Model::Backward(params, inputs, targets, acts,
// dloss) and Activations::Create(config, B, T, pool, ledger, options). A family's entry makes
// it with MakeCpuRunner<Model, Activations>(layout, config, options).
template <typename Model, typename Activations>
class CpuRunnerOf final : public ModelRunner {
 public:
  CpuRunnerOf(const ModelLayout* layout, Activations acts)
      : model_(layout), acts_(std::move(acts)) {}
  absl::StatusOr<float> Forward(ParamAccess& params, const int32_t* inputs,
                                const int32_t* targets) override {
    return model_.Forward(params, inputs, targets, acts_);
  }
  absl::Status Backward(ParamAccess& params, const int32_t* inputs, const int32_t* targets,
                        float dloss) override {
    return model_.Backward(params, inputs, targets, acts_, dloss);
  }

 private:
  Model model_;
  Activations acts_;
};

template <typename Model, typename Activations, typename Config>
absl::StatusOr<std::unique_ptr<ModelRunner>> MakeCpuRunner(const ModelLayout* layout,
                                                           const Config& config,
                                                           const CpuRunnerOptions& o) {
  absl::StatusOr<Activations> acts = Activations::Create(config, o.batch, o.seq,
                                                         MemoryPool::kDevice, o.ledger,
                                                         o.activations);
  if (!acts.ok()) return acts.status();
  return std::make_unique<CpuRunnerOf<Model, Activations>>(layout, std::move(*acts));
}

}  // namespace accel::model
