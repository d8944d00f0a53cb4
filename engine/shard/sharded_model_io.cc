// ShardedModel's loading and gathering: host values into this rank's pieces (initial weights,
// checkpoints), the full parameters out of them (saves), and the host staging between the
// model's memory, the optimizer's and the host's.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/shard/sharded_model.h"

namespace accel::shard {

// ---- loading and gathering ------------------------------------------------------------------

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
  const DType param_dtype = plan_.options().param_dtype;
  const auto [held_begin, held_end] = HeldRange(u);
  if (masters_) {
    // The master takes the part of the held values inside its range; padding stays zero.
    ACCEL_RETURN_IF_ERROR(ZeroBlock(unit.master));
    const int64_t from = std::max(held_begin, MasterBegin(u));
    const int64_t to = std::min(std::min(held_end, us.numel), MasterBegin(u) + MasterLength(u));
    if (to > from) {
      ACCEL_RETURN_IF_ERROR(optimizer_ops_->FromHost(unit.master.as<float>() + (from - MasterBegin(u)),
                                           values + (from - held_begin),
                                           (to - from) * sizeof(float)));
    }
  }
  DeviceBlock& target = plan_.params_persistent() ? unit.full : unit.shard;
  ACCEL_RETURN_IF_ERROR(ZeroBlock(target));
  const int64_t n = held_end - held_begin;
  // The target's own ops: the compute device's, or the host's under parameter offload.
  DeviceOps& tops = target.empty() ? *ops_ : *target.ops();
  if (tops.host_addressable()) {
    ACCEL_RETURN_IF_ERROR(tops.Convert(values, DType::kF32, target.data(), param_dtype, n));
  } else if (n > 0) {
    ACCEL_ASSIGN_OR_RETURN(DeviceBlock staging,
                           tops.Acquire(n * sizeof(float), MemoryCategory::kOther, false));
    ACCEL_RETURN_IF_ERROR(tops.FromHost(staging.data(), values, n * sizeof(float)));
    ACCEL_RETURN_IF_ERROR(tops.Convert(staging.data(), DType::kF32, target.data(), param_dtype, n));
    tops.Recycle(std::move(staging));
  }
  if (!plan_.params_persistent()) MaybeFree(u);
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
  return OnHost([&] {
    return host_world_->Broadcast(full, layout_->num_params(), DType::kF32, root);
  });
}

absl::Status ShardedModel::ToOptimizer(void* optimizer_dst, const void* model_src,
                                       size_t bytes) {
  if (optimizer_ops_ == ops_) return ops_->Copy(optimizer_dst, model_src, bytes);
  return ops_->ToHost(optimizer_dst, model_src, bytes);  // the optimizer's memory is the host's
}

absl::Status ShardedModel::FromOptimizer(void* model_dst, const void* optimizer_src,
                                         size_t bytes) {
  if (optimizer_ops_ == ops_) return ops_->Copy(model_dst, optimizer_src, bytes);
  return ops_->FromHost(model_dst, optimizer_src, bytes);
}

absl::Status ShardedModel::ConvertToHost(const void* src, DType dtype, float* out, int64_t n) {
  if (n <= 0) return absl::OkStatus();
  if (ops_->host_addressable()) return ops_->Convert(src, dtype, out, DType::kF32, n);
  if (dtype == DType::kF32) return ops_->ToHost(out, src, n * sizeof(float));
  ACCEL_ASSIGN_OR_RETURN(DeviceBlock staging,
                         ops_->Acquire(n * sizeof(float), MemoryCategory::kOther, false));
  ACCEL_RETURN_IF_ERROR(ops_->Convert(src, dtype, staging.data(), DType::kF32, n));
  ACCEL_RETURN_IF_ERROR(ops_->ToHost(out, staging.data(), n * sizeof(float)));
  ops_->Recycle(std::move(staging));
  return absl::OkStatus();
}

absl::Status ShardedModel::GatherUnit(int u, float* out) {
  if (u < 0 || u >= plan_.num_units()) {
    return absl::InvalidArgumentError(absl::StrCat("unit ", u, " out of range"));
  }
  const UnitShard& us = plan_.unit(u);
  Unit& unit = units_[u];
  if (masters_) {
    // The masters, not the rounded copies: a full save holds what the optimizer holds.
    if (!plan_.optimizer_sharded()) {
      return optimizer_ops_->ToHost(out, unit.master.data(), us.numel * sizeof(float));
    }
    ACCEL_ASSIGN_OR_RETURN(DeviceBlock all, ops_->Acquire(us.padded_numel * sizeof(float),
                                                          MemoryCategory::kCommunication, false));
    comm::Communicator& shard = *groups_.shard;
    const void* send = unit.master.data();
    if (optimizer_ops_ != ops_) {
      // Offloaded masters reach the collective through this rank's slot of the result.
      float* mine = all.as<float>() + shard.rank() * us.shard_numel;
      ACCEL_RETURN_IF_ERROR(FromOptimizer(mine, send, us.shard_numel * sizeof(float)));
      send = mine;
    }
    ACCEL_RETURN_IF_ERROR(ops_->BeforeCollective(shard));
    absl::Status s = AwaitOnHost(
        shard, shard.AllGather(send, all.data(), us.shard_numel, DType::kF32));
    if (s.ok()) s = ConvertToHost(all.data(), DType::kF32, out, us.numel);
    ops_->Recycle(std::move(all));
    return s;
  }
  if (!plan_.params_persistent()) ACCEL_RETURN_IF_ERROR(EnsureGathered(u));
  // The parameters are what the optimizer holds (fp32, or bf16 under low precision).
  ACCEL_RETURN_IF_ERROR(
      ConvertToHost(unit.full.data(), plan_.options().param_dtype, out, us.numel));
  if (!plan_.params_persistent()) {
    unit.keep_for_step = false;
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

}  // namespace accel::shard
