// `accel-worker --standalone --device cuda`: each rank trains on its own GPU through
// train::DeviceTrainer (engine/train/cuda/device_trainer.h), the gang's NCCL communicators made
// from the same rendezvous store the CPU path would use (--rdzv-dir or torchrun's MASTER_ADDR /
// MASTER_PORT), with the CPU path's progress lines, JSON records, --metrics-out and
// --save-final from rank 0. The device is LOCAL_RANK (default: the rank) among the visible
// ones, or the only one when CUDA_VISIBLE_DEVICES leaves one. Built when the CUDA path and
// NCCL are; otherwise it returns Unimplemented saying so.
#pragma once

#include "absl/status/status.h"
#include "engine/comm/store.h"
#include "engine/tensor/dtype.h"
#include "worker/standalone.h"

namespace accel::worker {

// flags.train after config resolution. `store` (not owned) is the gang's rendezvous; null for a
// world of one.
[[nodiscard]] absl::Status RunStandaloneOnDevice(const StandaloneFlags& flags, DType save_dtype,
                                                 comm::Store* store, int rank, int world);

}  // namespace accel::worker
