#include "engine/config/train_options.h"

#include <atomic>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/config/batch_bounds.h"

namespace accel::config {

absl::Status ValidateTrainOptions(const TrainOptions& o) {
  auto positive = [](const char* flag, int64_t v) -> absl::Status {
    if (v > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(flag, " must be positive, got ", v));
  };
  ACCEL_RETURN_IF_ERROR(positive("--batch", o.batch));
  ACCEL_RETURN_IF_ERROR(positive("--seq", o.seq));
  ACCEL_RETURN_IF_ERROR(positive("--grad-accum", o.grad_accum));
  auto at_most = [](const char* flag, const char* key, int64_t v, int64_t max) -> absl::Status {
    if (v <= max) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " (job key ", key, ") must be at most ", max, ", got ", v));
  };
  ACCEL_RETURN_IF_ERROR(at_most("--batch", "train.micro_batch", o.batch, kMaxMicroBatch));
  ACCEL_RETURN_IF_ERROR(at_most("--grad-accum", "train.grad_accum", o.grad_accum, kMaxGradAccum));
  if (o.steps < 0) return absl::InvalidArgumentError(absl::StrCat("--steps must be >= 0, got ", o.steps));
  if (o.data.empty()) return absl::InvalidArgumentError("--data is required");
  if (!(o.schedule.base_lr >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--lr must be >= 0, got ", o.schedule.base_lr));
  }
  if (o.schedule.warmup_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--warmup must be >= 0, got ", o.schedule.warmup_steps));
  }
  if (o.max_nonfinite_steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-nonfinite-steps must be >= 0 (0: never fail), got ", o.max_nonfinite_steps));
  }
  if (!(o.grad_clip >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--grad-clip must be >= 0, got ", o.grad_clip));
  }
  if (o.eval.every_n_steps < 0 || o.eval.max_batches < 0 || o.keep_best < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eval.every_n_steps, eval.max_batches and checkpoint.keep_best must be >= 0, got ",
        o.eval.every_n_steps, ", ", o.eval.max_batches, ", ", o.keep_best));
  }
  // Asking for evaluations with nothing to evaluate on is a mistake, not a no-op.
  if (o.eval.data.empty() && (o.eval.every_n_steps > 0 || o.eval.at_start || o.keep_best > 0)) {
    return absl::InvalidArgumentError(
        "eval.every_n_steps, eval.at_start and checkpoint.keep_best need eval.data (the "
        "held-out tokens)");
  }
  if (o.sample.every < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.sample_every must be >= 0 (0: no samples), got ", o.sample.every));
  }
  if (o.sample.max_new_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train.sample_max_new_tokens must be at least 1, got ", o.sample.max_new_tokens));
  }
  if (!(o.sample.temperature >= 0) || !std::isfinite(o.sample.temperature)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train.sample_temperature must be finite and >= 0 (0: greedy), got ",
        o.sample.temperature));
  }
  return absl::OkStatus();
}

namespace {
std::atomic<int64_t> model_config_reads{0};
}  // namespace

int64_t ModelConfigReads() { return model_config_reads.load(std::memory_order_relaxed); }
void NoteModelConfigRead() { model_config_reads.fetch_add(1, std::memory_order_relaxed); }

absl::StatusOr<model::ModelConfig> ModelConfigOf(Env* env, const TrainOptions& options) {
  if (options.resolved_model.has_value()) return *options.resolved_model;
  NoteModelConfigRead();
  if (!options.model_config.empty()) return model::LoadModelConfig(env, options.model_config);
  return model::ModelPreset(options.model);
}

}  // namespace accel::config
