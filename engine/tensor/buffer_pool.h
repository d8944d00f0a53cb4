// BufferPool: a cache of Buffers by exact size, so the buffers a step allocates and frees over and
// over (gathered unit parameters, unit gradients) keep their memory instead of going back to the
// OS each time (on CPU a fresh 50 MB block costs page faults and zeroing: measured 300 ms of a
// 550 ms step for the small GPT-2 shape under shard_grad_op).
//
// Accounting stays honest: a buffer handed out is charged to its category; a cached one is
// charged as kOther in the same memory pool (PyTorch's "reserved but not allocated"), so
// model-state bytes (params, grads, optimizer state) never include the cache.
// Units of one model reuse one another's buffers because equal units have equal sizes.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <map>

#include "absl/status/statusor.h"
#include "engine/tensor/buffer.h"

namespace accel {

class BufferPool {
 public:
  BufferPool(MemoryPool pool, MemoryLedger* ledger) : pool_(pool), ledger_(ledger) {}

  // A buffer of exactly `bytes`, charged to `category`; zero-filled when `zero` (fresh buffers
  // always are).
  [[nodiscard]] absl::StatusOr<Buffer> Acquire(size_t bytes, MemoryCategory category, bool zero);
  // Keeps the memory for a later Acquire of the same size. Empty buffers are dropped.
  void Release(Buffer buffer);
  // Frees every cached buffer.
  void Trim() { free_.clear(); }
  size_t cached_bytes() const;

 private:
  MemoryPool pool_;
  MemoryLedger* ledger_;
  std::multimap<size_t, Buffer> free_;
};

}  // namespace accel
