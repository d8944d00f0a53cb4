// MemoryLedger: how many bytes a rank holds, by pool (where the bytes live) and by category (what
// they are for), current and peak. Every Buffer (engine/tensor/buffer.h) charges one ledger for
// its lifetime, so memory statistics are exact, not sampled.
//
// Pools: "compute" (MemoryPool::kDevice: where the kernels read and write — the GPU's memory on a
// cuda rank, RAM on a cpu rank), "host" and "nvme". On a machine without a GPU the compute pool is
// still accounted apart from "host", so offload shows up in the statistics. Until issue 17 the
// compute pool was named "device"; readers of stored ledger JSON accept both keys
// (LedgerPoolKey). Thread-safe; all counters are atomics.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace accel {

enum class MemoryPool : int { kDevice = 0, kHost = 1, kNvme = 2 };
inline constexpr int kNumMemoryPools = 3;

enum class MemoryCategory : int {
  kParams = 0,
  kGrads = 1,
  kOptimizerState = 2,
  kActivations = 3,
  kCommunication = 4,
  kOther = 5,
};
inline constexpr int kNumMemoryCategories = 6;

std::string_view MemoryPoolName(MemoryPool pool);  // "compute" | "host" | "nvme"
// The pool a ledger JSON key names: MemoryPoolName's names and the old "device" (the compute
// pool in records written before it was renamed); nullopt for any other key.
std::optional<MemoryPool> LedgerPoolKey(std::string_view key);
std::string_view MemoryCategoryName(MemoryCategory category);

struct MemoryCounts {
  int64_t current = 0;
  int64_t peak = 0;
};

class MemoryLedger {
 public:
  MemoryLedger() = default;
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;

  void Charge(MemoryPool pool, MemoryCategory category, int64_t bytes);
  void Release(MemoryPool pool, MemoryCategory category, int64_t bytes);

  MemoryCounts Get(MemoryPool pool, MemoryCategory category) const;
  // All categories of one pool together; its peak is the peak of the sum, not a sum of peaks.
  MemoryCounts PoolTotal(MemoryPool pool) const;
  // Forgets peaks (sets them to the current values), e.g. after model setup.
  void ResetPeaks();
  // One JSON object: {"compute":{"params":{"current":..,"peak":..},...,"total":{..}},...}.
  std::string ToJson() const;

  // The process's default ledger; ranks run as threads in tests get their own.
  static MemoryLedger* Default();

 private:
  static void RaisePeak(std::atomic<int64_t>& peak, int64_t value);
  struct Counter {
    std::atomic<int64_t> current{0};
    std::atomic<int64_t> peak{0};
  };
  std::array<std::array<Counter, kNumMemoryCategories>, kNumMemoryPools> counters_;
  std::array<Counter, kNumMemoryPools> pool_totals_;
};

}  // namespace accel
