// A worker's rank on its own GPU (`--device cuda`, `resources.device: cuda`): the NCCL
// communicators of the gang, made from the same rendezvous store the CPU path uses (acceld's
// KV, --rdzv-dir, or torchrun's MASTER_ADDR / MASTER_PORT), and train::DeviceTrainer on the
// device — whose train::Trainer the worker then drives exactly as it drives the CPU one
// (progress, metrics, checkpoints, stop requests, restarts).
//
// The device is `device` when >= 0; otherwise the rank within this machine (worker/launch_env.h:
// LOCAL_RANK, SLURM_LOCALID, ...; the rank without a launcher) among the visible ones, or the
// only visible one (acceld gives each rank one GPU by CUDA_VISIBLE_DEVICES).
// Options the device trainer refuses are refused first, before any device or peer is looked
// for. Built with the CUDA path and NCCL (ACCEL_WORKER_CUDA); otherwise Unimplemented, saying
// so.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/comm/store.h"
#include "engine/train/trainer.h"

namespace accel::worker {

struct DeviceSession {
  // The device, its communicators and its trainer, in the order they must be torn down.
  std::shared_ptr<void> keep;
  train::Trainer* trainer = nullptr;
  int device = 0;
  // The driver's view of the GPU: bytes used by every process (total - free) and the capacity;
  // zeros when it cannot be read.
  std::function<std::pair<int64_t, int64_t>()> driver_memory;
};

// `store` (not owned) serves the rendezvous under `prefix`; null for a world of one.
[[nodiscard]] absl::StatusOr<DeviceSession> StartDeviceSession(
    const train::TrainOptions& options, comm::Store* store, const std::string& prefix, int rank,
    int world, int device, absl::Duration comm_timeout);

}  // namespace accel::worker
