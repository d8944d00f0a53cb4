// ShardedModel: the facade over the parts Parallelize composes. Each method says which parts
// take part in it, in which order; none of them knows the strategy.
#include "engine/shard/sharded_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"

namespace accel::shard {

using model::Pass;

absl::StatusOr<std::unique_ptr<ShardedModel>> ShardedModel::Create(
    const model::ModelLayout* layout, ShardPlan plan, ProcessGroups groups, absl::Duration timeout,
    MemoryLedger* ledger, DeviceOps* ops) {
  ACCEL_ASSIGN_OR_RETURN(ShardParts parts,
                         Parallelize(layout, std::move(plan), groups, timeout, ledger, ops));
  return std::unique_ptr<ShardedModel>(new ShardedModel(std::move(parts)));
}

float ShardedModel::GradScale(int accum) const {
  return static_cast<float>(loss_scale_ / (static_cast<double>(accum) * plan().world()));
}

// ---- ParamAccess ------------------------------------------------------------------------------

absl::StatusOr<const float*> ShardedModel::Params(int u, Pass pass) {
  ACCEL_ASSIGN_OR_RETURN(const void* full, parts_.params->Use(u, pass));
  return parts_.precision->ComputeParams(u, full);
}

absl::Status ShardedModel::Release(int u, Pass pass) {
  parts_.precision->Release(u);
  return parts_.params->Release(u, pass);
}

// ---- the step ---------------------------------------------------------------------------------

absl::Status ShardedModel::EndMicroStep(int micro, int accum) {
  ACCEL_RETURN_IF_ERROR(parts_.grads->EndMicroStep(micro, accum));
  if (micro != accum - 1) return absl::OkStatus();
  return parts_.optimizer->PrepareGrads(*parts_.grads, loss_scale_);
}

absl::StatusOr<double> ShardedModel::GradNormSquared() {
  // Each rank sums its shard partition of every unit, whichever span its optimizer holds.
  double partial = 0;
  if (const std::vector<double>& taken = parts_.optimizer->ShardGradSquares(); !taken.empty()) {
    // Taken as the gradients went to their files; the same parts, added in the same order.
    for (double part : taken) partial += part;
  } else {
    std::vector<FloatSpan> parts;
    for (int u = 0; u < ctx().num_units(); ++u) {
      const UnitShard& us = ctx().unit(u);
      const int64_t skip = us.shard_begin - ctx().optimizer_span(u).begin;
      parts.push_back({parts_.optimizer->Grads(u) + skip, us.shard_valid});
    }
    ACCEL_ASSIGN_OR_RETURN(partial, parts_.optimizer->grads_ops().SumOfSquares(parts));
  }
  // Replicas of a hybrid group hold identical shards: sum within the shard group only.
  ACCEL_ASSIGN_OR_RETURN(const std::vector<double> all,
                         ctx().AllGatherDouble(*ctx().host_shard(), partial));
  double total = 0;
  for (double v : all) total += v;
  return total;
}

absl::StatusOr<double> ShardedModel::MeanOverRanks(double value) {
  ACCEL_ASSIGN_OR_RETURN(const double total, SumOverRanks(value));
  return total / static_cast<double>(ctx().host_world()->size());
}

absl::StatusOr<double> ShardedModel::SumOverRanks(double value) {
  ACCEL_ASSIGN_OR_RETURN(const std::vector<double> all,
                         ctx().AllGatherDouble(*ctx().host_world(), value));
  double total = 0;
  for (double v : all) total += v;
  return total;
}

std::vector<OwnedRange> ShardedModel::OwnedRanges() {
  std::vector<OwnedRange> ranges;
  for (int u = 0; u < ctx().num_units(); ++u) {
    // The real elements of the unit's optimizer span; none in an all-padding shard.
    const UnitShard& us = ctx().unit(u);
    const OptimizerSpan span = ctx().optimizer_span(u);
    const int64_t begin = us.offset + span.begin;
    const int64_t end = us.offset + std::min(span.begin + span.length, us.numel);
    if (end <= begin) continue;
    const OptimizerValues::Span values = parts_.optimizer->Params(u);
    ranges.push_back({u, begin, end, values.params, parts_.optimizer->Grads(u), values.params16});
  }
  return ranges;
}

absl::StatusOr<TileHook> ShardedModel::BeforeRangeUpdate(const OwnedRange& range) {
  ACCEL_RETURN_IF_ERROR(parts_.params->SettleGathers());
  return parts_.optimizer->UpdateHook(range.unit);
}

absl::Status ShardedModel::RangeUpdated(const OwnedRange& range) {
  // Gathers still in flight read the values about to change (after the first range there are
  // none left, and settling again is a check per unit).
  ACCEL_RETURN_IF_ERROR(parts_.params->SettleGathers());
  return parts_.optimizer->UnitUpdated(range.unit);
}

absl::Status ShardedModel::FinishStep() {
  ACCEL_RETURN_IF_ERROR(parts_.params->SettleGathers());
  parts_.precision->ReleaseAll();
  ACCEL_RETURN_IF_ERROR(parts_.optimizer->FinishStep());
  ACCEL_RETURN_IF_ERROR(parts_.params->AfterUpdate());
  return EvictOffloaded();
}

absl::Status ShardedModel::FinishForward() {
  ACCEL_RETURN_IF_ERROR(parts_.params->SettleGathers());
  parts_.precision->ReleaseAll();
  parts_.params->ReleaseKept();
  return absl::OkStatus();
}

// ---- loading and saving -----------------------------------------------------------------------

absl::Status ShardedModel::CheckUnit(int u) const {
  if (u < 0 || u >= ctx().num_units()) {
    return absl::InvalidArgumentError(absl::StrCat("unit ", u, " out of range"));
  }
  return absl::OkStatus();
}

absl::Status ShardedModel::LoadUnitRange(int u, const float* values) {
  ACCEL_RETURN_IF_ERROR(CheckUnit(u));
  return parts_.optimizer->Load(u, values);
}

absl::Status ShardedModel::LoadUnit(int u, const float* unit_values) {
  return LoadUnitRange(u, unit_values + HeldRange(u).first);
}

absl::Status ShardedModel::LoadFull(const float* full) {
  for (int u = 0; u < ctx().num_units(); ++u) {
    ACCEL_RETURN_IF_ERROR(LoadUnit(u, full + ctx().unit(u).offset));
  }
  return absl::OkStatus();
}

absl::Status ShardedModel::BroadcastFull(float* full, int root) {
  return ctx().OnHost([&] {
    return host_world()->Broadcast(full, ctx().layout().num_params(), DType::kF32, root);
  });
}

absl::Status ShardedModel::GatherUnit(int u, float* out) {
  ACCEL_RETURN_IF_ERROR(CheckUnit(u));
  return parts_.optimizer->Save(u, out);
}

absl::Status ShardedModel::GatherFull(float* out) {
  for (int u = 0; u < ctx().num_units(); ++u) {
    ACCEL_RETURN_IF_ERROR(GatherUnit(u, out + ctx().unit(u).offset));
  }
  return absl::OkStatus();
}

}  // namespace accel::shard
