// The three OptimizerValues (optimizer_values.h): in place, low precision, masters.
#include "engine/shard/optimizer_values.h"

#include <algorithm>
#include <vector>

#include "engine/base/status_macros.h"

namespace accel::shard {
namespace {

// Runs fn(begin, n) over [0, n) in the tiles the optimizer's storage passes over (files: the
// offload tile, each leaving memory before the next is read; memory: all at once).
template <typename Fn>
absl::Status ForEachOffloadTile(ShardContext& ctx, int64_t n, Fn fn) {
  const int64_t tile = ctx.optimizer_storage().PassTile(n);
  for (int64_t b = 0; b < n; b += tile) ACCEL_RETURN_IF_ERROR(fn(b, std::min(tile, n - b)));
  return absl::OkStatus();
}

ValueRef At(ValueRef v, int64_t offset) {
  return {static_cast<const char*>(v.data) + offset * DTypeSize(v.dtype), v.dtype, v.on_host};
}
MutableValueRef At(MutableValueRef v, int64_t offset) {
  return {static_cast<char*>(v.data) + offset * DTypeSize(v.dtype), v.dtype, v.on_host};
}

// What the in-place variants share: the parameters are the optimizer's values, so loading and
// saving go to and from the ParamStore alone.
class ParamsAreValues : public OptimizerValues {
 public:
  ParamsAreValues(ShardContext* ctx, ParamStore* params) : ctx_(*ctx), params_(*params) {}
  absl::Status Allocate() override { return absl::OkStatus(); }
  absl::Status Load(int u, const float* values) override { return params_.Load(u, values); }
  absl::Status Save(int u, float* out) override {
    ACCEL_ASSIGN_OR_RETURN(const void* full, params_.GatherForSave(u));
    ACCEL_RETURN_IF_ERROR(MoveValues(ctx_.ops(), {full, ctx_.options().param_dtype, false},
                                     {out, DType::kF32, true}, ctx_.unit(u).numel,
                                     MemoryCategory::kOther));
    params_.DoneSaving(u);
    return absl::OkStatus();
  }

 protected:
  ShardContext& ctx_;
  ParamStore& params_;
};

// fp32 copies of the reduced gradients' optimizer spans, in the optimizer's memory. In files
// (NVMe offload) they are files of their own, kept across steps: each unit's copy is written,
// its shard's Σg² taken on the way, and both it and the reduced shard it came from are dropped
// from memory before the next unit, so the copies never sit in memory all at once.
class GradCopies {
 public:
  explicit GradCopies(ShardContext* ctx) : ctx_(*ctx), grads_(ctx->num_units()) {}
  absl::Status Prepare(const GradReducer& reducer, double loss_scale) {
    const float unscale = static_cast<float>(1.0 / loss_scale);
    DeviceOps& ops = ctx_.optimizer_ops();
    // Kept copies (files) are written range by range and leave memory at once.
    const bool kept = ctx_.optimizer_storage().KeepsGradCopies();
    squares_.clear();
    for (int u = 0; u < ctx_.num_units(); ++u) {
      const int64_t n = ctx_.optimizer_span(u).length;
      if (!kept) {
        ACCEL_ASSIGN_OR_RETURN(grads_[u],
                               ops.Acquire(n * sizeof(float), MemoryCategory::kGrads, false));
      } else if (grads_[u].empty() && n > 0) {
        ACCEL_ASSIGN_OR_RETURN(grads_[u], ops.Allocate(n * sizeof(float), MemoryCategory::kGrads));
      }
      float* g = grads_[u].as<float>();
      // In a file, a hole first: the copy's pages are then written without being read.
      if (kept) ACCEL_RETURN_IF_ERROR(ops.Zero(g, n * sizeof(float)));
      const ValueRef reduced = reducer.ReducedOptimizerSpan(u);
      const MutableValueRef copy = {g, DType::kF32, ctx_.optimizer_offloaded()};
      ACCEL_RETURN_IF_ERROR(ForEachOffloadTile(ctx_, n, [&](int64_t b, int64_t len) {
        ACCEL_RETURN_IF_ERROR(
            MoveValues(ctx_.ops(), At(reduced, b), At(copy, b), len, MemoryCategory::kGrads));
        if (unscale != 1.0f) ACCEL_RETURN_IF_ERROR(ops.Scale(g + b, len, unscale));
        if (!kept) return absl::OkStatus();
        ACCEL_RETURN_IF_ERROR(ops.EvictRange(g + b, len * sizeof(float)));
        return ops.EvictRange(At(reduced, b).data, len * DTypeSize(reduced.dtype));
      }));
      if (!kept) continue;
      // GradNormSquared's part for this unit, the same sum over the same values. It runs over
      // the whole shard (its summation order makes the norm's bits), so the copy is read back
      // once rather than kept in memory while it is written.
      const UnitShard& us = ctx_.unit(u);
      const FloatSpan shard = {g + (us.shard_begin - ctx_.optimizer_span(u).begin),
                               us.shard_valid};
      ACCEL_ASSIGN_OR_RETURN(const double sq, ops.SumOfSquares({&shard, 1}));
      squares_.push_back(sq);
      ACCEL_RETURN_IF_ERROR(ops.EvictRange(g, n * sizeof(float)));
    }
    return absl::OkStatus();
  }
  const float* grads(int u) const { return grads_[u].as<float>(); }
  // Per unit, Σg² over the shard partition, when Prepare took it on the way (files); else empty.
  const std::vector<double>& squares() const { return squares_; }
  void Release() {
    if (ctx_.optimizer_storage().KeepsGradCopies()) return;  // they stay for the next step
    for (DeviceBlock& g : grads_) ctx_.optimizer_ops().Recycle(std::move(g));
  }

 private:
  ShardContext& ctx_;
  std::vector<DeviceBlock> grads_;  // per unit, from PrepareGrads to FinishStep
  std::vector<double> squares_;
};

class InPlaceValues final : public ParamsAreValues {
 public:
  InPlaceValues(ShardContext* ctx, ParamStore* params, const GradReducer* reducer)
      : ParamsAreValues(ctx, params), reducer_(reducer) {}
  // fp32 without loss scaling: the reduced gradients are what the optimizer reads.
  absl::Status PrepareGrads(const GradReducer&, double) override { return absl::OkStatus(); }
  const float* Grads(int u) const override {
    return static_cast<const float*>(reducer_->ReducedOptimizerSpan(u).data);
  }
  DeviceOps& grads_ops() const override { return ctx_.ops(); }
  Span Params(int u) override {
    return {static_cast<float*>(params_.OptimizerSpanParams(u).data), nullptr};
  }
  // Offloaded parameters (host memory or files, updated where they live): in a file, the
  // updated shard goes back to disk before the next range is updated.
  absl::Status UnitUpdated(int u) override {
    if (!ctx_.params_offloaded()) return absl::OkStatus();
    return ctx_.param_ops().EvictRange(params_.OptimizerSpanParams(u).data,
                                       ctx_.optimizer_span(u).length * sizeof(float));
  }
  absl::Status FinishStep() override { return absl::OkStatus(); }

 private:
  const GradReducer* reducer_;
};

class LowPrecisionValues final : public ParamsAreValues {
 public:
  LowPrecisionValues(ShardContext* ctx, ParamStore* params)
      : ParamsAreValues(ctx, params), copies_(ctx) {}
  absl::Status PrepareGrads(const GradReducer& reducer, double loss_scale) override {
    return copies_.Prepare(reducer, loss_scale);
  }
  const float* Grads(int u) const override { return copies_.grads(u); }
  DeviceOps& grads_ops() const override { return ctx_.optimizer_ops(); }
  Span Params(int u) override {
    return {nullptr, static_cast<uint16_t*>(params_.OptimizerSpanParams(u).data)};
  }
  absl::Status FinishStep() override {
    copies_.Release();
    return absl::OkStatus();
  }

 private:
  GradCopies copies_;
};

class MasterValues final : public OptimizerValues {
 public:
  MasterValues(ShardContext* ctx, ParamStore* params)
      : ctx_(*ctx), params_(*params), copies_(ctx), masters_(ctx->num_units()) {}

  absl::Status Allocate() override {
    for (int u = 0; u < ctx_.num_units(); ++u) {
      ACCEL_ASSIGN_OR_RETURN(
          masters_[u], ctx_.optimizer_ops().Allocate(ctx_.optimizer_span(u).length * sizeof(float),
                                                     MemoryCategory::kOptimizerState));
    }
    return absl::OkStatus();
  }
  absl::Status PrepareGrads(const GradReducer& reducer, double loss_scale) override {
    return copies_.Prepare(reducer, loss_scale);
  }
  const float* Grads(int u) const override { return copies_.grads(u); }
  const std::vector<double>& ShardGradSquares() const override { return copies_.squares(); }
  DeviceOps& grads_ops() const override { return ctx_.optimizer_ops(); }
  Span Params(int u) override { return {masters_[u].as<float>(), nullptr}; }

  TileHook UpdateHook(int u) override {
    if (!ctx_.optimizer_storage().StreamsUpdate()) return {};
    const MutableValueRef dst = params_.OptimizerSpanParams(u);
    const OptimizerSpan span = ctx_.optimizer_span(u);
    // The real elements the optimizer updates; the padding after them stays as it is (zero).
    const int64_t real = std::min(span.length, ctx_.unit(u).numel - span.begin);
    TileHook hook;
    // Host memory or a file of the optimizer's storage rides on the stream (a file is written,
    // never read); device memory, and parameters in a storage of their own (another
    // directory), are reached from the tile by MoveValues, the latter evicted at once.
    const bool rides = dst.on_host && !ctx_.params_apart();
    if (rides) {
      hook.arrays.push_back({dst.data, DTypeSize(dst.dtype), /*write_back=*/true, /*read=*/false});
    }
    hook.fn = [this, u, dst, real, rides](int64_t b, int64_t len, const float* master,
                                          std::span<void* const> extra) -> absl::Status {
      const MutableValueRef to = rides ? MutableValueRef{extra[0], dst.dtype, true} : At(dst, b);
      ACCEL_RETURN_IF_ERROR(MoveValues(ctx_.ops(), {master, DType::kF32, true}, to, len,
                                       MemoryCategory::kParams));
      if (ctx_.params_apart()) {
        ACCEL_RETURN_IF_ERROR(ctx_.param_ops().EvictRange(to.data, len * DTypeSize(dst.dtype)));
      }
      if (b + len == real) MarkFinished(u);  // tiles come in order: the unit is rounded
      return absl::OkStatus();
    };
    return hook;
  }

  absl::Status UnitUpdated(int u) override {
    // In files, the unit's masters reach the parameters before the next unit is read (AdamW
    // has already dropped its tiles of moments and gradient copies, and its stream has
    // written the parameters where it could); elsewhere FinishStep rounds every master at once.
    if (!ctx_.optimizer_storage().StreamsUpdate()) return absl::OkStatus();
    if (!finished_.empty() && finished_[u]) return absl::OkStatus();
    ACCEL_RETURN_IF_ERROR(Finish(u));
    MarkFinished(u);
    return absl::OkStatus();
  }

  void MarkFinished(int u) {
    if (finished_.empty()) finished_.assign(ctx_.num_units(), false);
    finished_[u] = true;
  }

  absl::Status FinishStep() override {
    copies_.Release();
    for (int u = 0; u < ctx_.num_units(); ++u) {
      if (finished_.empty() || !finished_[u]) ACCEL_RETURN_IF_ERROR(Finish(u));
    }
    finished_.clear();
    return absl::OkStatus();
  }

  // Rounds unit u's updated master into the parameters this rank keeps.
  absl::Status Finish(int u) {
    DeviceOps& optimizer_ops = ctx_.optimizer_ops();
    const MutableValueRef dst = params_.OptimizerSpanParams(u);
    const int64_t n = ctx_.optimizer_span(u).length;
    return ForEachOffloadTile(ctx_, n, [&](int64_t b, int64_t len) {
      ACCEL_RETURN_IF_ERROR(
          MoveValues(ctx_.ops(), At(Master(u), b), At(dst, b), len, MemoryCategory::kParams));
      // NVMe offload: the parameters and this master back to their files before the next
      // tile is read (a no-op for memory that is not file-backed).
      if (dst.on_host) {
        ACCEL_RETURN_IF_ERROR(
            ctx_.param_ops().EvictRange(At(dst, b).data, len * DTypeSize(dst.dtype)));
      }
      return optimizer_ops.EvictRange(masters_[u].as<float>() + b, len * sizeof(float));
    });
  }

  absl::Status Load(int u, const float* values) override {
    // The master takes the part of the held values inside its span; padding stays zero.
    const auto [held_begin, held_end] = params_.HeldRange(u);
    const OptimizerSpan span = ctx_.optimizer_span(u);
    DeviceBlock& master = masters_[u];
    if (!master.empty()) {
      ACCEL_RETURN_IF_ERROR(master.ops()->Zero(master.data(), master.bytes()));
    }
    const int64_t from = std::max(held_begin, span.begin);
    const int64_t to = std::min({held_end, ctx_.unit(u).numel, span.begin + span.length});
    if (to > from) {
      ACCEL_RETURN_IF_ERROR(MoveValues(
          ctx_.ops(), {values + (from - held_begin), DType::kF32, true},
          {master.as<float>() + (from - span.begin), DType::kF32, ctx_.optimizer_offloaded()},
          to - from, MemoryCategory::kOther));
    }
    // In a file (NVMe), to disk now, so a load holds one unit's master in memory, not all.
    ACCEL_RETURN_IF_ERROR(ctx_.optimizer_ops().EvictRange(master.data(), master.bytes()));
    return params_.Load(u, values);
  }

  absl::Status Save(int u, float* out) override {
    absl::Status s = SaveMaster(u, out);
    // In a file (NVMe), the master leaves memory again: a save walks the model unit by unit.
    absl::Status evicted =
        ctx_.optimizer_ops().EvictRange(masters_[u].data(), masters_[u].bytes());
    return s.ok() ? evicted : s;
  }

 private:
  absl::Status SaveMaster(int u, float* out) {
    const UnitShard& us = ctx_.unit(u);
    if (ctx_.optimizer_span(u).length == us.padded_numel) {  // this rank holds the whole unit
      return MoveValues(ctx_.ops(), Master(u), {out, DType::kF32, true}, us.numel,
                        MemoryCategory::kOther);
    }
    DeviceOps& ops = ctx_.ops();
    comm::Communicator& shard = ctx_.shard_group();
    ACCEL_ASSIGN_OR_RETURN(DeviceBlock all, ops.Acquire(us.padded_numel * sizeof(float),
                                                        MemoryCategory::kCommunication, false));
    const void* send = masters_[u].data();
    if (ctx_.optimizer_offloaded()) {
      // Offloaded masters reach the collective through this rank's slot of the result.
      float* mine = all.as<float>() + shard.rank() * us.shard_numel;
      ACCEL_RETURN_IF_ERROR(MoveValues(ops, Master(u), {mine, DType::kF32, false}, us.shard_numel,
                                       MemoryCategory::kOther));
      send = mine;
    }
    ACCEL_RETURN_IF_ERROR(ops.BeforeCollective(shard));
    absl::Status s =
        ctx_.AwaitOnHost(shard, shard.AllGather(send, all.data(), us.shard_numel, DType::kF32));
    if (s.ok()) {
      s = MoveValues(ops, {all.data(), DType::kF32, false}, {out, DType::kF32, true}, us.numel,
                     MemoryCategory::kOther);
    }
    ops.Recycle(std::move(all));
    return s;
  }

  ValueRef Master(int u) const {
    return {masters_[u].data(), DType::kF32, ctx_.optimizer_offloaded()};
  }

  ShardContext& ctx_;
  ParamStore& params_;
  GradCopies copies_;
  std::vector<DeviceBlock> masters_;  // per unit: the optimizer span, fp32
  std::vector<bool> finished_;        // this step's units already rounded (UnitUpdated)
};

}  // namespace

std::unique_ptr<OptimizerValues> CreateInPlaceValues(ShardContext* ctx, ParamStore* params,
                                                     const GradReducer* reducer) {
  return std::make_unique<InPlaceValues>(ctx, params, reducer);
}
std::unique_ptr<OptimizerValues> CreateLowPrecisionValues(ShardContext* ctx, ParamStore* params) {
  return std::make_unique<LowPrecisionValues>(ctx, params);
}
std::unique_ptr<OptimizerValues> CreateMasterValues(ShardContext* ctx, ParamStore* params) {
  return std::make_unique<MasterValues>(ctx, params);
}

}  // namespace accel::shard
