// Buffer: an owned, 64-byte aligned block of memory that charges a MemoryLedger for its whole
// lifetime (by pool and category). Zero-initialised. Move-only.
//
// Alignment matters: oneDNN's bf16 kernels run 1.4-3.5x slower on operands that are only
// 16-byte aligned (what malloc gives), see shared/reference/gemm.md §6.
//
// Pools: kHost is ordinary memory; kDevice (the compute pool) on a CPU-only build is also host
// memory but is accounted apart, so offload is visible in the statistics; CUDA device buffers
// come with the GPU path. Not thread-safe (one owner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"
#include "engine/tensor/dtype.h"

namespace accel {

class Buffer {
 public:
  static constexpr size_t kAlignment = 64;

  Buffer() = default;
  // ResourceExhausted if the allocation fails. ledger == nullptr means MemoryLedger::Default().
  static absl::StatusOr<Buffer> Allocate(size_t bytes, MemoryPool pool, MemoryCategory category,
                                         MemoryLedger* ledger = nullptr);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  MemoryPool pool() const { return pool_; }
  MemoryCategory category() const { return category_; }

  template <typename T>
  T* as() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }
  template <typename T>
  std::span<T> span() {
    return {static_cast<T*>(data_), bytes_ / sizeof(T)};
  }
  template <typename T>
  std::span<const T> span() const {
    return {static_cast<const T*>(data_), bytes_ / sizeof(T)};
  }

  void Zero();
  // Moves this buffer's charge to another category (same pool, same ledger).
  void Recategorize(MemoryCategory category);
  // Frees the memory and returns the charge to the ledger.
  void Reset();

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  MemoryPool pool_ = MemoryPool::kHost;
  MemoryCategory category_ = MemoryCategory::kOther;
  MemoryLedger* ledger_ = nullptr;
};

// A typed allocation helper: n elements of float.
absl::StatusOr<Buffer> AllocateFloats(size_t n, MemoryPool pool, MemoryCategory category,
                                      MemoryLedger* ledger = nullptr);

}  // namespace accel
