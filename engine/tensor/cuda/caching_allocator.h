// CachingAllocator: device memory behind a size-class cache, so the training loop's repeated
// allocations of the same sizes cost a map lookup instead of cudaMalloc/cudaFree (which
// synchronise the device). No managed memory.
//
// Size classes: requests round up to a multiple of 512 bytes below 1 MiB, and above that to one
// of eight classes per power of two (at most 12.5% waste). A freed block goes back to the cache
// of its (stream, class) and is reused only by an allocation of the same class on the same
// stream, so stream order alone makes reuse safe. A block used on another stream as well must be
// freed only after that stream's work is ordered before the owning stream's later work (an
// event the owning stream waits on), as with PyTorch's allocator without record_stream.
//
// When the raw allocator fails, every cached block is released and the request retried once;
// after that the error is ResourceExhausted naming the request, the category and the counters.
//
// Accounting: each live block charges its class size (what it really pins) to the ledger under
// (MemoryPool::kDevice, its category) until freed. Cached free blocks are not in the ledger;
// they appear in stats().reserved_bytes, which is everything obtained from the raw allocator
// and not yet returned. Thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/base/memory_ledger.h"

namespace accel::cuda {

// Where the bytes come from: cudaMalloc in production (CudaRawAllocator), a fake in tests.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  // ResourceExhausted when out of memory; other errors as CudaStatus makes them.
  [[nodiscard]] virtual absl::StatusOr<void*> Malloc(int64_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
};

// cudaMalloc / cudaFree on `device` (made current for each call).
std::unique_ptr<RawAllocator> CudaRawAllocator(int device);

struct AllocatorStats {
  int64_t allocated_bytes = 0;       // live blocks, class sizes
  int64_t reserved_bytes = 0;        // live + cached, i.e. held from the raw allocator
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t raw_mallocs = 0;           // calls that reached the raw allocator
  int64_t cache_hits = 0;
  int64_t cache_flushes = 0;         // out-of-memory retries that released the cache
};

class CachingAllocator {
 public:
  // Does not own `ledger` (may be null: no accounting); owns `raw`.
  CachingAllocator(std::unique_ptr<RawAllocator> raw, MemoryLedger* ledger);
  // Returns cached blocks to the raw allocator. Live blocks must have been freed.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // The class a request of `bytes` rounds up to (bytes > 0).
  static int64_t SizeClass(int64_t bytes);

  // A block of at least `bytes` (> 0; 0 gives nullptr and OK) for use on `stream`, an opaque
  // key (a cudaStream_t). InvalidArgument for negative sizes.
  [[nodiscard]] absl::StatusOr<void*> Allocate(int64_t bytes, MemoryCategory category,
                                               void* stream = nullptr);
  // Returns a block from Allocate to the cache. Null is ignored; an unknown pointer is a bug
  // (InvalidArgument, nothing changes).
  [[nodiscard]] absl::Status Free(void* ptr);
  // Releases every cached (free) block to the raw allocator.
  void EmptyCache();

  AllocatorStats stats() const;

 private:
  struct Live {
    int64_t size;
    MemoryCategory category;
    void* stream;
  };
  using CacheKey = std::pair<void*, int64_t>;  // (stream, class size)

  void EmptyCacheLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RaisePeaksLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<RawAllocator> raw_;
  MemoryLedger* const ledger_;
  mutable absl::Mutex mu_;
  std::map<CacheKey, std::vector<void*>> cache_ ABSL_GUARDED_BY(mu_);
  std::map<void*, Live> live_ ABSL_GUARDED_BY(mu_);
  AllocatorStats stats_ ABSL_GUARDED_BY(mu_);
};

// One block owned for a scope; frees itself (to the cache) on destruction. Movable.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  [[nodiscard]] static absl::StatusOr<DeviceBuffer> Create(CachingAllocator* allocator,
                                                           int64_t bytes, MemoryCategory category,
                                                           void* stream = nullptr);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  int64_t bytes() const { return bytes_; }

 private:
  void Reset();
  CachingAllocator* allocator_ = nullptr;
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

}  // namespace accel::cuda
