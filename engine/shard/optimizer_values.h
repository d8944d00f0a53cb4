// OptimizerValues: what the optimizer updates and reads, and how its result reaches the
// parameters — one of:
//   - in place (CreateInPlaceValues; fp32 without offload): the optimizer updates the fp32
//     parameters this rank keeps, on the reduced gradients themselves;
//   - low precision (CreateLowPrecisionValues; ShardOptions::master_dtype bf16): it updates the
//     bf16 parameters themselves (OwnedRange::params16), on fp32 copies of the gradients;
//   - masters (CreateMasterValues; mixed precision, or any offloaded optimizer): it updates fp32
//     master copies of its optimizer spans, in the optimizer's memory (ShardContext::
//     optimizer_ops, charged as optimizer state), on fp32 copies of the gradients there; at the
//     end of the step each master is rounded into the parameters (MoveValues) and, for NVMe
//     offload, written back to its file.
// Gradient copies are unscaled by the loss scale (fp16) and given back at FinishStep. A save
// reads what the optimizer holds (the masters, not their rounded copies); a load sets both.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/shard/grad_reducer.h"
#include "engine/shard/param_store.h"
#include "engine/shard/shard_context.h"
#include "engine/shard/tile_stream.h"

namespace accel::shard {

class OptimizerValues {
 public:
  virtual ~OptimizerValues() = default;

  // Allocates what is kept between steps (masters).
  [[nodiscard]] virtual absl::Status Allocate() = 0;
  // After the last micro-step's reduction: the fp32, unscaled gradients the optimizer reads.
  [[nodiscard]] virtual absl::Status PrepareGrads(const GradReducer& reducer,
                                                  double loss_scale) = 0;
  // Unit u's fp32 gradients over its optimizer span (ShardContext::optimizer_span), in the
  // memory of grads_ops().
  virtual const float* Grads(int unit) const = 0;
  virtual DeviceOps& grads_ops() const = 0;
  // The values the optimizer updates for unit u, at the span's first element: fp32 `params`, or
  // under low precision bf16 `params16` (the other null).
  struct Span {
    float* params = nullptr;
    uint16_t* params16 = nullptr;
  };
  virtual Span Params(int unit) = 0;
  // Per unit, Σg² over this rank's shard partition of the gradients Grads() holds, when
  // PrepareGrads took them on the way (gradients in files, which are not read twice); else
  // empty. The same sums GradNormSquared takes otherwise.
  virtual const std::vector<double>& ShardGradSquares() const {
    static const std::vector<double> kNone;
    return kNone;
  }
  // NVMe offload: what rides on the optimizer's streamed update of unit u (AdamW::Step): the
  // parameters this rank keeps for the span, written from each updated master tile while it is
  // in memory. An empty hook elsewhere. Valid until FinishStep.
  virtual TileHook UpdateHook(int /*unit*/) { return {}; }
  // The optimizer has updated unit u's span: in files (NVMe offload), its values reach the
  // parameters and leave memory now (unless the update hook already wrote them), before the
  // next unit is read. Otherwise nothing.
  [[nodiscard]] virtual absl::Status UnitUpdated(int /*unit*/) { return absl::OkStatus(); }
  // After the update: gradient copies go back and the updated values reach the parameters.
  [[nodiscard]] virtual absl::Status FinishStep() = 0;

  // Sets unit u from `values`, ParamStore::HeldRange(u)'s elements in fp32 host memory (the
  // master, and the parameters rounded from it).
  [[nodiscard]] virtual absl::Status Load(int unit, const float* values) = 0;
  // Unit u's numel fp32 values as the optimizer holds them into host `out`, on every rank.
  // Collective over the shard group where the values are sharded.
  [[nodiscard]] virtual absl::Status Save(int unit, float* out) = 0;
};

// The arguments must outlive the result.
std::unique_ptr<OptimizerValues> CreateInPlaceValues(ShardContext* ctx, ParamStore* params,
                                                     const GradReducer* reducer);
std::unique_ptr<OptimizerValues> CreateLowPrecisionValues(ShardContext* ctx, ParamStore* params);
std::unique_ptr<OptimizerValues> CreateMasterValues(ShardContext* ctx, ParamStore* params);

}  // namespace accel::shard
