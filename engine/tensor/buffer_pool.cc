#include "engine/tensor/buffer_pool.h"

namespace accel {

absl::StatusOr<Buffer> BufferPool::Acquire(size_t bytes, MemoryCategory category, bool zero) {
  auto it = free_.find(bytes);
  if (it == free_.end()) return Buffer::Allocate(bytes, pool_, category, ledger_);
  Buffer b = std::move(it->second);
  free_.erase(it);
  b.Recategorize(category);
  if (zero) b.Zero();
  return b;
}

void BufferPool::Release(Buffer buffer) {
  if (buffer.empty()) return;
  buffer.Recategorize(MemoryCategory::kOther);
  const size_t bytes = buffer.bytes();
  free_.emplace(bytes, std::move(buffer));
}

size_t BufferPool::cached_bytes() const {
  size_t total = 0;
  for (const auto& [bytes, b] : free_) total += bytes;
  return total;
}

}  // namespace accel
