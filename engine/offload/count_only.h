// Count-only regions (storage.h, Mode::kCountOnly), shared by both storages: charges and
// releases the ledger as a real Allocate/Free would, with addresses that are never touched.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "engine/base/memory_ledger.h"

namespace accel::offload::internal {

class CountOnlyRegions {
 public:
  CountOnlyRegions(MemoryLedger* ledger, MemoryPool pool) : ledger_(ledger), pool_(pool) {}
  ~CountOnlyRegions() {
    for (const auto& [at, r] : regions_) ledger_->Release(pool_, r.category, r.bytes);
  }
  void* Allocate(size_t bytes, MemoryCategory category) {
    if (bytes == 0) return nullptr;
    // Distinct, page-aligned, never dereferenced: one past the previous region, from 1 MiB.
    const uintptr_t at = next_;
    next_ += (bytes + 4095) / 4096 * 4096 + 4096;
    regions_.emplace(at, Region{static_cast<int64_t>(bytes), category});
    ledger_->Charge(pool_, category, static_cast<int64_t>(bytes));
    return reinterpret_cast<void*>(at);
  }
  bool Free(void* data) {
    auto it = regions_.find(reinterpret_cast<uintptr_t>(data));
    if (it == regions_.end()) return false;
    ledger_->Release(pool_, it->second.category, it->second.bytes);
    regions_.erase(it);
    return true;
  }

 private:
  struct Region {
    int64_t bytes;
    MemoryCategory category;
  };
  MemoryLedger* ledger_;
  MemoryPool pool_;
  uintptr_t next_ = uintptr_t{1} << 20;
  absl::flat_hash_map<uintptr_t, Region> regions_;
};

}  // namespace accel::offload::internal
