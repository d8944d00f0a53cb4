#include "worker/standalone_device.h"

#include <cstdio>
#include <memory>

#include "engine/base/status_macros.h"
#include "engine/train/metrics.h"

#if defined(ACCEL_WORKER_CUDA)
#include "engine/train/cuda/device_trainer.h"
#endif

namespace accel::worker {

#if defined(ACCEL_WORKER_CUDA)

absl::Status RunStandaloneOnDevice(const StandaloneFlags& f, DType save_dtype) {
  const bool json = f.output == "json";
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<train::DeviceTrainer> trainer,
                         train::DeviceTrainer::Create(f.train));
  const model::Gpt2Config& config = trainer->layout().config();
  if (!json) {
    std::printf("accel-worker standalone: cuda device 0, model %s (%lld params), data %s, "
                "B=%lld T=%lld accum=%lld\n",
                config.name.c_str(), static_cast<long long>(config.NumParams()),
                f.train.data.c_str(), static_cast<long long>(f.train.batch),
                static_cast<long long>(f.train.seq), static_cast<long long>(f.train.grad_accum));
    std::fflush(stdout);
  }
  std::unique_ptr<train::MetricsWriter> metrics;
  if (!f.metrics_out.empty()) {
    ACCEL_ASSIGN_OR_RETURN(metrics, train::MetricsWriter::Open(Env::Default(), f.metrics_out));
  }
  ACCEL_RETURN_IF_ERROR(trainer->Train([&](const train::StepMetrics& m) -> absl::Status {
    if (metrics) ACCEL_RETURN_IF_ERROR(metrics->Write(m));
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
    if (!json) std::printf("saved %s\n", f.save_final.c_str());
  }
  if (!json) {
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

absl::Status RunStandaloneOnDevice(const StandaloneFlags&, DType) {
  return absl::UnimplementedError(
      "--device cuda: this accel-worker was built without the CUDA path (nvcc not found at "
      "configure time; docs/gpu.md)");
}

#endif

}  // namespace accel::worker
