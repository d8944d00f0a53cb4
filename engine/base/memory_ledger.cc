#include "engine/base/memory_ledger.h"

#include "absl/strings/str_cat.h"

namespace accel {

std::string_view MemoryPoolName(MemoryPool pool) {
  switch (pool) {
    case MemoryPool::kDevice: return "compute";
    case MemoryPool::kHost: return "host";
    case MemoryPool::kNvme: return "nvme";
  }
  return "unknown";
}

std::optional<MemoryPool> LedgerPoolKey(std::string_view key) {
  if (key == "device") return MemoryPool::kDevice;  // the compute pool's name until issue 17
  for (int p = 0; p < kNumMemoryPools; ++p) {
    if (key == MemoryPoolName(static_cast<MemoryPool>(p))) return static_cast<MemoryPool>(p);
  }
  return std::nullopt;
}

std::string_view MemoryCategoryName(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParams: return "params";
    case MemoryCategory::kGrads: return "grads";
    case MemoryCategory::kOptimizerState: return "optimizer_state";
    case MemoryCategory::kActivations: return "activations";
    case MemoryCategory::kCommunication: return "communication";
    case MemoryCategory::kOther: return "other";
  }
  return "unknown";
}

void MemoryLedger::RaisePeak(std::atomic<int64_t>& peak, int64_t value) {
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

void MemoryLedger::Charge(MemoryPool pool, MemoryCategory category, int64_t bytes) {
  Counter& c = counters_[static_cast<int>(pool)][static_cast<int>(category)];
  RaisePeak(c.peak, c.current.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  Counter& t = pool_totals_[static_cast<int>(pool)];
  RaisePeak(t.peak, t.current.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void MemoryLedger::Release(MemoryPool pool, MemoryCategory category, int64_t bytes) {
  counters_[static_cast<int>(pool)][static_cast<int>(category)].current.fetch_sub(
      bytes, std::memory_order_relaxed);
  pool_totals_[static_cast<int>(pool)].current.fetch_sub(bytes, std::memory_order_relaxed);
}

MemoryCounts MemoryLedger::Get(MemoryPool pool, MemoryCategory category) const {
  const Counter& c = counters_[static_cast<int>(pool)][static_cast<int>(category)];
  return {c.current.load(std::memory_order_relaxed), c.peak.load(std::memory_order_relaxed)};
}

MemoryCounts MemoryLedger::PoolTotal(MemoryPool pool) const {
  const Counter& t = pool_totals_[static_cast<int>(pool)];
  return {t.current.load(std::memory_order_relaxed), t.peak.load(std::memory_order_relaxed)};
}

void MemoryLedger::ResetPeaks() {
  for (auto& pool : counters_) {
    for (Counter& c : pool) c.peak.store(c.current.load());
  }
  for (Counter& t : pool_totals_) t.peak.store(t.current.load());
}

std::string MemoryLedger::ToJson() const {
  auto counts = [](MemoryCounts c) {
    return absl::StrCat("{\"current\":", c.current, ",\"peak\":", c.peak, "}");
  };
  std::string out = "{";
  for (int p = 0; p < kNumMemoryPools; ++p) {
    auto pool = static_cast<MemoryPool>(p);
    absl::StrAppend(&out, p ? "," : "", "\"", std::string(MemoryPoolName(pool)), "\":{");
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      auto cat = static_cast<MemoryCategory>(c);
      absl::StrAppend(&out, "\"", std::string(MemoryCategoryName(cat)), "\":", counts(Get(pool, cat)),
                      ",");
    }
    absl::StrAppend(&out, "\"total\":", counts(PoolTotal(pool)), "}");
  }
  out += "}";
  return out;
}

MemoryLedger* MemoryLedger::Default() {
  static MemoryLedger* ledger = new MemoryLedger();
  return ledger;
}

}  // namespace accel
