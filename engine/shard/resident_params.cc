// Resident parameters (param_store.h): every unit's full padded parameters stay in compute
// memory for the model's lifetime, so using one costs nothing.
#include <vector>

#include "engine/base/status_macros.h"
#include "engine/shard/param_store.h"

namespace accel::shard {

absl::Status ParamStore::LoadBlock(ShardContext& ctx, DeviceBlock& block, bool on_host,
                                   const float* values, int64_t n) {
  if (block.empty()) return absl::OkStatus();
  ACCEL_RETURN_IF_ERROR(block.ops()->Zero(block.data(), block.bytes()));
  return MoveValues(ctx.ops(), {values, DType::kF32, true},
                    {block.data(), ctx.options().param_dtype, on_host}, n, MemoryCategory::kOther);
}

namespace {

class ResidentParams final : public ParamStore {
 public:
  ResidentParams(ShardContext* ctx, bool gather_after_update)
      : ctx_(*ctx),
        gather_after_update_(gather_after_update),
        size_(DTypeSize(ctx->options().param_dtype)) {}

  absl::Status Allocate() override {
    full_.resize(ctx_.num_units());
    for (int u = 0; u < ctx_.num_units(); ++u) {
      ACCEL_ASSIGN_OR_RETURN(full_[u], ctx_.ops().Allocate(ctx_.unit(u).padded_numel * size_,
                                                           MemoryCategory::kParams));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<const void*> Use(int u, model::Pass) override { return full_[u].data(); }
  absl::Status Release(int, model::Pass) override { return absl::OkStatus(); }
  const void* gathered(int u) const override { return full_[u].data(); }

  std::pair<int64_t, int64_t> HeldRange(int u) const override { return {0, ctx_.unit(u).numel}; }
  MutableValueRef OptimizerSpanParams(int u) override {
    return {full_[u].as<char>() + ctx_.optimizer_span(u).begin * size_, ctx_.options().param_dtype,
            /*on_host=*/false};
  }
  absl::Status Load(int u, const float* values) override {
    return LoadBlock(ctx_, full_[u], false, values, ctx_.unit(u).numel);
  }
  absl::StatusOr<const void*> GatherForSave(int u) override { return full_[u].data(); }
  void DoneSaving(int) override {}

  absl::Status SettleGathers() override { return absl::OkStatus(); }
  absl::Status AfterUpdate() override {
    if (!gather_after_update_) return absl::OkStatus();
    // Every rank updated its own slice in place: gather the slices back into full parameters.
    comm::Communicator& shard = ctx_.shard_group();
    std::vector<std::shared_ptr<comm::Work>> works;
    ACCEL_RETURN_IF_ERROR(ctx_.ops().BeforeCollective(shard));
    for (int u = 0; u < ctx_.num_units(); ++u) {
      const UnitShard& us = ctx_.unit(u);
      char* full = full_[u].as<char>();
      works.push_back(shard.AllGather(full + us.shard_begin * size_, full, us.shard_numel,
                                      ctx_.options().param_dtype));
    }
    for (const auto& w : works) ACCEL_RETURN_IF_ERROR(ctx_.Await(shard, w));
    return absl::OkStatus();
  }

 private:
  ShardContext& ctx_;
  const bool gather_after_update_;
  const size_t size_;  // bytes per parameter
  std::vector<DeviceBlock> full_;
};

}  // namespace

std::unique_ptr<ParamStore> CreateResidentParams(ShardContext* ctx, bool gather_after_update) {
  return std::make_unique<ResidentParams>(ctx, gather_after_update);
}

}  // namespace accel::shard
