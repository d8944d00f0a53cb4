#include "worker/device_session.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/base/logging.h"
#include "engine/base/status_macros.h"
#include "worker/launch_env.h"

#if defined(ACCEL_WORKER_CUDA)
#include "engine/tensor/cuda/device.h"
#include "engine/shard/cuda/nccl_process_groups.h"
#include "engine/train/cuda/device_trainer.h"
#endif

namespace accel::worker {

#if defined(ACCEL_WORKER_CUDA)

namespace {

std::string VisibleDevicesVariable() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v != nullptr ? v : "unset";
}

absl::StatusOr<int> ChooseDevice(int rank, int requested) {
  const int visible = static_cast<int>(cuda::ListDevices().size());
  if (visible == 0) {
    return absl::UnavailableError(absl::StrCat("no CUDA device is visible (CUDA_VISIBLE_DEVICES=",
                                               VisibleDevicesVariable(), ")"));
  }
  int device = requested;
  if (device < 0) {
    device = rank;
    if (visible == 1) {
      device = 0;
    } else {
      // The rank within this machine from whatever placed it (LOCAL_RANK, SLURM_LOCALID, a
      // pod's LOCAL_RANK): worker/launch_env.h.
      absl::StatusOr<LaunchEnv> launch = ResolveLaunchEnv(ProcessLaunchVars());
      if (!launch.ok()) return launch.status();
      if (launch->source != "none") device = launch->local_rank;
    }
  }
  if (device < 0 || device >= visible) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " asks for CUDA device ", device,
                                                   " but ", visible, " are visible"));
  }
  return device;
}

// Torn down bottom-up: the trainer before the communicators it uses.
struct Held {
  shard::OwnedProcessGroups groups;
  std::unique_ptr<train::DeviceTrainer> trainer;
};

}  // namespace

absl::StatusOr<DeviceSession> StartDeviceSession(const train::TrainOptions& options,
                                                 comm::Store* store, const std::string& prefix,
                                                 int rank, int world, int device,
                                                 absl::Duration comm_timeout) {
  ACCEL_RETURN_IF_ERROR(train::DeviceTrainer::CheckOptions(options));
  ACCEL_ASSIGN_OR_RETURN(const int chosen, ChooseDevice(rank, device));
  auto held = std::make_shared<Held>();
  if (world > 1) {
    comm::NcclOptions nccl;
    nccl.timeout = comm_timeout;
    ACCEL_ASSIGN_OR_RETURN(held->groups, shard::CreateNcclProcessGroups(
                                             store, prefix, rank, world, chosen, options.shard,
                                             nccl));
  }
  ACCEL_ASSIGN_OR_RETURN(held->trainer,
                         train::DeviceTrainer::Create(options, held->groups.view(), chosen));
  ACCEL_LOG(info, "rank {} of {} on cuda device {} (CUDA_VISIBLE_DEVICES={})", rank, world,
            chosen, VisibleDevicesVariable());
  DeviceSession session;
  session.trainer = &held->trainer->trainer();
  session.device = chosen;
  train::DeviceTrainer* trainer = held->trainer.get();
  session.driver_memory = [trainer]() -> std::pair<int64_t, int64_t> {
    absl::StatusOr<train::DeviceTrainer::DriverMemory> m = trainer->QueryDriverMemory();
    if (!m.ok()) {
      ACCEL_LOG(warn, "cudaMemGetInfo: {}", m.status().ToString());
      return {0, 0};
    }
    return {m->used, m->total};
  };
  session.keep = std::move(held);
  return session;
}

#else

absl::StatusOr<DeviceSession> StartDeviceSession(const train::TrainOptions&, comm::Store*,
                                                 const std::string&, int, int, int,
                                                 absl::Duration) {
  return absl::UnimplementedError(
      "cuda: this accel-worker was built without the CUDA path (nvcc or NCCL not found at "
      "configure time; docs/gpu.md)");
}

#endif

}  // namespace accel::worker
