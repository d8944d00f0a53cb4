// DeviceTrainer: GPT-2 training by one rank on one CUDA device — the GPU path's single-device
// trainer (issue 7). Parameters, gradients and AdamW's moments live in device memory (a
// CachingAllocator charged to the trainer's ledger); the model is Gpt2Cuda; the data loader,
// the LR schedule and the progress figures are the CPU Trainer's.
//
// A step: zero the gradients; for each micro-step, Forward (which returns the loss, one
// synchronisation) and Backward with dloss 1/accum; the global norm on the device; clipping;
// AdamW per weight-decay range on the device (kernels::cuda::AdamWUpdate, the CPU arithmetic);
// a non-finite loss or norm skips the update. Strategies do not apply at world size 1 (every
// FSDP/ZeRO strategy is NO_SHARD there), so options.shard.strategy is accepted and ignored.
//
// Supported: fp32 (no TF32), seeded initialisation, TrainOptions' batch, seq, steps,
// grad_accum, schedule, adamw, grad_clip, seed, data. Refused with InvalidArgument naming the
// option: mixed precision, init_weights, checkpoint_dir / resume_dir, sync_module_states (the
// device path has no sharded checkpoints or weight loading yet; docs/gpu.md).
// Thread safety: none; one trainer per process and device.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/base/memory_ledger.h"
#include "engine/data/batch_loader.h"
#include "engine/kernels/cuda/blas.h"
#include "engine/kernels/cuda/caching_allocator.h"
#include "engine/model/cuda/gpt2_cuda.h"
#include "engine/optim/adamw.h"
#include "engine/train/metrics.h"
#include "engine/train/trainer.h"

namespace accel::train {

class DeviceTrainer {
 public:
  // On CUDA device `device` (after CUDA_VISIBLE_DEVICES). Unavailable without a device.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DeviceTrainer>> Create(
      const TrainOptions& options, int device = 0, Env* env = Env::Default());
  ~DeviceTrainer();

  [[nodiscard]] absl::StatusOr<StepMetrics> TrainStep();
  // Steps until options.steps, calling on_step after each.
  [[nodiscard]] absl::Status Train(const std::function<absl::Status(const StepMetrics&)>& on_step);
  // The model as model.safetensors (Hugging Face GPT-2 names) plus config.json, in `dtype`.
  [[nodiscard]] absl::Status SaveWeights(const std::string& path, DType dtype = DType::kF32);

  int64_t step() const { return step_; }
  const model::Gpt2Layout& layout() const { return *layout_; }
  MemoryLedger* ledger() { return &ledger_; }
  cuda::AllocatorStats allocator_stats() const { return allocator_->stats(); }
  // The driver's view of this device (cudaMemGetInfo): bytes in use by every process
  // (total - free) and the capacity.
  struct DriverMemory {
    int64_t used = 0, total = 0;
  };
  [[nodiscard]] absl::StatusOr<DriverMemory> QueryDriverMemory() const;

 private:
  DeviceTrainer() = default;

  TrainOptions options_;
  Env* env_ = nullptr;
  MemoryLedger ledger_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<model::Gpt2Layout> layout_;
  std::unique_ptr<cuda::CachingAllocator> allocator_;
  std::unique_ptr<cuda::Blas> blas_;
  std::unique_ptr<model::Gpt2Cuda> model_;
  std::optional<model::Gpt2CudaActivations> acts_;
  cuda::DeviceBuffer params_, grads_, exp_avg_, exp_avg_sq_, norm_squared_;
  std::vector<optim::AdamW::DecayRange> decay_ranges_;
  std::unique_ptr<data::BatchLoader> loader_;
  std::vector<int32_t> inputs_, targets_;
  int64_t step_ = 0;
  int64_t applied_steps_ = 0;  // the LR schedule's position: skipped steps do not advance it
  double elapsed_seconds_ = 0;
};

}  // namespace accel::train
