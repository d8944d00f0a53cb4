// Samples during training (sampling.h): Trainer::Sample — one gather on every rank, generation
// on rank 0, the other ranks kept waiting by its heartbeat.
#include "engine/train/sampling.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/tensor/buffer.h"
#include "engine/text/utf8.h"
#include "engine/train/sample_heartbeat.h"
#include "engine/train/trainer.h"
#include "nlohmann/json.hpp"

namespace accel::train {

bool SampleDue(const config::SampleOptions& sample, int64_t steps_done, int64_t total_steps) {
  if (!sample.enabled() || steps_done <= 0) return false;
  return steps_done % sample.every == 0 || steps_done == total_steps;
}

std::string SampleResultToJson(const SampleResult& s) {
  nlohmann::ordered_json j;
  j["step"] = s.step;
  j["prompt"] = s.prompt;
  j["text"] = s.text;
  j["ids"] = s.ids;
  j["stop_reason"] = s.stop_reason;
  j["seconds"] = s.seconds;
  j["tokens_per_s"] = s.tokens_per_s;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::Status Trainer::OpenSampler(const model::ModelConfig& config) {
  if (!options_.sample.enabled() || rank() != 0) return absl::OkStatus();
  ACCEL_ASSIGN_OR_RETURN(generate::TrainingSampler sampler,
                         generate::TrainingSampler::Open(env_, options_.sample, config,
                                                         options_.seq));
  sampler_ = std::make_unique<generate::TrainingSampler>(std::move(sampler));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<SampleResult>> Trainer::Sample(
    const std::function<absl::Status(const SampleResult&)>& on_sample) {
  if (!options_.sample.enabled()) {
    return absl::FailedPreconditionError("Sample: the job has no train.sample_every");
  }
  // Only rank 0 holds the whole model (charged to the host pool while it samples); the others'
  // sink is never called.
  Buffer full;
  if (rank() == 0) {
    ACCEL_ASSIGN_OR_RETURN(full, AllocateFloats(static_cast<size_t>(layout_->num_params()),
                                                MemoryPool::kHost, MemoryCategory::kOther,
                                                ledger_));
  }
  ACCEL_RETURN_IF_ERROR(GatherUnits([&](int u, const float* values) {
    const model::UnitRange& unit = layout_->unit(u);
    std::copy(values, values + unit.numel, full.as<float>() + unit.offset);
    return absl::OkStatus();
  }));
  // The other ranks wait for rank 0 here, kept alive by its heartbeat, not in the next step's
  // collective under comm_timeout_s (sample_heartbeat.h).
  if (rank() != 0) {
    ACCEL_RETURN_IF_ERROR(WaitForRankZeroSample(host_world_));
    return std::nullopt;
  }
  std::optional<SampleHeartbeat> heartbeat;
  if (world() > 1) {
    heartbeat.emplace(host_world_, absl::Seconds(options_.sample.heartbeat_s),
                      absl::Seconds(options_.sample.limit_s));
    heartbeat->Start();
  }
  absl::StatusOr<SampleResult> s = SampleOnRankZero(full.as<float>());
  if (s.ok() && on_sample) {
    if (absl::Status reported = on_sample(*s); !reported.ok()) s = reported;
  }
  if (heartbeat.has_value()) {
    absl::Status rendezvous = heartbeat->Finish(s.ok());
    if (s.ok() && !rendezvous.ok()) return rendezvous;
  }
  if (!s.ok()) return s.status();
  return *std::move(s);
}

absl::StatusOr<SampleResult> Trainer::SampleOnRankZero(const float* full) {
  const int64_t start = env_->NowMicros();
  ACCEL_ASSIGN_OR_RETURN(generate::GenerateResult g, sampler_->Run(*layout_, full, step_));
  SampleResult s;
  s.step = step_;
  s.prompt = options_.sample.prompt;
  s.prompt_ids = sampler_->prompt_ids();
  s.text = text::ToValidUtf8(g.text);  // a byte-level model writes any bytes
  s.ids = std::move(g.ids);
  s.stop_reason = std::move(g.stop_reason);
  s.seconds = static_cast<double>(env_->NowMicros() - start) * 1e-6;
  s.tokens_per_s = s.seconds > 0 ? static_cast<double>(s.ids.size()) / s.seconds : 0;
  return s;
}

}  // namespace accel::train
