// Evaluation during training (evaluation.h): the eval set's batches, and Trainer::Evaluate —
// forward only over the training runner, the sums agreed across ranks in float64.
#include "engine/train/evaluation.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/train/trainer.h"
#include "nlohmann/json.hpp"

namespace accel::train {

bool EvalDue(const config::EvalOptions& eval, int64_t steps_done, int64_t total_steps) {
  if (eval.data.empty() || steps_done <= 0) return false;
  if (eval.every_n_steps > 0 && steps_done % eval.every_n_steps == 0) return true;
  return eval.at_end && steps_done == total_steps;
}

int64_t EvalBatchCount(const data::BatchLoader& loader, int64_t max_batches) {
  const int64_t all = loader.windows_per_epoch();
  return max_batches > 0 ? std::min(all, max_batches) : all;
}

int64_t CountTargets(const int32_t* targets, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += targets[i] != kIgnoreTarget ? 1 : 0;
  return count;
}

std::string EvalMetricsToJson(const EvalMetrics& m) {
  nlohmann::ordered_json j;
  j["step"] = m.step;
  j["eval_loss"] = m.loss;
  j["eval_perplexity"] = m.perplexity;
  j["eval_tokens"] = m.tokens;
  j["eval_batches"] = m.batches;
  j["eval_seconds"] = m.seconds;
  j["eval_tokens_per_s"] = m.tokens_per_s;
  return j.dump();
}

absl::Status Trainer::OpenEvalData(const model::ModelConfig& config) {
  if (options_.eval.data.empty()) return absl::OkStatus();
  ACCEL_ASSIGN_OR_RETURN(std::shared_ptr<const data::TokenSource> tokens,
                         OpenTokens(env_, options_.eval.data, "eval.data", config));
  data::BatchLoaderOptions lo;
  lo.batch_size = options_.batch;
  lo.seq_len = options_.seq;
  absl::StatusOr<std::unique_ptr<data::BatchLoader>> loader =
      data::BatchLoader::Create(std::move(tokens), lo);
  if (!loader.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("eval.data ", options_.eval.data, ": ",
                                                   loader.status().message()));
  }
  eval_loader_ = std::move(*loader);
  return absl::OkStatus();
}

absl::StatusOr<EvalMetrics> Trainer::Evaluate() {
  if (eval_loader_ == nullptr) {
    return absl::FailedPreconditionError("Evaluate: the job has no eval.data");
  }
  const int64_t start = env_->NowMicros();
  const int64_t batches = EvalBatchCount(*eval_loader_, options_.eval.max_batches);
  const int64_t positions = options_.batch * options_.seq;
  double sum = 0, count = 0;  // this rank's Σ CE and unmasked targets
  for (int64_t round = 0; round * world() < batches; ++round) {
    const int64_t b = round * world() + rank();
    const bool mine = b < batches;
    eval_loader_->Fill(mine ? b : 0, inputs_.data(), targets_.data());
    ACCEL_ASSIGN_OR_RETURN(float loss,
                           runner_->Forward(*sharded_, inputs_.data(), targets_.data()));
    if (!mine) continue;
    const int64_t n = CountTargets(targets_.data(), positions);
    if (n == 0) continue;  // the runner's mean of nothing is 0 (contract 2): adds nothing
    sum += static_cast<double>(loss) * static_cast<double>(n);
    count += static_cast<double>(n);
  }
  ACCEL_RETURN_IF_ERROR(sharded_->FinishForward());
  ACCEL_RETURN_IF_ERROR(sharded_->ops().Synchronize());
  ACCEL_ASSIGN_OR_RETURN(const double total, sharded_->SumOverRanks(sum));
  ACCEL_ASSIGN_OR_RETURN(const double targets, sharded_->SumOverRanks(count));
  EvalMetrics m;
  m.step = step_;
  m.loss = targets > 0 ? total / targets : 0;
  m.perplexity = std::exp(m.loss);
  m.tokens = static_cast<int64_t>(targets);
  m.batches = batches;
  m.seconds = static_cast<double>(env_->NowMicros() - start) * 1e-6;
  m.tokens_per_s =
      m.seconds > 0 ? static_cast<double>(batches * positions) / m.seconds : 0;
  last_eval_ = m;
  return m;
}

}  // namespace accel::train
