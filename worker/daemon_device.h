// A daemon job on one GPU (`resources.device: cuda` at world size 1): train::DeviceTrainer,
// reporting as the CPU path does — metrics records on the log cadence, memory records (the
// trainer's ledger and the driver's view of the GPU) after setup, on the cadence and at the
// end. The device trainer takes no checkpoints yet: a job with `checkpoint.dir` fails at once
// naming it. Built with the CUDA path; otherwise Unimplemented, saying so.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "worker/job_spec.h"
#include "worker/reporter.h"

namespace accel::worker {

[[nodiscard]] absl::Status TrainOnDevice(const JobRun& run, Reporter& reporter,
                                         std::atomic<int64_t>& steps_done);

}  // namespace accel::worker
