#include "engine/shard/parallelize.h"

#include "engine/base/status_macros.h"

namespace accel::shard {

absl::StatusOr<ShardParts> Parallelize(const model::ModelLayout* layout, ShardPlan plan,
                                       ProcessGroups groups, absl::Duration timeout,
                                       MemoryLedger* ledger, DeviceOps* ops) {
  ShardParts parts;
  ACCEL_ASSIGN_OR_RETURN(
      parts.context, ShardContext::Create(layout, std::move(plan), groups, timeout, ledger, ops));
  ACCEL_RETURN_IF_ERROR(ApplyOffload(parts));
  ApplyPrecision(parts);
  ApplyPlacement(parts);
  ApplyPrefetch(parts);
  ApplyReduction(parts);
  ApplyOptimizerValues(parts);
  ACCEL_RETURN_IF_ERROR(parts.params->Allocate());
  ACCEL_RETURN_IF_ERROR(parts.optimizer->Allocate());
  ACCEL_RETURN_IF_ERROR(parts.grads->Allocate());
  return parts;
}

absl::StatusOr<std::unique_ptr<offload::Storage>> CreateOptimizerStorage(const ShardOptions& o,
                                                                         MemoryLedger* ledger,
                                                                         offload::Mode mode) {
  // Not offloaded: the state stays in compute memory, addressed in place (offload::InPlace).
  if (!o.offload_optimizer) return std::unique_ptr<offload::Storage>();
  if (o.offload_dir.empty()) return offload::CreateMemoryStorage(ledger, MemoryPool::kHost, mode);
  return offload::CreateFileStorage(
      ledger, {.dir = o.offload_dir, .tile_numel = o.offload_tile_numel, .mode = mode});
}

absl::StatusOr<std::unique_ptr<offload::Storage>> CreateParamStorage(const ShardOptions& o,
                                                                     MemoryLedger* ledger,
                                                                     offload::Mode mode) {
  if (!o.offload_params || ParamsWithOptimizer(o)) return std::unique_ptr<offload::Storage>();
  const std::string dir = ParamOffloadDir(o);
  if (dir.empty()) return offload::CreateMemoryStorage(ledger, MemoryPool::kHost, mode);
  return offload::CreateFileStorage(
      ledger, {.dir = dir, .tile_numel = o.offload_tile_numel, .mode = mode});
}

absl::Status ApplyOffload(ShardParts& parts) {
  ShardContext& ctx = *parts.context;
  // The one place the storages are chosen; every part asks them how to behave from here on.
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<offload::Storage> storage,
                         CreateOptimizerStorage(ctx.options(), ctx.ledger()));
  if (storage != nullptr) ctx.SetOptimizerStorage(std::move(storage));
  ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<offload::Storage> params,
                         CreateParamStorage(ctx.options(), ctx.ledger()));
  if (params != nullptr) ctx.SetParamStorage(std::move(params));
  return absl::OkStatus();
}

void ApplyPrecision(ShardParts& parts) {
  const ShardOptions& o = parts.context->options();
  const bool fp32 = o.param_dtype == DType::kF32 && o.reduce_dtype == DType::kF32;
  parts.precision =
      fp32 ? CreateFp32Precision(parts.context.get()) : CreateMixedPrecision(parts.context.get());
}

void ApplyPlacement(ShardParts& parts) {
  ShardContext* ctx = parts.context.get();
  const ShardPlan& plan = ctx->plan();
  if (plan.params_persistent()) {
    parts.params = CreateResidentParams(ctx, /*gather_after_update=*/plan.optimizer_sharded());
    return;
  }
  parts.params = CreateShardedParams(ctx, &ctx->param_ops());
}

void ApplyPrefetch(ShardParts& parts) { parts.params->SchedulePrefetch(); }

void ApplyReduction(ShardParts& parts) {
  ShardContext* ctx = parts.context.get();
  const ShardPlan& plan = ctx->plan();
  const bool in_place = parts.precision->fp32();
  if (!plan.reduce_per_unit()) {
    parts.grads = CreateBoundaryReducer(ctx, in_place,
                                        /*collective_all_reduce=*/!plan.optimizer_sharded());
    return;
  }
  comm::Communicator* replicate = ctx->groups().replicate;
  const bool across_replicas = plan.hybrid() && replicate != nullptr && replicate->size() > 1;
  parts.grads = CreatePerUnitReducer(ctx, in_place, across_replicas ? replicate : nullptr);
}

void ApplyOptimizerValues(ShardParts& parts) {
  ShardContext* ctx = parts.context.get();
  if (parts.precision->low_precision()) {
    parts.optimizer = CreateLowPrecisionValues(ctx, parts.params.get());
  } else if (!parts.precision->fp32() || ctx->optimizer_offloaded() ||
             (ctx->params_offloaded() && !ctx->ops().host_addressable())) {
    // Masters: mixed precision, an offloaded optimizer, or offloaded parameters a device
    // cannot update in place (DeepSpeed's layout: the fp32 partition stays with the optimizer
    // on the device, the parameters it is rounded into live on the host or in files). On host
    // memory, fp32 offloaded parameters are updated where they live, range by range.
    parts.optimizer = CreateMasterValues(ctx, parts.params.get());
  } else {
    parts.optimizer = CreateInPlaceValues(ctx, parts.params.get(), parts.grads.get());
  }
}

}  // namespace accel::shard
