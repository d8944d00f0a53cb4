// The memory records of a job's ranks folded into one line: the peak of each pool over the ranks
// that reported, e.g. "compute 22.1 MiB · host 3.0 MiB (2 ranks)". accelctl watch shows it in its
// block (a TTY) and once per recorded step (plain output) instead of one line per rank.
//
// Pools are read from the record's ledger_json (compute, host, nvme); records stored before the
// compute pool was renamed call it "device" and read the same (LedgerPoolKey). A record without
// ledger JSON (or with JSON that does not parse) falls back to its device_peak / host_peak
// fields. host and nvme are left out while their peak is 0 (nvme: no NVMe offload). On a cuda
// rank the compute pool is the GPU's memory; the driver's view of the GPU (used of total, the
// largest over the ranks) is added as "GPU in use ...".
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>

#include "accel/v1/coordinator.grpc.pb.h"
#include "engine/base/memory_ledger.h"

namespace accel::client {

// Each pool's peak bytes in one memory record, indexed by MemoryPool.
std::array<int64_t, kNumMemoryPools> PoolPeaks(const accel::v1::MemoryEvent& m);

class MemorySummary {
 public:
  // Folds in one rank's record (rank < 0: a job-wide record, counted as no rank).
  void Add(int rank, const accel::v1::MemoryEvent& m);
  bool empty() const { return records_ == 0; }
  int ranks() const { return static_cast<int>(ranks_.size()); }
  // "compute 22.1 MiB · host 3.0 MiB (2 ranks)"; "" when empty.
  std::string Text() const;

 private:
  std::array<int64_t, kNumMemoryPools> peak_{};
  std::set<int> ranks_;
  int records_ = 0;
  int64_t driver_used_ = 0;
  int64_t driver_total_ = 0;
};

}  // namespace accel::client
