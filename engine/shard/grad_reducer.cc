// The two GradReducers (grad_reducer.h): at the accumulation boundary, and per unit.
#include "engine/shard/grad_reducer.h"

#include "engine/base/status_macros.h"

namespace accel::shard {

absl::Status GradReducer::ZeroGrads() {
  for (Unit& unit : units_) {
    for (DeviceBlock* b : {&unit.local, &unit.reduced}) {
      if (!b->empty()) ACCEL_RETURN_IF_ERROR(b->ops()->Zero(b->data(), b->bytes()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<float*> GradReducer::LocalGrads(int u) {
  Unit& unit = units_[u];
  if (unit.local.empty()) {
    ACCEL_ASSIGN_OR_RETURN(unit.local, ctx_.ops().Acquire(ctx_.unit(u).padded_numel * sizeof(float),
                                                          MemoryCategory::kGrads, /*zero=*/true));
  }
  return unit.local.as<float>();
}

namespace {

class BoundaryReducer final : public GradReducer {
 public:
  BoundaryReducer(ShardContext* ctx, bool in_place, bool all_reduce)
      : GradReducer(ctx, in_place), all_reduce_(all_reduce) {}

  absl::Status Allocate() override {
    units_.resize(ctx_.num_units());
    for (int u = 0; u < ctx_.num_units(); ++u) {
      // In place, the local gradients stay and are reduced where they are; otherwise they come
      // and go, and the reduced wire-dtype copy stays.
      DeviceBlock& kept = in_place_ ? units_[u].local : units_[u].reduced;
      ACCEL_ASSIGN_OR_RETURN(kept, ctx_.ops().Allocate(ctx_.unit(u).padded_numel * wire_size_,
                                                       MemoryCategory::kGrads));
    }
    return absl::OkStatus();
  }

  absl::Status GradsReady(int) override { return absl::OkStatus(); }

  absl::Status EndMicroStep(int micro, int accum) override {
    if (micro != accum - 1) return absl::OkStatus();
    DeviceOps& ops = ctx_.ops();
    comm::Communicator& shard = ctx_.shard_group();
    std::vector<std::shared_ptr<comm::Work>> works;
    for (int u = 0; u < ctx_.num_units(); ++u) {
      const UnitShard& us = ctx_.unit(u);
      Unit& unit = units_[u];
      if (!in_place_) {
        ACCEL_RETURN_IF_ERROR(ops.Convert(unit.local.data(), DType::kF32, unit.reduced.data(),
                                          wire_dtype_, us.padded_numel));
        ops.Recycle(std::move(unit.local));
      }
      char* g = Reduced(u);
      ACCEL_RETURN_IF_ERROR(ops.BeforeCollective(shard));
      works.push_back(all_reduce_ ? shard.AllReduce(g, us.padded_numel, wire_dtype_)
                                  : shard.ReduceScatter(g, g + us.shard_begin * wire_size_,
                                                        us.shard_numel, wire_dtype_));
    }
    for (const auto& w : works) ACCEL_RETURN_IF_ERROR(ctx_.Await(shard, w));
    return absl::OkStatus();
  }

  ValueRef ReducedOptimizerSpan(int u) const override {
    return {Reduced(u) + ctx_.optimizer_span(u).begin * wire_size_, wire_dtype_, false};
  }

 private:
  char* Reduced(int u) const {
    return in_place_ ? units_[u].local.as<char>() : units_[u].reduced.as<char>();
  }

  const bool all_reduce_;
};

class PerUnitReducer final : public GradReducer {
 public:
  PerUnitReducer(ShardContext* ctx, bool in_place, comm::Communicator* replicate)
      : GradReducer(ctx, in_place), replicate_(replicate) {}
  ~PerUnitReducer() override {
    // Outstanding reductions read and write our blocks: let them finish (or fail) first.
    for (const Pending& p : pending_) (void)p.work->Wait(ctx_.timeout());
  }

  absl::Status Allocate() override {
    units_.resize(ctx_.num_units());
    stale_.assign(ctx_.num_units(), false);
    for (int u = 0; u < ctx_.num_units(); ++u) {
      ACCEL_ASSIGN_OR_RETURN(
          units_[u].reduced,
          home().Allocate(ctx_.unit(u).shard_numel * wire_size_, MemoryCategory::kGrads));
    }
    return absl::OkStatus();
  }

  absl::Status ZeroGrads() override {
    // Shards in files are zeroed when first reduced into (offload::Storage::ZeroesOnFirstWrite):
    // zeroing them all here would bring every one of them into memory at once.
    if (!home_storage().ZeroesOnFirstWrite()) return GradReducer::ZeroGrads();
    for (Unit& unit : units_) {
      if (!unit.local.empty()) {
        ACCEL_RETURN_IF_ERROR(unit.local.ops()->Zero(unit.local.data(), unit.local.bytes()));
      }
    }
    stale_.assign(units_.size(), true);
    return absl::OkStatus();
  }

  absl::Status GradsReady(int u) override {
    if (!reducing_micro_step_) return absl::OkStatus();
    // Bound the unreduced full-gradient buffers alive at once: finish all but the newest.
    ACCEL_RETURN_IF_ERROR(Drain(1));
    Unit& unit = units_[u];
    const UnitShard& us = ctx_.unit(u);
    DeviceOps& ops = ctx_.ops();
    if (in_place_) {
      unit.wire = std::move(unit.local);
    } else {
      ACCEL_ASSIGN_OR_RETURN(unit.wire, ops.Acquire(us.padded_numel * wire_size_,
                                                    MemoryCategory::kCommunication, false));
      ACCEL_RETURN_IF_ERROR(ops.Convert(unit.local.data(), DType::kF32, unit.wire.data(),
                                        wire_dtype_, us.padded_numel));
      ops.Recycle(std::move(unit.local));
    }
    char* w = unit.wire.as<char>();
    comm::Communicator& shard = ctx_.shard_group();
    ACCEL_RETURN_IF_ERROR(ops.BeforeCollective(shard));
    pending_.push_back(
        {u, shard.ReduceScatter(w, w + us.shard_begin * wire_size_, us.shard_numel, wire_dtype_)});
    return absl::OkStatus();
  }

  absl::Status EndMicroStep(int micro, int accum) override {
    ACCEL_RETURN_IF_ERROR(Drain(0));
    if (micro != accum - 1) return absl::OkStatus();
    for (size_t u = 0; u < units_.size(); ++u) ACCEL_RETURN_IF_ERROR(ZeroIfStale(u));
    return absl::OkStatus();
  }

  ValueRef ReducedOptimizerSpan(int u) const override {
    return {units_[u].reduced.data(), wire_dtype_, false};
  }

 private:
  struct Pending {
    int unit;
    std::shared_ptr<comm::Work> work;
  };

  // Where the reduced shards live: the optimizer's memory when it is offloaded and this rank
  // computes in host memory (a device keeps them beside its compute).
  bool home_is_optimizer() const {
    return ctx_.optimizer_offloaded() && ctx_.ops().host_addressable();
  }
  DeviceOps& home() const { return home_is_optimizer() ? ctx_.optimizer_ops() : ctx_.ops(); }
  const offload::Storage& home_storage() const {
    return home_is_optimizer() ? ctx_.optimizer_storage() : offload::InPlace();
  }

  absl::Status ZeroIfStale(size_t u) {
    if (!stale_[u]) return absl::OkStatus();
    stale_[u] = false;
    DeviceBlock& reduced = units_[u].reduced;
    if (reduced.empty()) return absl::OkStatus();
    return reduced.ops()->Zero(reduced.data(), reduced.bytes());
  }

  absl::Status Drain(size_t keep) {
    while (pending_.size() > keep) {
      Pending p = pending_.front();
      pending_.pop_front();
      ACCEL_RETURN_IF_ERROR(Complete(p));
    }
    return absl::OkStatus();
  }

  // The shard is reduced: across the replicas too (hybrid), then added to earlier micro-steps'.
  absl::Status Complete(const Pending& p) {
    DeviceOps& ops = ctx_.ops();
    ACCEL_RETURN_IF_ERROR(ctx_.Await(ctx_.shard_group(), p.work));
    Unit& unit = units_[p.unit];
    const UnitShard& us = ctx_.unit(p.unit);
    char* slice = unit.wire.as<char>() + us.shard_begin * wire_size_;
    if (replicate_ != nullptr) {
      ACCEL_RETURN_IF_ERROR(ops.BeforeCollective(*replicate_));
      ACCEL_RETURN_IF_ERROR(
          ctx_.Await(*replicate_, replicate_->AllReduce(slice, us.shard_numel, wire_dtype_)));
    }
    ACCEL_RETURN_IF_ERROR(ZeroIfStale(p.unit));
    ACCEL_RETURN_IF_ERROR(ops.Accumulate(unit.reduced.data(), slice, us.shard_numel, wire_dtype_));
    ops.Recycle(std::move(unit.wire));
    // To its file now (a no-op for memory that is not file-backed).
    return home().EvictRange(unit.reduced.data(), unit.reduced.bytes());
  }

  comm::Communicator* replicate_;
  std::vector<bool> stale_;  // shards not yet zeroed this step (ZeroesOnFirstWrite)
  std::deque<Pending> pending_;
};

}  // namespace

std::unique_ptr<GradReducer> CreateBoundaryReducer(ShardContext* ctx, bool in_place,
                                                   bool collective_all_reduce) {
  return std::make_unique<BoundaryReducer>(ctx, in_place, collective_all_reduce);
}

std::unique_ptr<GradReducer> CreatePerUnitReducer(ShardContext* ctx, bool in_place,
                                                  comm::Communicator* replicate) {
  return std::make_unique<PerUnitReducer>(ctx, in_place, replicate);
}

}  // namespace accel::shard
