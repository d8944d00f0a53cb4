// Per-step training metrics, their JSON-lines form, and the writer of --metrics-out.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/base/env.h"
#include "engine/train/rank_stats.h"

namespace accel::train {

struct StepMetrics {
  int64_t step = 0;          // 0-based index of the optimizer step just taken
  int64_t total_steps = 0;
  float loss = 0;            // mean over the step's micro-batches (masked: over loss_targets)
  float lr = 0;
  double grad_norm = 0;      // global L2 norm before clipping
  float clip_scale = 1;      // factor applied to the gradients (1 = not clipped)
  int64_t tokens = 0;        // tokens processed in this step (all micro-batches)
  // With a loss mask: the step's targets whose loss counted (all ranks and micro-batches); the
  // loss is their mean. Unset without a mask (every target counts).
  std::optional<int64_t> loss_targets;
  double step_seconds = 0;
  double tokens_per_s = 0;
  double elapsed_seconds = 0;
  double eta_seconds = 0;    // remaining steps at the mean step time so far
  bool skipped = false;      // non-finite loss or gradient (fp16 overflow): update skipped
  double loss_scale = 1;     // fp16 dynamic loss scale used for this step (1 otherwise)
  // Seconds the trainer waited on collectives in this step (exposed communication; the rest of
  // step_seconds is compute and communication that overlapped it).
  double comm_wait_seconds = 0;
  // Every rank's memory and traffic, on steps with a stats record (TrainOptions::
  // rank_stats_every); empty otherwise.
  std::vector<RankStats> ranks;
};

// One JSON object, no trailing newline: {"step":..,"loss":..,"lr":..,"grad_norm":..,
// "tokens_per_s":..,...}.
std::string StepMetricsToJson(const StepMetrics& m);

// Appends one JSON line per step to a file. Each line is written with one append and flushed by
// Sync() every `sync_every` lines and on Close, so a crash loses at most those lines.
class MetricsWriter {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MetricsWriter>> Open(Env* env,
                                                                           const std::string& path);
  [[nodiscard]] absl::Status Write(const StepMetrics& m);
  [[nodiscard]] absl::Status Close();

 private:
  explicit MetricsWriter(std::unique_ptr<WritableFile> file) : file_(std::move(file)) {}
  std::unique_ptr<WritableFile> file_;
  int64_t lines_ = 0;
};

}  // namespace accel::train
