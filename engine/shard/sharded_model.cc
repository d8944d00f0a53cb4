#include "engine/shard/sharded_model.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/kernels/adamw.h"

namespace accel::shard {
namespace {

using model::Pass;

// A double travels through an f32 all-gather as its two 32-bit halves (a bit copy).
constexpr size_t kDoubleAsFloats = sizeof(double) / sizeof(float);

}  // namespace

absl::StatusOr<std::unique_ptr<ShardedModel>> ShardedModel::Create(
    const model::Gpt2Layout* layout, ShardPlan plan, ProcessGroups groups, absl::Duration timeout,
    MemoryLedger* ledger) {
  if (groups.world == nullptr || groups.shard == nullptr) {
    return absl::InvalidArgumentError("ShardedModel needs a world and a shard communicator");
  }
  if (groups.world->size() != plan.world() || groups.shard->size() != plan.shard_group_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "communicator sizes (world ", groups.world->size(), ", shard ", groups.shard->size(),
        ") do not match the plan (", plan.world(), ", ", plan.shard_group_size(), ")"));
  }
  if (plan.hybrid() && plan.num_replicas() > 1 &&
      (groups.replicate == nullptr || groups.replicate->size() != plan.num_replicas())) {
    return absl::InvalidArgumentError(absl::StrCat("hybrid sharding needs a replicate "
                                                   "communicator of ",
                                                   plan.num_replicas(), " ranks"));
  }
  std::unique_ptr<ShardedModel> m(new ShardedModel(
      layout, std::move(plan), groups, timeout, ledger ? ledger : MemoryLedger::Default()));
  ACCEL_RETURN_IF_ERROR(m->Allocate());
  return m;
}

ShardedModel::~ShardedModel() {
  // Outstanding collectives read and write our buffers: let them finish (or fail) first.
  for (Unit& u : units_) {
    if (u.gather) (void)u.gather->Wait(timeout_);
  }
  for (const PendingReduce& p : pending_reduces_) (void)p.work->Wait(timeout_);
}

absl::Status ShardedModel::Allocate() {
  auto alloc = [&](int64_t n, MemoryCategory c, Buffer* b) -> absl::Status {
    ACCEL_ASSIGN_OR_RETURN(*b, AllocateFloats(n, MemoryPool::kDevice, c, ledger_));
    return absl::OkStatus();
  };
  units_.resize(plan_.num_units());
  for (int u = 0; u < plan_.num_units(); ++u) {
    const UnitShard& us = plan_.unit(u);
    Unit& unit = units_[u];
    if (plan_.params_persistent()) {
      ACCEL_RETURN_IF_ERROR(alloc(us.padded_numel, MemoryCategory::kParams, &unit.full));
      unit.gathered = true;
    } else {
      ACCEL_RETURN_IF_ERROR(alloc(us.shard_numel, MemoryCategory::kParams, &unit.shard));
    }
    if (plan_.reduce_per_unit()) {
      ACCEL_RETURN_IF_ERROR(alloc(us.shard_numel, MemoryCategory::kGrads, &unit.shard_grads));
    } else {
      ACCEL_RETURN_IF_ERROR(alloc(us.padded_numel, MemoryCategory::kGrads, &unit.full_grads));
    }
  }
  return absl::OkStatus();
}

float ShardedModel::GradScale(int accum) const {
  return 1.0f / static_cast<float>(accum * plan_.world());
}

absl::Status ShardedModel::Wait(const std::shared_ptr<comm::Work>& work) {
  return work->Wait(timeout_);
}

std::pair<int64_t, int64_t> ShardedModel::HeldRange(int u) const {
  const UnitShard& us = plan_.unit(u);
  if (plan_.params_persistent()) return {0, us.numel};
  return {us.shard_begin, us.shard_begin + us.shard_valid};
}

absl::Status ShardedModel::LoadUnitRange(int u, const float* values) {
  if (u < 0 || u >= plan_.num_units()) {
    return absl::InvalidArgumentError(absl::StrCat("unit ", u, " out of range"));
  }
  const UnitShard& us = plan_.unit(u);
  Unit& unit = units_[u];
  if (plan_.params_persistent()) {
    std::memcpy(unit.full.as<float>(), values, us.numel * sizeof(float));
  } else {
    unit.shard.Zero();
    std::memcpy(unit.shard.as<float>(), values, us.shard_valid * sizeof(float));
    MaybeFree(u);
  }
  return absl::OkStatus();
}

absl::Status ShardedModel::LoadUnit(int u, const float* unit_values) {
  return LoadUnitRange(u, unit_values + HeldRange(u).first);
}

absl::Status ShardedModel::LoadFull(const float* full) {
  for (int u = 0; u < plan_.num_units(); ++u) {
    ACCEL_RETURN_IF_ERROR(LoadUnit(u, full + plan_.unit(u).offset));
  }
  return absl::OkStatus();
}

absl::Status ShardedModel::BroadcastFull(float* full, int root) {
  return Wait(groups_.world->Broadcast(full, layout_->num_params(), DType::kF32, root));
}

absl::Status ShardedModel::GatherUnit(int u, float* out) {
  if (u < 0 || u >= plan_.num_units()) {
    return absl::InvalidArgumentError(absl::StrCat("unit ", u, " out of range"));
  }
  const UnitShard& us = plan_.unit(u);
  if (!plan_.params_persistent()) ACCEL_RETURN_IF_ERROR(EnsureGathered(u));
  std::memcpy(out, units_[u].full.as<float>(), us.numel * sizeof(float));
  if (!plan_.params_persistent()) {
    units_[u].keep_for_step = false;
    MaybeFree(u);
  }
  return absl::OkStatus();
}

absl::Status ShardedModel::GatherFull(float* out) {
  for (int u = 0; u < plan_.num_units(); ++u) {
    ACCEL_RETURN_IF_ERROR(GatherUnit(u, out + plan_.unit(u).offset));
  }
  return absl::OkStatus();
}

void ShardedModel::ZeroGrads() {
  for (Unit& unit : units_) {
    unit.full_grads.Zero();
    unit.shard_grads.Zero();
  }
}

void ShardedModel::BeginMicroStep(int micro, int accum) {
  reducing_micro_step_ = plan_.options().reduce_every_micro_step || micro == accum - 1;
}

// ---- parameters -----------------------------------------------------------------------------

absl::Status ShardedModel::IssueGather(int u) {
  Unit& unit = units_[u];
  const UnitShard& us = plan_.unit(u);
  // Every element is overwritten by the gather: no need to zero.
  ACCEL_ASSIGN_OR_RETURN(unit.full, buffers_.Acquire(us.padded_numel * sizeof(float),
                                                     MemoryCategory::kParams, /*zero=*/false));
  unit.gather = groups_.shard->AllGather(unit.shard.data(), unit.full.data(), us.shard_numel,
                                         DType::kF32);
  return absl::OkStatus();
}

absl::Status ShardedModel::EnsureGathered(int u) {
  Unit& unit = units_[u];
  if (unit.gathered) return absl::OkStatus();
  if (!unit.gather) ACCEL_RETURN_IF_ERROR(IssueGather(u));
  absl::Status s = Wait(unit.gather);
  unit.gather.reset();
  ACCEL_RETURN_IF_ERROR(s);
  unit.gathered = true;
  if (u == 0 || plan_.unit(u).numel <= plan_.options().param_persistence_threshold) {
    unit.keep_for_step = true;  // the root serves both ends of the step; small units persist
  }
  return absl::OkStatus();
}

void ShardedModel::MaybeFree(int u) {
  Unit& unit = units_[u];
  if (plan_.params_persistent() || unit.keep_for_step || unit.gather) return;
  buffers_.Release(std::move(unit.full));
  unit.gathered = false;
}

int ShardedModel::NextInBackward(int u) const {
  if (u == 0) return plan_.num_units() - 1 >= 1 ? plan_.num_units() - 1 : -1;
  return u >= 2 ? u - 1 : -1;  // block 0 is last; the root stays gathered
}

absl::Status ShardedModel::Prefetch(int u) {
  if (u < 0 || u >= plan_.num_units()) return absl::OkStatus();
  Unit& unit = units_[u];
  if (unit.gathered || unit.gather) return absl::OkStatus();
  int inflight = 0;
  for (const Unit& other : units_) inflight += other.gather ? 1 : 0;
  if (inflight >= plan_.options().max_inflight_gathers) return absl::OkStatus();
  return IssueGather(u);
}

absl::StatusOr<const float*> ShardedModel::Params(int u, Pass pass) {
  if (!plan_.params_persistent()) {
    ACCEL_RETURN_IF_ERROR(EnsureGathered(u));
    const ShardOptions& o = plan_.options();
    if (pass == Pass::kForward && o.forward_prefetch && u + 1 < plan_.num_units()) {
      ACCEL_RETURN_IF_ERROR(Prefetch(u + 1));
    }
    if (pass == Pass::kBackward && o.backward_prefetch == BackwardPrefetch::kBackwardPre) {
      ACCEL_RETURN_IF_ERROR(Prefetch(NextInBackward(u)));
    }
  }
  return units_[u].full.as<float>();
}

absl::Status ShardedModel::Release(int u, Pass pass) {
  if (plan_.params_persistent()) return absl::OkStatus();
  if (pass == Pass::kForward) {
    if (u != 0 && plan_.options().reshard_after_forward) MaybeFree(u);
    return absl::OkStatus();
  }
  if (u != 0) MaybeFree(u);
  if (plan_.options().backward_prefetch == BackwardPrefetch::kBackwardPost) {
    ACCEL_RETURN_IF_ERROR(Prefetch(NextInBackward(u)));
  }
  return absl::OkStatus();
}

// ---- gradients ------------------------------------------------------------------------------

absl::StatusOr<float*> ShardedModel::Grads(int u) {
  Unit& unit = units_[u];
  if (unit.full_grads.empty()) {
    ACCEL_ASSIGN_OR_RETURN(unit.full_grads,
                           buffers_.Acquire(plan_.unit(u).padded_numel * sizeof(float),
                                            MemoryCategory::kGrads, /*zero=*/true));
  }
  return unit.full_grads.as<float>();
}

absl::Status ShardedModel::GradsReady(int u) {
  if (!plan_.reduce_per_unit() || !reducing_micro_step_) return absl::OkStatus();
  // Bound the unreduced full-gradient buffers alive at once: finish all but the newest.
  ACCEL_RETURN_IF_ERROR(DrainReduces(1));
  Unit& unit = units_[u];
  const UnitShard& us = plan_.unit(u);
  float* g = unit.full_grads.as<float>();
  pending_reduces_.push_back(
      {u, groups_.shard->ReduceScatter(g, g + us.shard_begin, us.shard_numel, DType::kF32), true});
  return absl::OkStatus();
}

absl::Status ShardedModel::CompleteReduce(const PendingReduce& p) {
  ACCEL_RETURN_IF_ERROR(Wait(p.work));
  Unit& unit = units_[p.unit];
  const UnitShard& us = plan_.unit(p.unit);
  float* slice = unit.full_grads.as<float>() + us.shard_begin;
  if (plan_.hybrid() && groups_.replicate != nullptr && groups_.replicate->size() > 1) {
    ACCEL_RETURN_IF_ERROR(
        Wait(groups_.replicate->AllReduce(slice, us.shard_numel, DType::kF32)));
  }
  float* acc = unit.shard_grads.as<float>();
  for (int64_t i = 0; i < us.shard_numel; ++i) acc[i] += slice[i];
  buffers_.Release(std::move(unit.full_grads));
  return absl::OkStatus();
}

absl::Status ShardedModel::DrainReduces(size_t keep) {
  while (pending_reduces_.size() > keep) {
    PendingReduce p = pending_reduces_.front();
    pending_reduces_.pop_front();
    ACCEL_RETURN_IF_ERROR(CompleteReduce(p));
  }
  return absl::OkStatus();
}

absl::Status ShardedModel::EndMicroStep(int micro, int accum) {
  ACCEL_RETURN_IF_ERROR(DrainReduces(0));
  if (plan_.reduce_per_unit() || micro != accum - 1) return absl::OkStatus();
  // no_shard / zero1: reduce every unit's full gradient at the boundary. no_shard's all-reduce
  // and zero1's reduce-scatter use the same chunks, so the reduced values are identical.
  std::vector<std::shared_ptr<comm::Work>> works;
  for (int u = 0; u < plan_.num_units(); ++u) {
    const UnitShard& us = plan_.unit(u);
    float* g = units_[u].full_grads.as<float>();
    if (plan_.strategy() == Strategy::kNoShard) {
      works.push_back(groups_.shard->AllReduce(g, us.padded_numel, DType::kF32));
    } else {
      works.push_back(
          groups_.shard->ReduceScatter(g, g + us.shard_begin, us.shard_numel, DType::kF32));
    }
  }
  for (const auto& w : works) ACCEL_RETURN_IF_ERROR(Wait(w));
  return absl::OkStatus();
}

namespace {
const float* ShardGradPointer(const UnitShard& us, const Buffer& full_grads,
                              const Buffer& shard_grads) {
  return shard_grads.empty() ? full_grads.as<float>() + us.shard_begin : shard_grads.as<float>();
}
}  // namespace

absl::StatusOr<double> ShardedModel::GradNormSquared() {
  double partial = 0;
  for (int u = 0; u < plan_.num_units(); ++u) {
    const UnitShard& us = plan_.unit(u);
    partial += kernels::SquaredL2Norm(
        ShardGradPointer(us, units_[u].full_grads, units_[u].shard_grads), us.shard_valid);
  }
  // Replicas of a hybrid group hold identical shards: sum within the shard group only.
  const int n = groups_.shard->size();
  std::vector<double> all(n);
  ACCEL_RETURN_IF_ERROR(Wait(groups_.shard->AllGather(&partial, all.data(), kDoubleAsFloats,
                                                      DType::kF32)));
  double total = 0;
  for (double v : all) total += v;
  return total;
}

absl::StatusOr<double> ShardedModel::MeanOverRanks(double value) {
  const int n = groups_.world->size();
  std::vector<double> all(n);
  ACCEL_RETURN_IF_ERROR(
      Wait(groups_.world->AllGather(&value, all.data(), kDoubleAsFloats, DType::kF32)));
  double total = 0;
  for (double v : all) total += v;
  return total / n;
}

std::vector<OwnedRange> ShardedModel::OwnedRanges() {
  std::vector<OwnedRange> ranges;
  for (int u = 0; u < plan_.num_units(); ++u) {
    const UnitShard& us = plan_.unit(u);
    Unit& unit = units_[u];
    if (!plan_.optimizer_sharded()) {
      ranges.push_back({u, us.offset, us.offset + us.numel, unit.full.as<float>(),
                        unit.full_grads.as<float>()});
      continue;
    }
    if (us.shard_valid == 0) continue;
    float* params = plan_.params_persistent() ? unit.full.as<float>() + us.shard_begin
                                              : unit.shard.as<float>();
    ranges.push_back({u, us.offset + us.shard_begin, us.offset + us.shard_begin + us.shard_valid,
                      params, ShardGradPointer(us, unit.full_grads, unit.shard_grads)});
  }
  return ranges;  // the same ranges, in the same order, as ShardPlan::OwnedFlatRanges()
}

absl::Status ShardedModel::FinishStep() {
  if (plan_.params_persistent()) {
    if (!plan_.optimizer_sharded()) return absl::OkStatus();
    // Every rank updated its own slice in place: gather the slices back into full parameters.
    std::vector<std::shared_ptr<comm::Work>> works;
    for (int u = 0; u < plan_.num_units(); ++u) {
      const UnitShard& us = plan_.unit(u);
      float* full = units_[u].full.as<float>();
      works.push_back(groups_.shard->AllGather(full + us.shard_begin, full, us.shard_numel,
                                               DType::kF32));
    }
    for (const auto& w : works) ACCEL_RETURN_IF_ERROR(Wait(w));
    return absl::OkStatus();
  }
  // Gathered copies are stale now that the shards moved: drop every one.
  for (int u = 0; u < plan_.num_units(); ++u) {
    Unit& unit = units_[u];
    if (unit.gather) {
      ACCEL_RETURN_IF_ERROR(Wait(unit.gather));
      unit.gather.reset();
    }
    unit.keep_for_step = false;
    MaybeFree(u);
  }
  return absl::OkStatus();
}

}  // namespace accel::shard
