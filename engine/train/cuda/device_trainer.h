// DeviceTrainer: GPT-2 training by one rank of a gang on one CUDA device each — the GPU path's
// trainer (issue 7). The sharding engine is the CPU trainer's ShardedModel, with its buffers on
// the device (shard::CudaDeviceOps) and its collectives over NCCL (shard::CreateNcclProcessGroups),
// so every FSDP / ZeRO strategy, prefetch setting and bf16 / fp16 mixed precision behaves as on
// the CPU: only where the bytes live differs.
//
// A step (as Trainer::TrainStep): zero the gradients; per micro-step, Gpt2Cuda forward (the one
// host synchronisation per micro-step: the loss) and backward through the sharded model, whose
// gathers and reductions run on NCCL's stream, ordered against the compute stream by events;
// the mean loss and global norm agreed across ranks; a non-finite value (or an fp16 overflow,
// through the LossScaler) skips the update on every rank; clipping; AdamW per owned range on the
// device (kernels::cuda::AdamWUpdate: fp32 masters and moments, the CPU arithmetic); FinishStep
// re-gathers what the strategy keeps full. Under bf16 mixed precision the model multiplies in
// bf16 with the gathered bf16 parameters (Gpt2Cuda's bf16 matmuls).
//
// Supported: TrainOptions' model, batch, seq, steps, grad_accum, schedule, adamw, grad_clip,
// seed, data, shuffle, shard (every strategy and option; param/reduce dtype f32, bf16, f16),
// loss_scaling, init_weights (rank 0 or every rank reads it; sync_module_states broadcasts).
// Refused with InvalidArgument naming the option: low precision (master_dtype bf16),
// checkpoint_dir / resume_dir, cpu_ram_efficient_loading, zero3_init (docs/gpu.md).
// Thread safety: none; one trainer per process and device.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <optional>
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
#include "engine/shard/cuda/cuda_device_ops.h"
#include "engine/shard/process_groups.h"
#include "engine/shard/sharded_model.h"
#include "engine/train/loss_scaler.h"
#include "engine/train/metrics.h"
#include "engine/train/trainer.h"

namespace accel::train {

class DeviceTrainer {
 public:
  // On CUDA device `device` (after CUDA_VISIBLE_DEVICES). `groups` are NCCL communicators on
  // that device (shard::CreateNcclProcessGroups), not owned; empty: a world of one over a
  // one-rank NCCL communicator of its own. Unavailable without a device.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DeviceTrainer>> Create(
      const TrainOptions& options, shard::ProcessGroups groups = {}, int device = 0,
      Env* env = Env::Default());
  ~DeviceTrainer();
  // What Create checks before it touches a device: ValidateTrainOptions and the refusals above.
  [[nodiscard]] static absl::Status CheckOptions(const TrainOptions& options);

  [[nodiscard]] absl::StatusOr<StepMetrics> TrainStep();
  // Steps until options.steps, calling on_step after each.
  [[nodiscard]] absl::Status Train(const std::function<absl::Status(const StepMetrics&)>& on_step);
  // The model as model.safetensors (Hugging Face GPT-2 names) plus config.json, in `dtype`,
  // gathered unit by unit and written by rank 0. Collective.
  [[nodiscard]] absl::Status SaveWeights(const std::string& path, DType dtype = DType::kF32);

  int64_t step() const { return step_; }
  int rank() const { return groups_.world->rank(); }
  int world() const { return groups_.world->size(); }
  const model::Gpt2Layout& layout() const { return *layout_; }
  const shard::ShardedModel& sharded() const { return *sharded_; }
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
  [[nodiscard]] absl::Status InitWeights();
  // AdamW's moments of one owned range, and its weight-decay sub-ranges.
  struct RangeState {
    shard::DeviceBlock m, v;
    std::vector<optim::AdamW::DecayRange> decay;  // relative to the range's flat_begin
  };

  TrainOptions options_;
  Env* env_ = nullptr;
  int device_ = 0;
  // Declaration order is destruction order reversed: everything that holds device memory goes
  // before the allocator, and the allocator before the stream.
  MemoryLedger ledger_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::CachingAllocator> allocator_;
  std::unique_ptr<shard::CudaDeviceOps> ops_;
  shard::OwnedProcessGroups own_groups_;  // a world of one when Create got no groups
  shard::ProcessGroups groups_;
  std::unique_ptr<model::Gpt2Layout> layout_;
  std::unique_ptr<cuda::Blas> blas_;
  std::unique_ptr<model::Gpt2Cuda> model_;
  std::unique_ptr<shard::ShardedModel> sharded_;
  std::optional<model::Gpt2CudaActivations> acts_;
  std::vector<RangeState> ranges_;
  std::unique_ptr<data::BatchLoader> loader_;
  std::vector<int32_t> inputs_, targets_;
  LossScaler scaler_;  // enabled under fp16 only
  int64_t step_ = 0;
  int64_t applied_steps_ = 0;  // the LR schedule's position: skipped steps do not advance it
  double elapsed_seconds_ = 0;
};

}  // namespace accel::train
