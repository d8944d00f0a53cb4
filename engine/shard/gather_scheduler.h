// GatherScheduler: which units of sharded parameters to all-gather ahead of their use — FSDP's
// forward_prefetch / backward_prefetch (BACKWARD_PRE, BACKWARD_POST) and DeepSpeed's stage-3
// prefetch bucket — bounded by the count of gathers in flight (max_inflight_gathers) and the
// live-parameter cap (max_live_numel), and which blocks stay gathered from forward to backward
// (max_reuse_distance). Nothing it decides changes a result, only memory and traffic.
//
// The passes (model/param_access.h): forward visits units 0, 1, ..., n-1; backward visits the
// root (the head), then the blocks from the last to the first; the root stays gathered through
// the step, so it is never prefetched in backward.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "engine/model/param_access.h"
#include "engine/shard/shard_plan.h"

namespace accel::shard {

// What the scheduler sees of the sharded parameters and how it asks for a gather.
class GatherTarget {
 public:
  virtual ~GatherTarget() = default;
  virtual bool is_gathered(int unit) const = 0;   // full parameters present
  virtual bool is_in_flight(int unit) const = 0;  // an all-gather issued, not yet awaited
  [[nodiscard]] virtual absl::Status IssueGather(int unit) = 0;
};

class GatherScheduler {
 public:
  // `plan` (its units and ShardOptions' prefetch settings) and `target` must outlive it.
  GatherScheduler(const ShardPlan* plan, GatherTarget* target) : plan_(plan), target_(target) {}

  // Unit u is about to be used in `pass` (it is gathered): issues the prefetches due now.
  [[nodiscard]] absl::Status BeforeUse(int unit, model::Pass pass);
  // Unit u was released after `pass` (BACKWARD_POST prefetches here).
  [[nodiscard]] absl::Status AfterRelease(int unit, model::Pass pass);
  // Whether block u, released after forward, is needed again within max_reuse_distance
  // elements of model traffic (2·Σ of the later blocks' sizes) and so stays gathered.
  bool KeepForReuse(int unit) const;

  int NextInForward(int unit) const;   // -1 after the last
  int NextInBackward(int unit) const;  // -1 after block 0

 private:
  // Gathers unit u unless it is there or in flight, or a bound says no.
  absl::Status Prefetch(int unit);
  // DeepSpeed: keeps gathering the units that come next until a bucket's worth is in flight.
  absl::Status PrefetchBucket(int unit, model::Pass pass);
  int Next(int unit, model::Pass pass) const;
  int64_t LiveNumel() const;      // gathered or in flight, padded elements
  int64_t InFlightNumel() const;  // in flight, padded elements

  const ShardPlan* plan_;
  GatherTarget* target_;
};

}  // namespace accel::shard
