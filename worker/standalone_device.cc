#include "worker/standalone_device.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/train/metrics.h"

#if defined(ACCEL_WORKER_CUDA)
#include "engine/kernels/cuda/device.h"
#include "engine/shard/cuda/nccl_process_groups.h"
#include "engine/train/cuda/device_trainer.h"
#endif

namespace accel::worker {

#if defined(ACCEL_WORKER_CUDA)

namespace {

// LOCAL_RANK (default: the rank) among the visible devices, or the only visible one.
absl::StatusOr<int> DeviceOfRank(int rank) {
  const int visible = static_cast<int>(cuda::ListDevices().size());
  if (visible == 0) {
    return absl::UnavailableError("--device cuda: no CUDA device is visible (CUDA_VISIBLE_DEVICES="
                                  + std::string(std::getenv("CUDA_VISIBLE_DEVICES")
                                                    ? std::getenv("CUDA_VISIBLE_DEVICES")
                                                    : "unset") + ")");
  }
  if (visible == 1) return 0;
  int local = rank;
  if (const char* v = std::getenv("LOCAL_RANK"); v != nullptr && !absl::SimpleAtoi(v, &local)) {
    return absl::InvalidArgumentError(absl::StrCat("LOCAL_RANK is not a number: ", v));
  }
  if (local < 0 || local >= visible) {
    return absl::InvalidArgumentError(absl::StrCat("LOCAL_RANK ", local, " has no device: ",
                                                   visible, " are visible"));
  }
  return local;
}

}  // namespace

absl::Status RunStandaloneOnDevice(const StandaloneFlags& f, DType save_dtype, comm::Store* store,
                                   int rank, int world) {
  const bool json = f.output == "json";
  const bool speaker = rank == 0;
  ACCEL_RETURN_IF_ERROR(train::DeviceTrainer::CheckOptions(f.train));  // before any device
  ACCEL_ASSIGN_OR_RETURN(const int device, DeviceOfRank(rank));
  shard::OwnedProcessGroups groups;  // outlives the trainer
  if (world > 1) {
    comm::NcclOptions nccl;
    nccl.timeout = absl::Seconds(f.comm_timeout_s);
    ACCEL_ASSIGN_OR_RETURN(groups, shard::CreateNcclProcessGroups(store, f.run_id, rank, world,
                                                                  device, f.train.shard, nccl));
  }
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<train::DeviceTrainer> trainer,
                         train::DeviceTrainer::Create(f.train, groups.view(), device));
  const model::Gpt2Config& config = trainer->layout().config();
  if (!json && speaker) {
    std::printf("accel-worker standalone: %s, cuda device %d of rank %d, model %s (%lld "
                "params), data %s, B=%lld T=%lld accum=%lld\n",
                trainer->sharded().plan().Describe().c_str(), device, rank, config.name.c_str(),
                static_cast<long long>(config.NumParams()), f.train.data.c_str(),
                static_cast<long long>(f.train.batch), static_cast<long long>(f.train.seq),
                static_cast<long long>(f.train.grad_accum));
    std::fflush(stdout);
  }
  std::unique_ptr<train::MetricsWriter> metrics;
  if (!f.metrics_out.empty() && speaker) {
    ACCEL_ASSIGN_OR_RETURN(metrics, train::MetricsWriter::Open(Env::Default(), f.metrics_out));
  }
  ACCEL_RETURN_IF_ERROR(trainer->Train([&](const train::StepMetrics& m) -> absl::Status {
    if (metrics) ACCEL_RETURN_IF_ERROR(metrics->Write(m));
    if (!speaker) return absl::OkStatus();
    if (json) {
      std::printf("%s\n", train::StepMetricsToJson(m).c_str());
    } else if (m.step == 0 || m.step + 1 == m.total_steps || (m.step + 1) % f.log_every == 0) {
      std::printf("%s\n", FormatProgress(m).c_str());
    }
    std::fflush(stdout);
    return absl::OkStatus();
  }));
  if (metrics) ACCEL_RETURN_IF_ERROR(metrics->Close());
  if (!f.save_final.empty()) {
    ACCEL_RETURN_IF_ERROR(trainer->SaveWeights(f.save_final, save_dtype));
    if (!json && speaker) std::printf("saved %s\n", f.save_final.c_str());
  }
  if (!json && speaker) {
    const cuda::AllocatorStats s = trainer->allocator_stats();
    std::printf("memory (bytes): %s\ndevice allocator: allocated %lld, reserved %lld, peak "
                "reserved %lld\n",
                trainer->ledger()->ToJson().c_str(), static_cast<long long>(s.allocated_bytes),
                static_cast<long long>(s.reserved_bytes),
                static_cast<long long>(s.peak_reserved_bytes));
  }
  return absl::OkStatus();
}

#else

absl::Status RunStandaloneOnDevice(const StandaloneFlags&, DType, comm::Store*, int, int) {
  return absl::UnimplementedError(
      "--device cuda: this accel-worker was built without the CUDA path (nvcc or NCCL not "
      "found at configure time; docs/gpu.md)");
}

#endif

}  // namespace accel::worker
