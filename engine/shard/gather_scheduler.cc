#include "engine/shard/gather_scheduler.h"

#include "engine/base/status_macros.h"

namespace accel::shard {

using model::Pass;

int GatherScheduler::NextInForward(int u) const { return u + 1 < plan_->num_units() ? u + 1 : -1; }

int GatherScheduler::NextInBackward(int u) const {
  if (u == 0) return plan_->num_units() - 1 >= 1 ? plan_->num_units() - 1 : -1;
  return u >= 2 ? u - 1 : -1;  // block 0 is last; the root stays gathered
}

int GatherScheduler::Next(int u, Pass pass) const {
  return pass == Pass::kForward ? NextInForward(u) : NextInBackward(u);
}

int64_t GatherScheduler::LiveNumel() const {
  int64_t live = 0;
  for (int v = 0; v < plan_->num_units(); ++v) {
    if (target_->is_gathered(v) || target_->is_in_flight(v)) live += plan_->unit(v).padded_numel;
  }
  return live;
}

int64_t GatherScheduler::InFlightNumel() const {
  int64_t inflight = 0;
  for (int v = 0; v < plan_->num_units(); ++v) {
    if (target_->is_in_flight(v)) inflight += plan_->unit(v).padded_numel;
  }
  return inflight;
}

bool GatherScheduler::KeepForReuse(int u) const {
  const int64_t reuse = plan_->options().max_reuse_distance;
  if (reuse <= 0) return false;
  // Elements the model touches between u's forward and its backward: the later blocks'
  // forward and their backward (the root stays gathered through the step).
  int64_t distance = 0;
  for (int v = u + 1; v < plan_->num_units(); ++v) distance += 2 * plan_->unit(v).numel;
  return distance <= reuse;
}

absl::Status GatherScheduler::Prefetch(int u) {
  if (u < 0 || u >= plan_->num_units()) return absl::OkStatus();
  if (target_->is_gathered(u) || target_->is_in_flight(u)) return absl::OkStatus();
  const ShardOptions& o = plan_->options();
  // Under a DeepSpeed prefetch bucket the bucket bounds what is in flight, not a count.
  int inflight = 0;
  for (int v = 0; v < plan_->num_units(); ++v) inflight += target_->is_in_flight(v) ? 1 : 0;
  if (o.prefetch_bucket_numel <= 0 && inflight >= o.max_inflight_gathers) {
    return absl::OkStatus();
  }
  if (o.max_live_numel > 0 && LiveNumel() + plan_->unit(u).padded_numel > o.max_live_numel) {
    return absl::OkStatus();
  }
  return target_->IssueGather(u);
}

absl::Status GatherScheduler::PrefetchBucket(int u, Pass pass) {
  for (int v = Next(u, pass); v >= 0; v = Next(v, pass)) {
    if (InFlightNumel() >= plan_->options().prefetch_bucket_numel) break;
    if (target_->is_gathered(v) || target_->is_in_flight(v)) continue;
    ACCEL_RETURN_IF_ERROR(Prefetch(v));
    if (!target_->is_in_flight(v)) break;  // a cap stopped it: later units would not fit either
  }
  return absl::OkStatus();
}

absl::Status GatherScheduler::BeforeUse(int u, Pass pass) {
  const ShardOptions& o = plan_->options();
  if (o.prefetch_bucket_numel > 0) return PrefetchBucket(u, pass);
  const bool prefetch = pass == Pass::kForward
                            ? o.forward_prefetch
                            : o.backward_prefetch == BackwardPrefetch::kBackwardPre;
  return prefetch ? Prefetch(Next(u, pass)) : absl::OkStatus();
}

absl::Status GatherScheduler::AfterRelease(int u, Pass pass) {
  if (pass != Pass::kBackward ||
      plan_->options().backward_prefetch != BackwardPrefetch::kBackwardPost) {
    return absl::OkStatus();
  }
  return Prefetch(NextInBackward(u));
}

}  // namespace accel::shard
