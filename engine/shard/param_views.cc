// ShardedModel::ParamViews — FSDP's use_orig_params: each named parameter as a view into the
// flat storage this rank updates, so code can address parameters by name under any strategy.
#include <algorithm>

#include "engine/shard/sharded_model.h"

namespace accel::shard {

std::vector<ParamView> ShardedModel::ParamViews() {
  std::vector<ParamView> views;
  const std::vector<OwnedRange> owned = OwnedRanges();
  for (const LayoutEntry& e : ctx().layout().flat().entries()) {
    ParamView v;
    v.entry = &e;
    const int64_t first = e.offset, last = e.offset + e.numel;
    // Owned ranges are sorted and disjoint; a parameter lies in one unit, so at most one
    // range intersects it.
    for (const OwnedRange& r : owned) {
      const int64_t from = std::max(first, r.flat_begin), to = std::min(last, r.flat_end);
      if (from >= to) continue;
      v.begin = from - first;
      v.end = to - first;
      if (r.params16 != nullptr) {
        v.data16 = r.params16 + (from - r.flat_begin);
      } else {
        v.data = r.params + (from - r.flat_begin);
      }
      break;
    }
    views.push_back(v);
  }
  return views;
}

}  // namespace accel::shard
