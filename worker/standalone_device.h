// `accel-worker --standalone --device cuda`: one rank training on one GPU through
// train::DeviceTrainer (engine/train/cuda/device_trainer.h), with the CPU path's progress
// lines, JSON records, --metrics-out and --save-final. Built when the CUDA path is; otherwise
// it returns Unimplemented saying so.
#pragma once

#include "absl/status/status.h"
#include "engine/tensor/dtype.h"
#include "worker/standalone.h"

namespace accel::worker {

// flags.train after config resolution; world size 1.
[[nodiscard]] absl::Status RunStandaloneOnDevice(const StandaloneFlags& flags, DType save_dtype);

}  // namespace accel::worker
