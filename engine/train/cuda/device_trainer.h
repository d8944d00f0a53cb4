// DeviceTrainer: GPT-2 training by one rank of a gang on one CUDA device each — the GPU path's
// trainer (issue 7). It owns the device side — a compute stream, the caching allocator charged
// to its ledger, cuBLAS(Lt), shard::CudaDeviceOps — and runs the CPU path's train::Trainer
// through them (ComputeBackend: the sharded model and AdamW in device memory, Gpt2Cuda as the
// model). So everything the Trainer does applies on the device unchanged: every FSDP / ZeRO
// strategy and prefetch setting, bf16 / fp16 mixed precision with fp32 masters (bf16 matmuls on
// the gathered bf16 units), the LossScaler, clipping, sharded / full / 16-bit checkpoints and
// exact resume, --init-weights with sync_module_states, cpu_ram_efficient_loading or
// zero3_init, FSDP low precision (bf16 parameters and moments, no masters), per-rank
// statistics. Host-side agreements are staged through device memory.
//
// Collectives are NCCL's: `groups` from shard::CreateNcclProcessGroups on this device, or, when
// empty, a one-rank NCCL communicator of its own. Gathers and reductions run on NCCL's streams,
// ordered against the compute stream by events (CudaDeviceOps); the host waits once per
// micro-step for the loss, once per step for the norm, and at the end of the step.
//
// Bad options are InvalidArgument before any device is touched (CheckOptions).
// Thread safety: none; one trainer per process and device, driven from one thread.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/base/memory_ledger.h"
#include "engine/kernels/cuda/blas.h"
#include "engine/tensor/cuda/caching_allocator.h"
#include "engine/shard/cuda/cuda_device_ops.h"
#include "engine/shard/process_groups.h"
#include "engine/train/trainer.h"

namespace accel::train {

class DeviceTrainer {
 public:
  // On CUDA device `device` (after CUDA_VISIBLE_DEVICES). `groups` (not owned; must outlive
  // the trainer) are NCCL communicators on that device; empty: a world of one. Unavailable
  // without a device.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DeviceTrainer>> Create(
      const TrainOptions& options, shard::ProcessGroups groups = {}, int device = 0,
      Env* env = Env::Default());
  ~DeviceTrainer();
  // What Create checks before it touches a device (ValidateTrainOptions).
  [[nodiscard]] static absl::Status CheckOptions(const TrainOptions& options);

  // The trainer itself: Train, TrainStep, SaveCheckpoint, Resume, SaveWeights, statistics.
  Trainer& trainer() { return *trainer_; }
  [[nodiscard]] absl::StatusOr<StepMetrics> TrainStep() { return trainer_->TrainStep(); }
  [[nodiscard]] absl::Status Train(const std::function<absl::Status(const StepMetrics&)>& on_step) {
    return trainer_->Train(on_step);
  }
  [[nodiscard]] absl::Status SaveWeights(const std::string& path, DType dtype = DType::kF32) {
    return trainer_->SaveWeights(path, dtype);
  }
  int64_t step() const { return trainer_->step(); }
  const model::ModelLayout& layout() const { return trainer_->layout(); }
  const shard::ShardedModel& sharded() const { return trainer_->sharded(); }
  int device() const { return device_; }
  MemoryLedger* ledger() { return &ledger_; }
  // The driver's view of this device (cudaMemGetInfo): bytes in use by every process
  // (total - free) and the capacity.
  struct DriverMemory {
    int64_t used = 0, total = 0;
  };
  [[nodiscard]] absl::StatusOr<DriverMemory> QueryDriverMemory() const;

 private:
  DeviceTrainer() = default;

  int device_ = 0;
  // Destruction runs bottom-up: the trainer (and its device memory) before the communicators
  // and the ops, those before the allocator, and everything before the stream (destroyed last,
  // in ~DeviceTrainer).
  MemoryLedger ledger_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::CachingAllocator> allocator_;
  std::unique_ptr<cuda::Blas> blas_;
  std::unique_ptr<shard::CudaDeviceOps> ops_;
  shard::OwnedProcessGroups own_groups_;  // a world of one when Create got no groups
  std::unique_ptr<Trainer> trainer_;
};

}  // namespace accel::train
