#include "worker/daemon_device.h"

#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"

#if defined(ACCEL_WORKER_CUDA)
#include "engine/shard/cuda/nccl_process_groups.h"
#include "engine/train/cuda/device_trainer.h"
#endif

namespace accel::worker {

#if defined(ACCEL_WORKER_CUDA)

namespace {

v1::WorkerEvent DeviceMemoryEvent(train::DeviceTrainer& trainer, int64_t step) {
  absl::StatusOr<train::DeviceTrainer::DriverMemory> driver = trainer.QueryDriverMemory();
  if (!driver.ok()) {
    ACCEL_LOG(warn, "cudaMemGetInfo: {}", driver.status().ToString());
    return MemoryEvent(*trainer.ledger(), step);
  }
  return MemoryEvent(*trainer.ledger(), step, driver->used, driver->total);
}

}  // namespace

absl::Status TrainOnDevice(const JobRun& run, Reporter& reporter,
                           std::atomic<int64_t>& steps_done, comm::Store* store,
                           const std::string& rendezvous_prefix, int rank, int world) {
  train::TrainOptions options = run.train;
  options.checkpoint_dir = run.checkpoint_dir;  // refused by name: no device checkpoints yet
  ACCEL_RETURN_IF_ERROR(train::DeviceTrainer::CheckOptions(options));  // before NCCL
  shard::OwnedProcessGroups groups;  // outlives the trainer
  if (world > 1) {
    comm::NcclOptions nccl;
    nccl.timeout = run.comm_timeout;
    ACCEL_ASSIGN_OR_RETURN(groups, shard::CreateNcclProcessGroups(store, rendezvous_prefix, rank,
                                                                  world, /*device=*/0,
                                                                  options.shard, nccl));
  }
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<train::DeviceTrainer> trainer,
                         train::DeviceTrainer::Create(options, groups.view()));
  ACCEL_LOG(info, "rank {} of {} on cuda device 0 (CUDA_VISIBLE_DEVICES={}); {}; {} steps", rank,
            world,
            std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset",
            trainer->sharded().plan().Describe(), run.train.steps);
  reporter.Send(DeviceMemoryEvent(*trainer, -1));
  const bool speaker = rank == 0;
  ACCEL_RETURN_IF_ERROR(trainer->Train([&](const train::StepMetrics& m) -> absl::Status {
    steps_done.store(m.step + 1);
    const bool last = m.step + 1 == m.total_steps;
    if (m.step == 0 || last || (m.step + 1) % run.log_every == 0) {
      if (speaker) reporter.Send(MetricsEvent(m));
      if (!last) reporter.Send(DeviceMemoryEvent(*trainer, m.step));
    }
    if (reporter.broken()) return absl::UnavailableError("lost the event stream to acceld");
    return absl::OkStatus();
  }));
  reporter.Send(DeviceMemoryEvent(*trainer, trainer->step() - 1));
  return absl::OkStatus();
}

#else

absl::Status TrainOnDevice(const JobRun&, Reporter&, std::atomic<int64_t>&, comm::Store*,
                           const std::string&, int, int) {
  return absl::UnimplementedError(
      "resources.device: cuda: this accel-worker was built without the CUDA path (nvcc or NCCL "
      "not found at configure time; docs/gpu.md)");
}

#endif

}  // namespace accel::worker
