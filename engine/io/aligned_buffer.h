// AlignedBuffer: an owned, page-aligned (4096-byte) host buffer for direct file I/O, optionally
// locked in RAM (mlock, DeepSpeed's `pin_memory`), optionally charged to a MemoryLedger.
//
// Why page alignment: O_DIRECT needs the buffer address, the file offset and the length
// aligned to the file system's direct-I/O alignment (512 or 4096; see
// shared/reference/zero_infinity.md §5.1). 4096 satisfies every value seen in practice, so one
// buffer works on any BlockFile. The size is padded up to a multiple of 4096 so the tail of a
// transfer is aligned too; `size()` is the padded size, `requested_bytes()` what was asked for.
// The padding is zero-filled, so a padded write never puts stale heap bytes on disk.
//
// Locking never fails the allocation: when mlock is refused (RLIMIT_MEMLOCK, no
// CAP_IPC_LOCK) the buffer stays unlocked and `lock_reason()` says why. Locked or not, the
// pages are ordinary anonymous memory for cgroup accounting (§5.3).
//
// Move-only; not thread-safe (one owner). The ledger, when given, must outlive the buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/base/memory_ledger.h"

namespace accel::io {

inline constexpr size_t kPageAlignment = 4096;

// `bytes` rounded up to a multiple of `alignment` (a power of two or any positive value).
constexpr int64_t PadTo(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

struct AlignedBufferOptions {
  // mlock the pages (DeepSpeed `pin_memory`). Degrades to unlocked, never to an error.
  bool lock = false;
  // nullptr: the buffer is charged to no ledger.
  MemoryLedger* ledger = nullptr;
  MemoryPool pool = MemoryPool::kHost;
  MemoryCategory category = MemoryCategory::kOther;
};

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Zero-filled. ResourceExhausted if the memory cannot be allocated. bytes == 0 gives an
  // empty buffer.
  [[nodiscard]] static absl::StatusOr<AlignedBuffer> Allocate(
      size_t bytes, const AlignedBufferOptions& options = {});
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  // Padded size (a multiple of kPageAlignment); the whole range may be used for I/O.
  size_t size() const { return size_; }
  size_t requested_bytes() const { return requested_; }
  bool empty() const { return size_ == 0; }
  bool locked() const { return locked_; }
  // Empty when locked or when locking was not asked for; otherwise why mlock failed.
  const std::string& lock_reason() const { return lock_reason_; }

  template <typename T>
  T* as() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }

  // Unlocks, frees, and returns the charge to the ledger.
  void Reset();

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  size_t requested_ = 0;
  bool locked_ = false;
  std::string lock_reason_;
  MemoryLedger* ledger_ = nullptr;
  MemoryPool pool_ = MemoryPool::kHost;
  MemoryCategory category_ = MemoryCategory::kOther;
};

}  // namespace accel::io
