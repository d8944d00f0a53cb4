// A daemon job on GPUs (`resources.device: cuda`): one rank per GPU, each through
// train::DeviceTrainer on device 0 of the CUDA_VISIBLE_DEVICES acceld gave it, the gang's NCCL
// communicators made through acceld's KV store under the attempt's rendezvous prefix. Reports as
// the CPU path does — rank 0's metrics records on the log cadence, every rank's memory records
// (the trainer's ledger and the driver's view of its GPU) after setup, on the cadence and at
// the end. The device trainer takes no checkpoints yet: a job with `checkpoint.dir` fails at once
// naming it. Built with the CUDA path and NCCL; otherwise Unimplemented, saying so.
#pragma once

#include <atomic>
#include <cstdint>

#include <string>

#include "absl/status/status.h"
#include "engine/comm/store.h"
#include "worker/job_spec.h"
#include "worker/reporter.h"

namespace accel::worker {

// `store` (not owned) is acceld's KV store; null for a world of one.
[[nodiscard]] absl::Status TrainOnDevice(const JobRun& run, Reporter& reporter,
                                         std::atomic<int64_t>& steps_done, comm::Store* store,
                                         const std::string& rendezvous_prefix, int rank,
                                         int world);

}  // namespace accel::worker
