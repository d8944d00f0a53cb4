// Trainer's checkpoint saves (sharded, full, 16-bit), resume and SaveWeights: the collective
// protocol around engine/checkpoint, which does the files.
//
// A save runs in three phases so that no rank is ever left waiting on one that failed (after a
// phase 0 on the first save into a directory: rank 0 claims it for this job, checkpoint_dir.cc):
//   1. write: every rank its rank file (sharded kinds); then, for a model file, every rank gathers
//      unit by unit and rank 0 streams the unit into model.safetensors, or its shards above
//      MaxShardBytes (FullModelWriter). A
//      local write error is remembered, not returned, so the collectives go on.
//   2. agree: all-gather each rank's bytes written, or -1 for a failure → every rank learns
//      rank_bytes and whether any rank failed (then all return an error; nothing is committed).
//   3. commit: rank 0 writes metadata.json, renames the step and moves `latest`, then broadcasts
//      the outcome, which every rank returns.
// A collective that fails (a peer that never calls SaveCheckpoint: DeadlineExceeded; one that
// died: Unavailable) is returned at once, annotated with the step and what every rank must do.
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/tensor/buffer.h"
#include "engine/checkpoint/checkpoint_metadata.h"
#include "engine/checkpoint/full_model_writer.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/tensor/dtype.h"
#include "engine/train/trainer.h"
#include "nlohmann/json.hpp"

namespace accel::train {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(300);

int64_t MaxShardBytes(const TrainOptions& o) {
  return o.max_shard_bytes.value_or(checkpoint::kDefaultMaxShardBytes);
}

// int64 values travel as two f32 slots: all-gather and broadcast copy bytes, nothing is summed.
absl::StatusOr<std::vector<int64_t>> AllGatherInt64(comm::Communicator* c, int64_t value) {
  std::vector<int64_t> all(static_cast<size_t>(c->size()));
  ACCEL_RETURN_IF_ERROR(c->AllGather(&value, all.data(), 2, DType::kF32)->Wait(kTimeout));
  return all;
}

// Rank files hold fp32 host arrays. Ranges kept in bf16 (low precision: bf16 parameters and
// moments) pass through fp32 staging, which holds bf16 values exactly, so a resume is
// bit-identical; so do ranges in device memory, copied to and from the host.
struct Fp32Staging {
  std::vector<float> params, exp_avg, exp_avg_sq;
};

// The fp32 host arrays of one owned range: its own, or `staging` sized for it (and filled from
// the bf16 or device values when `fill`, before a save).
absl::StatusOr<checkpoint::LoadRange> StateRange(const shard::OwnedRange& r, optim::AdamW& opt,
                                                 Fp32Staging& staging, bool fill) {
  shard::DeviceOps& ops = opt.ops();
  if (r.params16 == nullptr && ops.host_addressable()) {
    return checkpoint::LoadRange{r.flat_begin, r.flat_end, r.params, opt.exp_avg().as<float>(),
                                 opt.exp_avg_sq().as<float>()};
  }
  const size_t n = static_cast<size_t>(r.flat_end - r.flat_begin);
  staging.params.resize(n);
  staging.exp_avg.resize(n);
  staging.exp_avg_sq.resize(n);
  if (fill) {
    if (r.params16 != nullptr) {
      std::vector<uint16_t> bits(n);
      const std::pair<const uint16_t*, float*> arrays[] = {
          {r.params16, staging.params.data()},
          {opt.exp_avg().as<uint16_t>(), staging.exp_avg.data()},
          {opt.exp_avg_sq().as<uint16_t>(), staging.exp_avg_sq.data()}};
      for (const auto& [src, dst] : arrays) {
        ACCEL_RETURN_IF_ERROR(ops.ToHost(bits.data(), src, n * sizeof(uint16_t)));
        Bf16ToFloat(bits.data(), dst, n);
      }
    } else {
      ACCEL_RETURN_IF_ERROR(ops.ToHost(staging.params.data(), r.params, n * sizeof(float)));
      ACCEL_RETURN_IF_ERROR(ops.ToHost(staging.exp_avg.data(), opt.exp_avg().data(), n * 4));
      ACCEL_RETURN_IF_ERROR(
          ops.ToHost(staging.exp_avg_sq.data(), opt.exp_avg_sq().data(), n * sizeof(float)));
    }
  }
  return checkpoint::LoadRange{r.flat_begin, r.flat_end, staging.params.data(),
                               staging.exp_avg.data(), staging.exp_avg_sq.data()};
}

// After a load into staging: round it into the bf16 parameters and moments, or copy it to the
// device.
absl::Status Unstage(const shard::OwnedRange& r, optim::AdamW& opt, const Fp32Staging& staging) {
  shard::DeviceOps& ops = opt.ops();
  const size_t n = staging.params.size();
  if (r.params16 != nullptr) {
    std::vector<uint16_t> bits(n);
    const std::pair<const float*, uint16_t*> arrays[] = {
        {staging.params.data(), r.params16},
        {staging.exp_avg.data(), opt.exp_avg().as<uint16_t>()},
        {staging.exp_avg_sq.data(), opt.exp_avg_sq().as<uint16_t>()}};
    for (const auto& [src, dst] : arrays) {
      FloatToBf16(src, bits.data(), n);
      ACCEL_RETURN_IF_ERROR(ops.FromHost(dst, bits.data(), n * sizeof(uint16_t)));
    }
  } else if (!ops.host_addressable()) {
    ACCEL_RETURN_IF_ERROR(ops.FromHost(r.params, staging.params.data(), n * sizeof(float)));
    ACCEL_RETURN_IF_ERROR(ops.FromHost(opt.exp_avg().data(), staging.exp_avg.data(), n * 4));
    ACCEL_RETURN_IF_ERROR(
        ops.FromHost(opt.exp_avg_sq().data(), staging.exp_avg_sq.data(), n * sizeof(float)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> BroadcastInt64(comm::Communicator* c, int64_t value, int root) {
  ACCEL_RETURN_IF_ERROR(c->Broadcast(&value, 2, DType::kF32, root)->Wait(kTimeout));
  return value;
}

// Every kind the trainer writes carries rank files, so every checkpoint resumes exactly (as
// Accelerate's save_state does under FULL_STATE_DICT, which saves the optimizer too);
// FULL_STATE_DICT adds the gathered fp32 model file, save_16bit a 16-bit one instead.
std::string KindOf(const TrainOptions& o) {
  if (o.save_16bit) return checkpoint::kKindSharded16Bit;
  return o.state_dict_type == TrainOptions::StateDictType::kFull ? checkpoint::kKindShardedFull
                                                                 : checkpoint::kKindSharded;
}

// The model file's dtype: fp32 for FULL_STATE_DICT; for 16-bit saves the training's
// half-precision type (f16 when parameters are computed in f16, bf16 otherwise).
DType ModelFileDType(const TrainOptions& o) {
  if (!o.save_16bit) return DType::kF32;
  return o.shard.param_dtype == DType::kF16 ? DType::kF16 : DType::kBF16;
}

}  // namespace

absl::Status Trainer::GatherUnits(
    const std::function<absl::Status(int unit, const float* values)>& sink) {
  int64_t largest = 1;
  for (int u = 0; u < layout_->num_units(); ++u) largest = std::max(largest, layout_->unit(u).numel);
  ACCEL_ASSIGN_OR_RETURN(Buffer unit, AllocateFloats(static_cast<size_t>(largest),
                                                     MemoryPool::kHost, MemoryCategory::kOther,
                                                     ledger_));
  absl::Status sink_status;
  for (int u = 0; u < layout_->num_units(); ++u) {
    ACCEL_RETURN_IF_ERROR(sharded_->GatherUnit(u, unit.as<float>()));
    if (rank() == 0 && sink_status.ok()) sink_status = sink(u, unit.as<float>());
  }
  return sink_status;
}

absl::StatusOr<CheckpointEvent> Trainer::SaveCheckpoint(const std::string& dir, int keep_last) {
  const int64_t start = env_->NowMicros();
  const std::string context =
      absl::StrCat("checkpoint save of step ", step_, " into ", dir, " (rank ", rank(), ")");
  auto collective_failed = [&](const absl::Status& s) {
    return Annotate(s, absl::StrCat(context, ": waiting for the other ranks (every rank must call "
                                             "SaveCheckpoint for the same step)"));
  };
  const shard::ShardPlan& plan = sharded_->plan();
  const std::string kind = KindOf(options_);
  const bool rank_files = checkpoint::KindHasRankFiles(kind);
  const bool model_file = kind != checkpoint::kKindSharded;
  const std::string tmp = checkpoint::StepTmpDir(dir, step_);

  // Phase 0: the directory is this job's; the first save into it claims it (dir_owner.h), so no
  // rank writes a byte into another job's directory.
  if (absl::Status owned = AgreeOnCheckpointDir(dir, /*claim=*/true); !owned.ok()) {
    return absl::IsUnavailable(owned) || absl::IsDeadlineExceeded(owned) ? collective_failed(owned)
                                                                         : owned;
  }

  // Phase 1: write.
  absl::Status local;
  int64_t my_bytes = 0;
  if (rank_files) {
    std::vector<checkpoint::SaveRange> ranges;
    std::vector<Fp32Staging> staging(optimizers_.size());
    if (plan.PrimaryReplica()) {
      std::vector<shard::OwnedRange> owned = sharded_->OwnedRanges();
      for (size_t i = 0; i < owned.size() && local.ok(); ++i) {
        absl::StatusOr<checkpoint::LoadRange> r =
            StateRange(owned[i], optimizers_[i], staging[i], /*fill=*/true);
        local = r.status();
        if (r.ok()) ranges.push_back({r->flat_begin, r->flat_end, r->params, r->exp_avg,
                                      r->exp_avg_sq});
      }
    }
    if (local.ok()) local = checkpoint::WriteRankFile(env_, dir, step_, rank(), ranges);
    staging.clear();
    if (local.ok()) {
      absl::StatusOr<uint64_t> size =
          env_->GetFileSize(JoinPath(tmp, checkpoint::RankFileName(rank())));
      local = size.status();
      if (size.ok()) my_bytes += static_cast<int64_t>(*size);
    }
  }
  std::vector<checkpoint::ModelFileInfo> model_files;
  if (model_file) {
    std::unique_ptr<checkpoint::FullModelWriter> writer;
    if (rank() == 0 && local.ok()) {
      absl::Status created = env_->CreateDirs(tmp);
      if (!created.ok() && !env_->FileExists(tmp)) local = created;
      if (local.ok()) {
        auto w = checkpoint::FullModelWriter::Create(
            env_, JoinPath(tmp, checkpoint::kModelFileName), layout_.get(),
            ModelFileDType(options_), MaxShardBytes(options_));
        local = w.status();
        if (w.ok()) writer = std::move(*w);
      }
    }
    ACCEL_RETURN_IF_ERROR(collective_failed(GatherUnits([&](int u, const float* values) {
      if (local.ok() && writer != nullptr) local = writer->AppendUnit(u, values);
      return absl::OkStatus();
    })));
    if (writer != nullptr && local.ok()) {
      absl::StatusOr<std::vector<checkpoint::ModelFileInfo>> files =
          writer->Finish(/*write_config=*/true);
      local = files.status();
      if (files.ok()) {
        for (const checkpoint::ModelFileInfo& f : *files) my_bytes += static_cast<int64_t>(f.bytes);
        my_bytes += static_cast<int64_t>(
            env_->GetFileSize(JoinPath(tmp, "config.json")).value_or(0));
        model_files = std::move(*files);
      }
    }
  }

  // Phase 2: agree.
  absl::StatusOr<std::vector<int64_t>> all =
      AllGatherInt64(host_world_, local.ok() ? my_bytes : -1);
  if (!all.ok()) return collective_failed(all.status());
  if (!local.ok()) return Annotate(local, context);
  CheckpointEvent event;
  event.step = step_;
  event.path = checkpoint::StepDir(dir, step_);
  event.kind = kind;
  if (last_eval_.has_value() && last_eval_->step == step_) event.eval_loss = last_eval_->loss;
  for (int r = 0; r < world(); ++r) {
    if ((*all)[r] < 0) {
      return absl::AbortedError(absl::StrCat(context, ": rank ", r, " could not write its part; ",
                                             "the step is not committed (see rank ", r, "'s log)"));
    }
    event.rank_bytes.push_back((*all)[r]);
    event.bytes += (*all)[r];
  }

  // Phase 3: rank 0 commits; everyone returns its outcome.
  absl::Status committed;
  if (rank() == 0) {
    checkpoint::CheckpointMeta meta;
    meta.step = step_;
    meta.kind = kind;
    meta.owner = options_.checkpoint_owner;
    meta.eval_loss = event.eval_loss;
    meta.model_files = model_files;
    meta.data_position = step_ * options_.grad_accum;
    meta.optimizer_step = applied_steps_;
    meta.world_size = world();
    meta.strategy = std::string(shard::StrategyName(plan.strategy()));
    meta.model_config_json = model::ModelConfigToJson(layout_->config());
    nlohmann::json train = {{"batch", options_.batch},
                            {"seq", options_.seq},
                            {"grad_accum", options_.grad_accum},
                            {"steps", options_.steps},
                            {"lr", options_.schedule.base_lr},
                            {"seed", options_.seed}};
    meta.train_config_json = train.dump();
    if (scaler_.enabled()) meta.loss_scaler_json = scaler_.ToJson();
    // Every rank's ranges follow from the plan alone (a pure function of rank).
    for (int r = 0; rank_files && r < world(); ++r) {
      absl::StatusOr<shard::ShardPlan> p =
          shard::ShardPlan::Create(*layout_, world(), r, plan.options());
      if (!p.ok()) {
        committed = p.status();
        break;
      }
      meta.ranges_by_rank.push_back(p->PrimaryReplica()
                                        ? p->OwnedFlatRanges()
                                        : std::vector<std::pair<int64_t, int64_t>>{});
    }
    if (committed.ok()) {
      committed = checkpoint::WriteMetadataAndCommit(env_, dir, meta, *layout_, keep_last,
                                                     options_.keep_best);
    }
  }
  absl::StatusOr<int64_t> outcome = BroadcastInt64(host_world_, committed.ok() ? 1 : 0, 0);
  if (!outcome.ok()) return collective_failed(outcome.status());
  if (!committed.ok()) return Annotate(committed, context);
  if (*outcome != 1) {
    return absl::AbortedError(
        absl::StrCat(context, ": rank 0 could not commit the step (see rank 0's log)"));
  }
  event.seconds = static_cast<double>(env_->NowMicros() - start) * 1e-6;
  return event;
}

absl::Status Trainer::Resume(const std::string& dir) {
  ACCEL_ASSIGN_OR_RETURN(std::string step_dir, checkpoint::LatestStepDir(env_, dir));
  ACCEL_ASSIGN_OR_RETURN(checkpoint::CheckpointMeta meta,
                         checkpoint::ReadMetadata(env_, step_dir));
  if (meta.data_position != meta.step * options_.grad_accum) {
    return absl::InvalidArgumentError(absl::StrCat(
        step_dir, ": saved with ", meta.data_position / std::max<int64_t>(meta.step, 1),
        " micro-batches per step; resuming with grad_accum ", options_.grad_accum,
        " would change the data order"));
  }
  if (!checkpoint::KindHasRankFiles(meta.kind)) {
    // The trainer never writes model-only steps; one made elsewhere holds no optimizer state,
    // so it cannot continue a run — it can start one.
    return absl::FailedPreconditionError(absl::StrCat(
        step_dir, " is a \"", meta.kind, "\" step (model file only, no optimizer state): it "
        "cannot be resumed; start from its weights with --init-weights ", step_dir));
  }
  std::vector<shard::OwnedRange> owned = sharded_->OwnedRanges();
  std::vector<checkpoint::LoadRange> ranges;
  std::vector<Fp32Staging> staging(owned.size());
  for (size_t i = 0; i < owned.size(); ++i) {
    ACCEL_ASSIGN_OR_RETURN(checkpoint::LoadRange r,
                           StateRange(owned[i], optimizers_[i], staging[i], /*fill=*/false));
    ranges.push_back(r);
  }
  ACCEL_RETURN_IF_ERROR(checkpoint::LoadRanges(env_, step_dir, *layout_, ranges));
  for (size_t i = 0; i < owned.size(); ++i) {
    ACCEL_RETURN_IF_ERROR(Unstage(owned[i], optimizers_[i], staging[i]));
  }
  for (optim::AdamW& opt : optimizers_) opt.set_step(meta.optimizer_step);
  applied_steps_ = meta.optimizer_step;
  if (scaler_.enabled() && !meta.loss_scaler_json.empty()) {
    ACCEL_RETURN_IF_ERROR(Annotate(scaler_.FromJson(meta.loss_scaler_json),
                                   absl::StrCat(step_dir, "/metadata.json: loss_scaler")));
  }
  step_ = meta.step;
  // Ranks that keep full parameters loaded only their slices: gather the rest.
  return sharded_->FinishStep();
}

absl::Status Trainer::SaveWeights(const std::string& path, DType dtype) {
  std::unique_ptr<checkpoint::FullModelWriter> writer;
  absl::Status local;
  if (rank() == 0) {
    local = env_->CreateDirs(DirName(path));
    if (local.ok()) {
      auto w = checkpoint::FullModelWriter::Create(env_, path, layout_.get(), dtype,
                                                   MaxShardBytes(options_));
      local = w.status();
      if (w.ok()) writer = std::move(*w);
    }
  }
  ACCEL_RETURN_IF_ERROR(GatherUnits([&](int u, const float* values) {
    if (local.ok() && writer != nullptr) local = writer->AppendUnit(u, values);
    return absl::OkStatus();
  }));
  if (writer != nullptr && local.ok()) local = writer->Finish(/*write_config=*/true).status();
  ACCEL_ASSIGN_OR_RETURN(int64_t ok, BroadcastInt64(host_world_, local.ok() ? 1 : 0, 0));
  if (!local.ok()) return local;
  if (ok != 1) {
    return absl::AbortedError(absl::StrCat("rank 0 could not write ", path, " (see its log)"));
  }
  return absl::OkStatus();
}

}  // namespace accel::train
