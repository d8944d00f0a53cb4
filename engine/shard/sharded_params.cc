// Sharded parameters (param_store.h): this rank keeps only its shard of every unit; a unit is
// all-gathered into a transient block before use and given back after, unless it is the root,
// small enough to persist, or needed again soon (GatherScheduler::KeepForReuse).
#include <vector>

#include "engine/base/status_macros.h"
#include "engine/shard/gather_scheduler.h"
#include "engine/shard/param_store.h"

namespace accel::shard {
namespace {

using model::Pass;

class ShardedParams final : public ParamStore, public GatherTarget {
 public:
  ShardedParams(ShardContext* ctx, DeviceOps* home)
      : ctx_(*ctx), home_(*home), size_(DTypeSize(ctx->options().param_dtype)) {}
  ~ShardedParams() override {
    // Outstanding gathers write our blocks: let them finish (or fail) first.
    for (Unit& unit : units_) {
      if (unit.gather) (void)unit.gather->Wait(ctx_.timeout());
    }
  }

  absl::Status Allocate() override {
    units_.resize(ctx_.num_units());
    for (int u = 0; u < ctx_.num_units(); ++u) {
      ACCEL_ASSIGN_OR_RETURN(units_[u].shard, home_.Allocate(ctx_.unit(u).shard_numel * size_,
                                                             MemoryCategory::kParams));
    }
    return absl::OkStatus();
  }
  void SchedulePrefetch() override {
    scheduler_ = std::make_unique<GatherScheduler>(&ctx_.plan(), this);
  }

  absl::StatusOr<const void*> Use(int u, Pass pass) override {
    ACCEL_RETURN_IF_ERROR(EnsureGathered(u));
    if (scheduler_) ACCEL_RETURN_IF_ERROR(scheduler_->BeforeUse(u, pass));
    return units_[u].full.data();
  }

  absl::Status Release(int u, Pass pass) override {
    Unit& unit = units_[u];
    if (pass == Pass::kForward) {
      if (u != 0 && ctx_.options().reshard_after_forward) {
        unit.keep_for_reuse = scheduler_ && scheduler_->KeepForReuse(u);
        MaybeFree(u);
      }
      return absl::OkStatus();
    }
    unit.keep_for_reuse = false;
    if (u != 0) MaybeFree(u);
    return scheduler_ ? scheduler_->AfterRelease(u, pass) : absl::OkStatus();
  }

  const void* gathered(int u) const override { return units_[u].full.data(); }

  std::pair<int64_t, int64_t> HeldRange(int u) const override {
    const UnitShard& us = ctx_.unit(u);
    return {us.shard_begin, us.shard_begin + us.shard_valid};
  }
  MutableValueRef OptimizerSpanParams(int u) override {
    return {units_[u].shard.data(), ctx_.options().param_dtype, offloaded()};
  }
  absl::Status Load(int u, const float* values) override {
    ACCEL_RETURN_IF_ERROR(
        LoadBlock(ctx_, units_[u].shard, offloaded(), values, ctx_.unit(u).shard_valid));
    MaybeFree(u);
    // In a file (NVMe), to disk now: loading unit by unit holds one unit in memory, not all.
    const DeviceBlock& shard = units_[u].shard;
    return home_.EvictRange(shard.data(), shard.bytes());
  }
  absl::StatusOr<const void*> GatherForSave(int u) override {
    ACCEL_RETURN_IF_ERROR(EnsureGathered(u));
    return units_[u].full.data();
  }
  void DoneSaving(int u) override {
    units_[u].keep_for_step = false;
    MaybeFree(u);
  }

  absl::Status SettleGathers() override {
    // Gathered copies are stale once the shards move: wait for stragglers.
    for (Unit& unit : units_) {
      if (!unit.gather) continue;
      ACCEL_RETURN_IF_ERROR(ctx_.Await(ctx_.shard_group(), unit.gather));
      unit.gather.reset();
    }
    return absl::OkStatus();
  }
  absl::Status AfterUpdate() override {
    ReleaseKept();
    return absl::OkStatus();
  }
  void ReleaseKept() override {
    for (int u = 0; u < ctx_.num_units(); ++u) {
      units_[u].keep_for_step = false;
      units_[u].keep_for_reuse = false;
      MaybeFree(u);
    }
  }

 private:
  struct Unit {
    DeviceBlock shard;                   // shard_numel, in home_
    DeviceBlock full;                    // padded_numel in compute memory, while gathered
    std::shared_ptr<comm::Work> gather;  // in-flight all-gather into `full`
    bool gathered = false;
    bool keep_for_step = false;   // the root, or a unit under the persistence threshold
    bool keep_for_reuse = false;  // needed again within max_reuse_distance: not freed
  };

  bool offloaded() const { return &home_ != &ctx_.ops(); }

  // GatherTarget
  bool is_gathered(int u) const override { return units_[u].gathered; }
  bool is_in_flight(int u) const override { return units_[u].gather != nullptr; }
  absl::Status IssueGather(int u) override {
    Unit& unit = units_[u];
    const UnitShard& us = ctx_.unit(u);
    DeviceOps& ops = ctx_.ops();
    comm::Communicator& shard = ctx_.shard_group();
    // Every element is overwritten by the gather: no need to zero.
    ACCEL_ASSIGN_OR_RETURN(
        unit.full, ops.Acquire(us.padded_numel * size_, MemoryCategory::kParams, /*zero=*/false));
    const void* send = unit.shard.data();
    if (offloaded() && us.shard_numel > 0) {
      // The offloaded shard comes to compute memory first: into this rank's slot of the unit.
      char* mine = unit.full.as<char>() + shard.rank() * us.shard_numel * size_;
      ACCEL_RETURN_IF_ERROR(ops.FromHost(mine, send, us.shard_numel * size_));
      // In a file (NVMe), the shard is read ahead of use and leaves memory again at once.
      ACCEL_RETURN_IF_ERROR(home_.EvictRange(send, us.shard_numel * size_));
      send = mine;
    }
    ACCEL_RETURN_IF_ERROR(ops.BeforeCollective(shard));
    unit.gather =
        shard.AllGather(send, unit.full.data(), us.shard_numel, ctx_.options().param_dtype);
    return absl::OkStatus();
  }

  absl::Status EnsureGathered(int u) {
    Unit& unit = units_[u];
    if (unit.gathered) return absl::OkStatus();
    if (!unit.gather) ACCEL_RETURN_IF_ERROR(IssueGather(u));
    absl::Status s = ctx_.Await(ctx_.shard_group(), unit.gather);
    unit.gather.reset();
    ACCEL_RETURN_IF_ERROR(s);
    unit.gathered = true;
    if (u == 0 || ctx_.unit(u).numel <= ctx_.options().param_persistence_threshold) {
      unit.keep_for_step = true;  // the root serves both ends of the step; small units persist
    }
    return absl::OkStatus();
  }

  void MaybeFree(int u) {
    Unit& unit = units_[u];
    if (unit.keep_for_step || unit.keep_for_reuse || unit.gather) return;
    ctx_.ops().Recycle(std::move(unit.full));
    unit.gathered = false;
  }

  ShardContext& ctx_;
  DeviceOps& home_;
  const size_t size_;  // bytes per parameter
  std::vector<Unit> units_;
  std::unique_ptr<GatherScheduler> scheduler_;  // null: gathers on demand only
};

}  // namespace

std::unique_ptr<ParamStore> CreateShardedParams(ShardContext* ctx, DeviceOps* home) {
  return std::make_unique<ShardedParams>(ctx, home);
}

}  // namespace accel::shard
