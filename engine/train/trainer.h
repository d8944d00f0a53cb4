// Trainer: single-process GPT-2 training — Train() and TrainStep() read top to bottom.
//
// Owns the model's flat parameters and gradients, the activations, the AdamW state, the data
// loader and the LR schedule. A step runs grad_accum micro-batches (forward + backward, gradients
// accumulated with weight 1/grad_accum), takes the global gradient norm, skips the update when
// the loss or the norm is not finite, clips, and updates.
// Memory: parameters, gradients and optimizer state are charged to the "device" pool (the compute
// pool; host memory on a CPU-only build), activations likewise.
// Not thread-safe; kernels use the OpenMP pool (kernels::SetNumThreads).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/base/memory_ledger.h"
#include "engine/data/batch_loader.h"
#include "engine/model/gpt2.h"
#include "engine/optim/adamw.h"
#include "engine/optim/lr_schedule.h"
#include "engine/train/metrics.h"

namespace accel::train {

struct TrainOptions {
  // Model: a preset name, or a Hugging Face config.json (wins when set).
  std::string model = "gpt2-mini";
  std::string model_config;
  std::string init_weights;  // model.safetensors; empty = seeded GPT-2 init
  std::string data;          // llm.c token shard or raw text
  int64_t batch = 4;
  int64_t seq = 64;
  int64_t steps = 100;
  int64_t grad_accum = 1;
  std::optional<uint64_t> shuffle_seed;
  optim::LrSchedule schedule;  // total_steps is set from `steps`
  optim::AdamWConfig adamw;
  float grad_clip = 1.0f;  // 0 turns clipping off
  uint64_t seed = 1337;
  int rank = 0;
  int world = 1;
};

class Trainer {
 public:
  // Validates the options, builds the model, loads or initialises the weights and opens the
  // data. Errors name the option, file or tensor at fault.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Trainer>> Create(
      const TrainOptions& options, Env* env = Env::Default(), MemoryLedger* ledger = nullptr);

  // Runs the remaining steps, calling on_step after each.
  [[nodiscard]] absl::Status Train(const std::function<absl::Status(const StepMetrics&)>& on_step);
  // One optimizer step.
  [[nodiscard]] absl::StatusOr<StepMetrics> TrainStep();

  // Writes the parameters as a Hugging Face model.safetensors (+ config.json beside it).
  [[nodiscard]] absl::Status SaveWeights(const std::string& path, DType dtype = DType::kF32);

  const model::Gpt2Layout& layout() const { return *layout_; }
  const TrainOptions& options() const { return options_; }
  int64_t step() const { return step_; }
  const float* params() const { return params_.as<float>(); }
  float* mutable_params() { return params_.as<float>(); }
  const float* grads() const { return grads_.as<float>(); }
  MemoryLedger* ledger() const { return ledger_; }

 private:
  Trainer() = default;

  TrainOptions options_;
  Env* env_ = nullptr;
  MemoryLedger* ledger_ = nullptr;
  std::unique_ptr<model::Gpt2Layout> layout_;
  std::unique_ptr<model::Gpt2> model_;
  Buffer params_, grads_;
  std::optional<model::Gpt2Activations> acts_;
  std::optional<optim::AdamW> optimizer_;
  std::unique_ptr<data::BatchLoader> loader_;
  std::vector<int32_t> inputs_, targets_;
  int64_t step_ = 0;
  double elapsed_seconds_ = 0;
};

}  // namespace accel::train
