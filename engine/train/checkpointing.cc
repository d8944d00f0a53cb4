// Trainer's sharded checkpoint save and resume (engine/checkpoint/sharded_checkpoint.h drives
// the files; this is the collective protocol around it).
#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/train/trainer.h"
#include "nlohmann/json.hpp"

namespace accel::train {

absl::StatusOr<CheckpointEvent> Trainer::SaveCheckpoint(const std::string& dir, int keep_last) {
  const int64_t start = env_->NowMicros();
  const shard::ShardPlan& plan = sharded_->plan();
  std::vector<checkpoint::SaveRange> ranges;
  if (plan.PrimaryReplica()) {
    std::vector<shard::OwnedRange> owned = sharded_->OwnedRanges();
    for (size_t i = 0; i < owned.size(); ++i) {
      ranges.push_back({owned[i].flat_begin, owned[i].flat_end, owned[i].params,
                        optimizers_[i].exp_avg().as<float>(),
                        optimizers_[i].exp_avg_sq().as<float>()});
    }
  }
  ACCEL_RETURN_IF_ERROR(checkpoint::WriteRankFile(env_, dir, step_, rank(), ranges));
  ACCEL_RETURN_IF_ERROR(groups_.world->Barrier()->Wait(absl::Seconds(300)));
  CheckpointEvent event;
  event.step = step_;
  event.path = checkpoint::StepDir(dir, step_);
  event.kind = "sharded";
  for (const auto& r : ranges) event.bytes += 3 * (r.flat_end - r.flat_begin) * 4;
  if (rank() == 0) {
    checkpoint::CheckpointMeta meta;
    meta.step = step_;
    meta.data_position = step_ * options_.grad_accum;
    meta.optimizer_step = optimizers_.empty() ? 0 : optimizers_.front().step();
    meta.world_size = world();
    meta.strategy = std::string(shard::StrategyName(plan.strategy()));
    meta.model_config_json = model::Gpt2ConfigToJson(layout_->config());
    nlohmann::json train = {{"batch", options_.batch},
                            {"seq", options_.seq},
                            {"grad_accum", options_.grad_accum},
                            {"steps", options_.steps},
                            {"lr", options_.schedule.base_lr},
                            {"seed", options_.seed}};
    meta.train_config_json = train.dump();
    // Every rank's ranges follow from the plan alone (a pure function of rank).
    for (int r = 0; r < world(); ++r) {
      ACCEL_ASSIGN_OR_RETURN(shard::ShardPlan p,
                             shard::ShardPlan::Create(*layout_, world(), r, plan.options()));
      meta.ranges_by_rank.push_back(p.PrimaryReplica() ? p.OwnedFlatRanges()
                                                       : std::vector<std::pair<int64_t, int64_t>>{});
    }
    ACCEL_RETURN_IF_ERROR(checkpoint::WriteMetadataAndCommit(env_, dir, meta, *layout_, keep_last));
  }
  // Nobody goes on (or reports the save) before it is committed.
  ACCEL_RETURN_IF_ERROR(groups_.world->Barrier()->Wait(absl::Seconds(300)));
  event.seconds = static_cast<double>(env_->NowMicros() - start) * 1e-6;
  return event;
}

absl::Status Trainer::Resume(const std::string& dir) {
  ACCEL_ASSIGN_OR_RETURN(std::string step_dir, checkpoint::LatestStepDir(env_, dir));
  ACCEL_ASSIGN_OR_RETURN(checkpoint::CheckpointMeta meta,
                         checkpoint::ReadMetadata(env_, step_dir));
  std::vector<shard::OwnedRange> owned = sharded_->OwnedRanges();
  std::vector<checkpoint::LoadRange> ranges;
  for (size_t i = 0; i < owned.size(); ++i) {
    ranges.push_back({owned[i].flat_begin, owned[i].flat_end, owned[i].params,
                      optimizers_[i].exp_avg().as<float>(),
                      optimizers_[i].exp_avg_sq().as<float>()});
  }
  ACCEL_RETURN_IF_ERROR(checkpoint::LoadRanges(env_, step_dir, *layout_, ranges));
  for (optim::AdamW& opt : optimizers_) opt.set_step(meta.optimizer_step);
  if (meta.data_position != meta.step * options_.grad_accum) {
    return absl::InvalidArgumentError(absl::StrCat(
        step_dir, ": saved with ", meta.data_position / std::max<int64_t>(meta.step, 1),
        " micro-batches per step; resuming with grad_accum ", options_.grad_accum,
        " would change the data order"));
  }
  step_ = meta.step;
  // Ranks that keep full parameters loaded only their slices: gather the rest.
  return sharded_->FinishStep();
}

}  // namespace accel::train
