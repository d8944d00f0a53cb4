#include "engine/train/metrics.h"

#include "engine/base/status_macros.h"
#include "nlohmann/json.hpp"

namespace accel::train {

std::string StepMetricsToJson(const StepMetrics& m) {
  nlohmann::ordered_json j;
  j["step"] = m.step;
  j["loss"] = m.loss;
  j["lr"] = m.lr;
  j["grad_norm"] = m.grad_norm;
  j["clip_scale"] = m.clip_scale;
  j["tokens"] = m.tokens;
  if (m.loss_targets.has_value()) j["loss_targets"] = *m.loss_targets;
  j["tokens_per_s"] = m.tokens_per_s;
  j["step_seconds"] = m.step_seconds;
  j["elapsed_seconds"] = m.elapsed_seconds;
  j["eta_seconds"] = m.eta_seconds;
  j["skipped"] = m.skipped;
  if (m.loss_scale != 1) j["loss_scale"] = m.loss_scale;
  j["comm_wait_seconds"] = m.comm_wait_seconds;
  if (!m.ranks.empty()) {
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (const RankStats& r : m.ranks) ranks.push_back(nlohmann::ordered_json::parse(r.ToJson()));
    j["ranks"] = std::move(ranks);
  }
  // NaN/inf are not JSON; nlohmann writes them as null, which readers can tell apart.
  return j.dump();
}

absl::StatusOr<std::unique_ptr<MetricsWriter>> MetricsWriter::Open(Env* env,
                                                                   const std::string& path) {
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(path));
  return std::unique_ptr<MetricsWriter>(new MetricsWriter(std::move(file)));
}

absl::Status MetricsWriter::Write(const StepMetrics& m) {
  ACCEL_RETURN_IF_ERROR(file_->Append(StepMetricsToJson(m) + "\n"));
  if (++lines_ % 10 == 0) ACCEL_RETURN_IF_ERROR(file_->Sync());
  return absl::OkStatus();
}

absl::Status MetricsWriter::Close() {
  ACCEL_RETURN_IF_ERROR(file_->Sync());
  return file_->Close();
}

}  // namespace accel::train
