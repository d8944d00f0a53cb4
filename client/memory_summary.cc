#include "client/memory_summary.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "client/event_format.h"
#include "nlohmann/json.hpp"

namespace accel::client {

namespace v1 = accel::v1;

std::array<int64_t, kNumMemoryPools> PoolPeaks(const v1::MemoryEvent& m) {
  std::array<int64_t, kNumMemoryPools> peaks{};
  peaks[static_cast<int>(MemoryPool::kDevice)] = m.device_peak();
  peaks[static_cast<int>(MemoryPool::kHost)] = m.host_peak();
  const nlohmann::json j = nlohmann::json::parse(m.ledger_json(), nullptr,
                                                 /*allow_exceptions=*/false);
  if (!j.is_object()) return peaks;  // no ledger (or a damaged one): the proto fields
  for (const auto& [key, pool] : j.items()) {
    const std::optional<MemoryPool> which = LedgerPoolKey(key);
    if (!which || !pool.is_object()) continue;
    const auto total = pool.find("total");
    if (total == pool.end() || !total->is_object()) continue;
    const auto peak = total->find("peak");
    if (peak == total->end() || !peak->is_number_integer()) continue;
    peaks[static_cast<int>(*which)] = peak->get<int64_t>();
  }
  return peaks;
}

void MemorySummary::Add(int rank, const v1::MemoryEvent& m) {
  const std::array<int64_t, kNumMemoryPools> peaks = PoolPeaks(m);
  for (int p = 0; p < kNumMemoryPools; ++p) peak_[p] = std::max(peak_[p], peaks[p]);
  if (rank >= 0) ranks_.insert(rank);
  ++records_;
  if (m.device_driver_total() > 0) {
    driver_used_ = std::max(driver_used_, m.device_driver_used());
    driver_total_ = std::max(driver_total_, m.device_driver_total());
  }
}

std::string MemorySummary::Text() const {
  if (empty()) return "";
  std::string out;
  for (int p = 0; p < kNumMemoryPools; ++p) {
    // compute is always shown (0 is news too); host and nvme once something used them.
    if (peak_[p] == 0 && static_cast<MemoryPool>(p) != MemoryPool::kDevice) continue;
    const std::string pool(MemoryPoolName(static_cast<MemoryPool>(p)));
    absl::StrAppend(&out, out.empty() ? "" : " · ", pool, " ", Bytes(peak_[p]));
  }
  if (driver_total_ > 0) {
    absl::StrAppend(&out, " · GPU in use ", Bytes(driver_used_), " of ", Bytes(driver_total_));
  }
  if (!ranks_.empty()) {
    absl::StrAppend(&out, " (", ranks(), ranks() == 1 ? " rank)" : " ranks)");
  }
  return out;
}

}  // namespace accel::client
