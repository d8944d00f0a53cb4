// GradReducer: when and how this rank's gradients are reduced over the data-parallel ranks —
// one of:
//   - at the accumulation boundary (CreateBoundaryReducer; no_shard, zero1): full gradients
//     accumulate over the micro-steps and every unit is reduced after the last one, all-reduced
//     (no_shard) or reduce-scattered (zero1) over the same chunks, so both give the same values;
//   - per unit (CreatePerUnitReducer; shard_grad_op, full_shard, hybrids): each unit's gradient
//     is reduce-scattered as soon as backward produces it (GradsReady), at the last micro-step
//     or at every one (reduce_every_micro_step, DeepSpeed stage 2: the shards add up), and under
//     hybrid strategies the shard is then all-reduced across the replicas. With the optimizer
//     offloaded (and compute memory the host's) the reduced shards live in the optimizer's
//     memory, so they leave the compute pool as soon as they are reduced; in files (NVMe) each
//     is written back and dropped from memory right after its reduction, and zeroed lazily, so
//     the step never holds every gradient shard in memory at once.
// The wire dtype is ShardOptions::reduce_dtype (fp32 accumulation inside the collective). With
// `in_place` (fp32 throughout) the fp32 local gradients are reduced where they are; otherwise
// they are rounded to the wire dtype first, and the reduced gradients are kept in it.
// Local gradients are charged as grads, wire copies as communication. A collective's failure is
// returned as its Status.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/shard/shard_context.h"
#include "engine/shard/value_transfer.h"

namespace accel::shard {

class GradReducer {
 public:
  virtual ~GradReducer() = default;

  // Allocates what is kept between steps (zero-filled).
  [[nodiscard]] virtual absl::Status Allocate() = 0;
  // Zeroes the kept gradients: the start of a step.
  [[nodiscard]] virtual absl::Status ZeroGrads();
  // Before micro-step m of accum: whether its gradients are reduced as backward produces them.
  void BeginMicroStep(int micro, int accum) {
    reducing_micro_step_ = ctx_.options().reduce_every_micro_step || micro == accum - 1;
  }
  // Where unit u's fp32 local gradient accumulates (padded_numel floats, zero at first use).
  [[nodiscard]] absl::StatusOr<float*> LocalGrads(int unit);
  // Backward has finished unit u's local gradient for this micro-step.
  [[nodiscard]] virtual absl::Status GradsReady(int unit) = 0;
  // After micro-step m's backward: the reductions due by now are complete.
  [[nodiscard]] virtual absl::Status EndMicroStep(int micro, int accum) = 0;
  // After the last micro-step: unit u's reduced gradient over its optimizer span (on the compute
  // side, in the wire dtype).
  virtual ValueRef ReducedOptimizerSpan(int unit) const = 0;

 protected:
  struct Unit {
    DeviceBlock local;    // fp32 padded_numel, while it accumulates (resident when in place)
    DeviceBlock reduced;  // wire dtype: the shard, or the padded unit at the boundary
    DeviceBlock wire;     // what a per-unit reduce-scatter reads and writes
  };
  GradReducer(ShardContext* ctx, bool in_place)
      : ctx_(*ctx), in_place_(in_place), wire_dtype_(ctx->options().reduce_dtype),
        wire_size_(DTypeSize(wire_dtype_)) {}

  ShardContext& ctx_;
  const bool in_place_;
  const DType wire_dtype_;
  const size_t wire_size_;
  std::vector<Unit> units_;
  bool reducing_micro_step_ = true;
};

// `collective_all_reduce`: all-reduce every unit (no_shard) rather than reduce-scatter (zero1).
std::unique_ptr<GradReducer> CreateBoundaryReducer(ShardContext* ctx, bool in_place,
                                                   bool collective_all_reduce);
// `replicate`: the group to all-reduce the reduced shard across (hybrid), or null.
std::unique_ptr<GradReducer> CreatePerUnitReducer(ShardContext* ctx, bool in_place,
                                                  comm::Communicator* replicate);

}  // namespace accel::shard
