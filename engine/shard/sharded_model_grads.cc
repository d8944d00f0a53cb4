// ShardedModel's gradient side: local accumulation, reductions (all-reduce at the boundary, or
// reduce-scatter per unit as backward produces it), the global norm, the optimizer's view of
// its ranges, and the end of a step (rounding masters and re-gathering under mixed precision).
#include <algorithm>

#include "engine/base/status_macros.h"
#include "engine/shard/sharded_model.h"

namespace accel::shard {

absl::Status ShardedModel::ZeroGrads() {
  for (Unit& unit : units_) {
    ACCEL_RETURN_IF_ERROR(ZeroBlock(unit.full_grads));
    ACCEL_RETURN_IF_ERROR(ZeroBlock(unit.reduced));
  }
  return absl::OkStatus();
}

void ShardedModel::BeginMicroStep(int micro, int accum) {
  reducing_micro_step_ = plan_.options().reduce_every_micro_step || micro == accum - 1;
}

absl::StatusOr<float*> ShardedModel::Grads(int u) {
  Unit& unit = units_[u];
  if (unit.full_grads.empty()) {
    ACCEL_ASSIGN_OR_RETURN(unit.full_grads,
                           ops_->Acquire(plan_.unit(u).padded_numel * sizeof(float),
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
  const DType reduce_dtype = plan_.options().reduce_dtype;
  comm::Communicator& shard = *groups_.shard;
  if (!mixed_) {
    float* g = unit.full_grads.as<float>();
    ACCEL_RETURN_IF_ERROR(ops_->BeforeCollective(shard));
    pending_reduces_.push_back(
        {u, shard.ReduceScatter(g, g + us.shard_begin, us.shard_numel, reduce_dtype), true});
    return absl::OkStatus();
  }
  ACCEL_ASSIGN_OR_RETURN(unit.comm, ops_->Acquire(us.padded_numel * reduce_size(),
                                                  MemoryCategory::kCommunication, false));
  ACCEL_RETURN_IF_ERROR(ops_->Convert(unit.full_grads.data(), DType::kF32, unit.comm.data(),
                                      reduce_dtype, us.padded_numel));
  ops_->Recycle(std::move(unit.full_grads));
  char* c = unit.comm.as<char>();
  ACCEL_RETURN_IF_ERROR(ops_->BeforeCollective(shard));
  pending_reduces_.push_back(
      {u,
       groups_.shard->ReduceScatter(c, c + us.shard_begin * reduce_size(), us.shard_numel,
                                    reduce_dtype),
       true});
  return absl::OkStatus();
}

absl::Status ShardedModel::CompleteReduce(const PendingReduce& p) {
  ACCEL_RETURN_IF_ERROR(Await(*groups_.shard, p.work));
  Unit& unit = units_[p.unit];
  const UnitShard& us = plan_.unit(p.unit);
  const DType reduce_dtype = plan_.options().reduce_dtype;
  DeviceBlock& source = mixed_ ? unit.comm : unit.full_grads;
  char* slice = source.as<char>() + us.shard_begin * reduce_size();
  if (plan_.hybrid() && groups_.replicate != nullptr && groups_.replicate->size() > 1) {
    comm::Communicator& replicate = *groups_.replicate;
    ACCEL_RETURN_IF_ERROR(ops_->BeforeCollective(replicate));
    ACCEL_RETURN_IF_ERROR(
        Await(replicate, replicate.AllReduce(slice, us.shard_numel, reduce_dtype)));
  }
  ACCEL_RETURN_IF_ERROR(ops_->Accumulate(unit.reduced.data(), slice, us.shard_numel,
                                         reduce_dtype));
  ops_->Recycle(std::move(source));
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
  if (micro != accum - 1) return absl::OkStatus();
  if (!plan_.reduce_per_unit()) {
    // no_shard / zero1: reduce every unit's full gradient at the boundary. no_shard's
    // all-reduce and zero1's reduce-scatter use the same chunks, so the reduced values are
    // identical.
    const DType reduce_dtype = plan_.options().reduce_dtype;
    comm::Communicator& shard = *groups_.shard;
    std::vector<std::shared_ptr<comm::Work>> works;
    for (int u = 0; u < plan_.num_units(); ++u) {
      const UnitShard& us = plan_.unit(u);
      Unit& unit = units_[u];
      char* g = unit.full_grads.as<char>();
      if (mixed_) {
        ACCEL_RETURN_IF_ERROR(ops_->Convert(g, DType::kF32, unit.reduced.data(), reduce_dtype,
                                            us.padded_numel));
        ops_->Recycle(std::move(unit.full_grads));
        g = unit.reduced.as<char>();
      }
      ACCEL_RETURN_IF_ERROR(ops_->BeforeCollective(shard));
      if (plan_.strategy() == Strategy::kNoShard) {
        works.push_back(shard.AllReduce(g, us.padded_numel, reduce_dtype));
      } else {
        works.push_back(shard.ReduceScatter(g, g + us.shard_begin * reduce_size(),
                                            us.shard_numel, reduce_dtype));
      }
    }
    for (const auto& w : works) ACCEL_RETURN_IF_ERROR(Await(shard, w));
  }
  return OptimizerReadsCopies() ? PrepareOptimizerGrads() : absl::OkStatus();
}

// fp32, unscaled gradients of each optimizer range in the optimizer's memory, from the reduced
// ones (16-bit under mixed precision; fp32 copies under offload alone).
absl::Status ShardedModel::PrepareOptimizerGrads() {
  const DType reduce_dtype = plan_.options().reduce_dtype;
  const float unscale = static_cast<float>(1.0 / loss_scale_);
  for (int u = 0; u < plan_.num_units(); ++u) {
    Unit& unit = units_[u];
    const int64_t n = MasterLength(u);
    ACCEL_ASSIGN_OR_RETURN(unit.opt_grads, optimizer_ops_->Acquire(
                                               n * sizeof(float), MemoryCategory::kGrads, false));
    // The reduced gradients of the optimizer range: the 16-bit buffer (whole for no_shard /
    // zero1), the fp32 shard, or the resident fp32 full gradients reduced in place.
    const char* src = unit.reduced.as<char>();
    if (mixed_) {
      src += (plan_.reduce_per_unit() ? 0 : MasterBegin(u)) * reduce_size();
    } else if (unit.reduced.empty()) {
      src = unit.full_grads.as<char>() + MasterBegin(u) * sizeof(float);
    }
    float* g = unit.opt_grads.as<float>();
    if (optimizer_ops_ == ops_) {
      ACCEL_RETURN_IF_ERROR(ops_->Convert(src, reduce_dtype, g, DType::kF32, n));
    } else if (reduce_dtype == DType::kF32) {
      ACCEL_RETURN_IF_ERROR(ToOptimizer(g, src, n * sizeof(float)));
    } else if (n > 0) {
      ACCEL_ASSIGN_OR_RETURN(DeviceBlock wide,
                             ops_->Acquire(n * sizeof(float), MemoryCategory::kGrads, false));
      ACCEL_RETURN_IF_ERROR(ops_->Convert(src, reduce_dtype, wide.data(), DType::kF32, n));
      ACCEL_RETURN_IF_ERROR(ToOptimizer(g, wide.data(), n * sizeof(float)));
      ops_->Recycle(std::move(wide));
    }
    if (unscale != 1.0f) ACCEL_RETURN_IF_ERROR(optimizer_ops_->Scale(g, n, unscale));
  }
  return absl::OkStatus();
}

namespace {
// This rank's partition of unit u's reduced fp32 gradient (shard_valid elements).
const float* NormPartition(const UnitShard& us, bool optimizer_sharded, const float* grads) {
  return optimizer_sharded ? grads : grads + us.shard_begin;
}
}  // namespace

absl::StatusOr<double> ShardedModel::GradNormSquared() {
  std::vector<FloatSpan> parts;
  for (int u = 0; u < plan_.num_units(); ++u) {
    const UnitShard& us = plan_.unit(u);
    const Unit& unit = units_[u];
    const float* grads = nullptr;
    bool sharded_view = true;
    if (OptimizerReadsCopies()) {
      grads = unit.opt_grads.as<float>();
      sharded_view = plan_.optimizer_sharded();
    } else if (!unit.reduced.empty()) {
      grads = unit.reduced.as<float>();
    } else {
      grads = unit.full_grads.as<float>();
      sharded_view = false;
    }
    parts.push_back({NormPartition(us, sharded_view, grads), us.shard_valid});
  }
  DeviceOps& where = OptimizerReadsCopies() ? *optimizer_ops_ : *ops_;
  ACCEL_ASSIGN_OR_RETURN(const double partial, where.SumOfSquares(parts));
  // Replicas of a hybrid group hold identical shards: sum within the shard group only.
  ACCEL_ASSIGN_OR_RETURN(const std::vector<double> all,
                         AllGatherDouble(*host_shard_, partial));
  double total = 0;
  for (double v : all) total += v;
  return total;
}

absl::StatusOr<double> ShardedModel::MeanOverRanks(double value) {
  ACCEL_ASSIGN_OR_RETURN(const std::vector<double> all, AllGatherDouble(*host_world_, value));
  double total = 0;
  for (double v : all) total += v;
  return total / static_cast<double>(all.size());
}

std::vector<OwnedRange> ShardedModel::OwnedRanges() {
  std::vector<OwnedRange> ranges;
  for (int u = 0; u < plan_.num_units(); ++u) {
    const UnitShard& us = plan_.unit(u);
    Unit& unit = units_[u];
    if (low_precision_) {
      // The optimizer range of the bf16 parameters themselves, where masters would be.
      if (plan_.optimizer_sharded() && us.shard_valid == 0) continue;
      uint16_t* params16 = plan_.params_persistent()
                               ? unit.full.as<uint16_t>() + MasterBegin(u)
                               : unit.shard.as<uint16_t>();
      const int64_t begin = us.offset + MasterBegin(u);
      const int64_t n = plan_.optimizer_sharded() ? us.shard_valid : us.numel;
      ranges.push_back({u, begin, begin + n, nullptr, unit.opt_grads.as<float>(), params16});
      continue;
    }
    if (!plan_.optimizer_sharded()) {
      float* params = masters_ ? unit.master.as<float>() : unit.full.as<float>();
      const float* grads = masters_ ? unit.opt_grads.as<float>() : unit.full_grads.as<float>();
      ranges.push_back({u, us.offset, us.offset + us.numel, params, grads});
      continue;
    }
    if (us.shard_valid == 0) continue;
    float* params = masters_                    ? unit.master.as<float>()
                    : plan_.params_persistent() ? unit.full.as<float>() + us.shard_begin
                                                : unit.shard.as<float>();
    const float* grads = masters_               ? unit.opt_grads.as<float>()
                         : !unit.reduced.empty() ? unit.reduced.as<float>()
                                                 : unit.full_grads.as<float>() + us.shard_begin;
    ranges.push_back(
        {u, us.offset + us.shard_begin, us.offset + us.shard_begin + us.shard_valid, params,
         grads});
  }
  return ranges;  // the same ranges, in the same order, as ShardPlan::OwnedFlatRanges()
}

absl::Status ShardedModel::FinishStep() {
  const DType param_dtype = plan_.options().param_dtype;
  // Gathered copies are stale once the shards move: wait for stragglers and drop them.
  for (int u = 0; u < plan_.num_units(); ++u) {
    Unit& unit = units_[u];
    if (unit.gather) {
      ACCEL_RETURN_IF_ERROR(Await(*groups_.shard, unit.gather));
      unit.gather.reset();
    }
    if (OptimizerReadsCopies()) optimizer_ops_->Recycle(std::move(unit.opt_grads));
    if (mixed_) ReleaseCompute(u);
  }
  if (masters_) {
    // Round the updated masters into the parameters this rank holds (from the host when the
    // optimizer is offloaded).
    for (int u = 0; u < plan_.num_units(); ++u) {
      Unit& unit = units_[u];
      char* dst = plan_.params_persistent()
                      ? unit.full.as<char>() + MasterBegin(u) * param_size()
                      : unit.shard.as<char>();
      const int64_t n = MasterLength(u);
      if (optimizer_ops_ == ops_ || plan_.options().offload_params) {
        // Both sides in one memory (the host's, when the parameter shards are offloaded too).
        ACCEL_RETURN_IF_ERROR(
            optimizer_ops_->Convert(unit.master.data(), DType::kF32, dst, param_dtype, n));
        if (plan_.options().offload_params) {
          ACCEL_RETURN_IF_ERROR(optimizer_ops_->EvictRange(dst, n * param_size()));
        }
      } else if (param_dtype == DType::kF32) {
        ACCEL_RETURN_IF_ERROR(FromOptimizer(dst, unit.master.data(), n * sizeof(float)));
      } else if (n > 0) {
        ACCEL_ASSIGN_OR_RETURN(DeviceBlock wide,
                               ops_->Acquire(n * sizeof(float), MemoryCategory::kParams, false));
        ACCEL_RETURN_IF_ERROR(FromOptimizer(wide.data(), unit.master.data(), n * sizeof(float)));
        ACCEL_RETURN_IF_ERROR(ops_->Convert(wide.data(), DType::kF32, dst, param_dtype, n));
        ops_->Recycle(std::move(wide));
      }
      // NVMe offload: this unit's master back to its file before the next one is read.
      ACCEL_RETURN_IF_ERROR(optimizer_ops_->EvictRange(unit.master.data(), unit.master.bytes()));
    }
  }
  if (plan_.params_persistent()) {
    if (!plan_.optimizer_sharded()) return EvictOffloaded();
    // Every rank updated its own slice in place: gather the slices back into full parameters.
    comm::Communicator& shard = *groups_.shard;
    std::vector<std::shared_ptr<comm::Work>> works;
    ACCEL_RETURN_IF_ERROR(ops_->BeforeCollective(shard));
    for (int u = 0; u < plan_.num_units(); ++u) {
      const UnitShard& us = plan_.unit(u);
      char* full = units_[u].full.as<char>();
      works.push_back(shard.AllGather(full + us.shard_begin * param_size(), full,
                                      us.shard_numel, param_dtype));
    }
    for (const auto& w : works) ACCEL_RETURN_IF_ERROR(Await(shard, w));
    return EvictOffloaded();
  }
  for (int u = 0; u < plan_.num_units(); ++u) {
    units_[u].keep_for_step = false;
    units_[u].keep_for_reuse = false;
    MaybeFree(u);
  }
  return EvictOffloaded();
}

}  // namespace accel::shard
