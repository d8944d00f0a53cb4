// ShardedModel's gather scheduling: which units to all-gather ahead of use (FSDP's
// forward_prefetch / backward_prefetch and DeepSpeed's stage-3 prefetch bucket), bounded by the
// in-flight count and the live-parameter cap, and which units stay gathered for reuse.
#include "engine/base/status_macros.h"
#include "engine/shard/sharded_model.h"

namespace accel::shard {

int ShardedModel::NextInBackward(int u) const {
  if (u == 0) return plan_.num_units() - 1 >= 1 ? plan_.num_units() - 1 : -1;
  return u >= 2 ? u - 1 : -1;  // block 0 is last; the root stays gathered
}

int64_t ShardedModel::LiveGatheredNumel(int except) const {
  int64_t live = 0;
  for (int v = 0; v < plan_.num_units(); ++v) {
    if (v == except) continue;
    if (units_[v].gathered || units_[v].gather) live += plan_.unit(v).padded_numel;
  }
  return live;
}

// Elements the model touches between unit u's forward and its backward: the later blocks'
// forward and their backward (the root stays gathered through the step).
int64_t ShardedModel::ReuseDistanceAfterForward(int u) const {
  int64_t distance = 0;
  for (int v = u + 1; v < plan_.num_units(); ++v) distance += 2 * plan_.unit(v).numel;
  return distance;
}

absl::Status ShardedModel::Prefetch(int u) {
  if (u < 0 || u >= plan_.num_units()) return absl::OkStatus();
  Unit& unit = units_[u];
  if (unit.gathered || unit.gather) return absl::OkStatus();
  // Under a DeepSpeed prefetch bucket the bucket bounds what is in flight, not a count.
  int inflight = 0;
  for (const Unit& other : units_) inflight += other.gather ? 1 : 0;
  if (plan_.options().prefetch_bucket_numel <= 0 &&
      inflight >= plan_.options().max_inflight_gathers) {
    return absl::OkStatus();
  }
  const int64_t cap = plan_.options().max_live_numel;
  if (cap > 0 && LiveGatheredNumel(-1) + plan_.unit(u).padded_numel > cap) {
    return absl::OkStatus();
  }
  return IssueGather(u);
}

int ShardedModel::NextInForward(int u) const { return u + 1 < plan_.num_units() ? u + 1 : -1; }

int64_t ShardedModel::InFlightGatherNumel() const {
  int64_t inflight = 0;
  for (int w = 0; w < plan_.num_units(); ++w) {
    if (units_[w].gather) inflight += plan_.unit(w).padded_numel;
  }
  return inflight;
}

// DeepSpeed: keep gathering the units that come next in the pass until a bucket's worth is in
// flight.
absl::Status ShardedModel::PrefetchBucket(int u, int (ShardedModel::*next)(int) const) {
  for (int v = (this->*next)(u); v >= 0; v = (this->*next)(v)) {
    if (InFlightGatherNumel() >= plan_.options().prefetch_bucket_numel) break;
    if (units_[v].gathered || units_[v].gather) continue;
    ACCEL_RETURN_IF_ERROR(Prefetch(v));
    if (!units_[v].gather) break;  // a cap stopped it: later units would not fit either
  }
  return absl::OkStatus();
}

absl::Status ShardedModel::PrefetchForward(int u) {
  const ShardOptions& o = plan_.options();
  if (o.prefetch_bucket_numel > 0) return PrefetchBucket(u, &ShardedModel::NextInForward);
  return o.forward_prefetch ? Prefetch(NextInForward(u)) : absl::OkStatus();
}

absl::Status ShardedModel::PrefetchBackward(int u) {
  const ShardOptions& o = plan_.options();
  if (o.prefetch_bucket_numel > 0) return PrefetchBucket(u, &ShardedModel::NextInBackward);
  return o.backward_prefetch == BackwardPrefetch::kBackwardPre ? Prefetch(NextInBackward(u))
                                                               : absl::OkStatus();
}

}  // namespace accel::shard
